import { describe, expect, it } from 'vitest';
import { cgroupOfProcess, placeFromInfo, readingFromCriStats } from '../../src/runtime/cri/readings.js';
import { codec, ContainerStatsResponse, type ContainerStatsInfo } from '../../src/runtime/cri/messages.js';

describe('where a CRI runtime put a container', () => {
  const v1 = '12:pids:/k8s.io/abc\n4:cpu,cpuacct:/k8s.io/abc\n1:name=systemd:/k8s.io/abc\n';
  const v2 = '0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope\n';

  it('reads the cgroup from the process itself, for either cgroup version and any driver', () => {
    expect(cgroupOfProcess(v1, 1)).toBe('k8s.io/abc');
    expect(cgroupOfProcess(v2, 2)).toBe('kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope');
    expect(cgroupOfProcess(v1, 2)).toBeUndefined();
    expect(cgroupOfProcess(undefined, 1)).toBeUndefined();
  });

  it('never reads outside the hierarchy, whatever the text says', () => {
    expect(cgroupOfProcess('4:cpuacct:/../../etc\n', 1)).toBeUndefined();
    expect(cgroupOfProcess('0::relative/path\n', 2)).toBeUndefined();
  });

  it('takes the pid from the verbose info and the cgroup from /proc/<pid>/cgroup', () => {
    const files: Record<string, string> = { '/proc/4242/cgroup': v1 };
    const read = (p: string): string | undefined => files[p];
    expect(placeFromInfo({ info: JSON.stringify({ pid: 4242, runtimeSpec: {} }) }, 1, read)).toEqual({ rel: 'k8s.io/abc', pid: 4242 });
    // A stopped container (pid 0), a runtime that says something else, a pid that is not one: no place.
    expect(placeFromInfo({ info: JSON.stringify({ pid: 0 }) }, 1, read)).toBeUndefined();
    expect(placeFromInfo({ info: 'not json' }, 1, read)).toBeUndefined();
    expect(placeFromInfo({ info: JSON.stringify({ pid: '4242/../1' }) }, 1, read)).toBeUndefined();
    expect(placeFromInfo({}, 1, read)).toBeUndefined();
  });
});

describe("the runtime's ContainerStats as a reading", () => {
  it('decodes the published field numbers and keeps what the runtime said', () => {
    const c = codec<ContainerStatsInfo, { stats: ContainerStatsInfo | undefined }>(ContainerStatsResponse);
    const stats = {
      cpu: { timestamp: 1_700_000_000_000_000_000n, usageCoreNanoSeconds: { value: 5_000_000_000n }, usageNanoCores: { value: 250_000_000n } },
      memory: {
        timestamp: 1n,
        workingSetBytes: { value: 41_000_000n },
        availableBytes: undefined,
        usageBytes: { value: 50_000_000n },
        rssBytes: { value: 1000n },
        pageFaults: { value: 7n },
        majorPageFaults: { value: 1n },
      },
    };
    const wire = codec<{ stats: typeof stats }, never>(ContainerStatsResponse).serialize({ stats });
    const back = c.deserialize(wire).stats!;
    const r = readingFromCriStats(back)!;
    expect(r).toMatchObject({
      source: 'engine',
      cpu: { usageNs: 5e9 },
      memory: { workingSetBytes: 41e6, usageBytes: 50e6, rssBytes: 1000, pageFaults: 7, majorPageFaults: 1 },
    });
    expect(r.time).toBe(new Date(1_700_000_000_000).toISOString());
    expect(readingFromCriStats({})).toBeUndefined();
  });
});
