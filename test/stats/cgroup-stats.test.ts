import { describe, expect, it } from 'vitest';
import { recorded, tree } from './cgroup-trees.js';
import { netDev, readCgroup } from '../../src/runtime/cgroup-stats.js';
import { cadvisorMetrics } from '../../src/stats/container-metrics.js';
import { cpuOf, memoryOf } from '../../src/stats/summary.js';

// Readings from cgroup trees recorded from real kernels: v1 from a container on this machine,
// v2 from Linux 6.1 under QEMU (this machine has no unified hierarchy), laid out as Docker's
// systemd driver lays it: scripts/record-cgroup-v2/record.sh made those two files.

const ID = 'c0ffee';
const SANDBOX = 'bada55';

const V1 = recorded('v1-docker-cgroupfs.txt', { ID });
/** The same two containers a second apart: the app burned CPU between them and started a child. */
const V2 = recorded('v2-docker-systemd-1.txt', { APPID: ID, SANDBOXID: SANDBOX });
const V2_LATER = recorded('v2-docker-systemd-2.txt', { APPID: ID, SANDBOXID: SANDBOX });

const at = new Date('2026-12-01T10:00:00.000Z');

describe('readings from cgroupfs', () => {
  it('cgroup v1, cgroupfs driver: CPU in ns (user/system from ticks), memory with the working set the kubelet counts, pids', () => {
    const s = readCgroup({ version: 1, driver: 'cgroupfs', root: '/sys/fs/cgroup' }, ID, tree(V1), at);
    expect(s).toMatchObject({
      time: '2026-12-01T10:00:00.000Z',
      source: 'cgroup',
      cpu: { usageNs: 412135245, userNs: 310_000_000, systemNs: 90_000_000 },
      memory: { usageBytes: 21471232, limitBytes: 268435456 },
      processes: 1,
    });
    // 20 MB written to a file: page cache, mostly inactive, so out of the working set.
    expect(memoryOf(s!)).toMatchObject({ usageBytes: 21471232, workingSetBytes: 21471232 - 19570688, rssBytes: 53248, pageFaults: 1209, majorPageFaults: 1 });
  });

  it('cgroup v2, systemd driver: the same figures from cpu.stat, memory.current and memory.stat', () => {
    const layout = { version: 2, driver: 'systemd', root: '/sys/fs/cgroup' } as const;
    const s = readCgroup(layout, ID, tree(V2), at);
    expect(s).toMatchObject({
      source: 'cgroup',
      cpu: { usageNs: 7_474_695_000, userNs: 4_193_893_000, systemNs: 3_280_802_000 },
      memory: { usageBytes: 15409152, limitBytes: 67108864 },
      processes: 1,
    });
    // 8 MB held by the shell (anon) and 6 MB of a file read back (inactive page cache: not working set).
    expect(memoryOf(s!)).toMatchObject({ usageBytes: 15409152, workingSetBytes: 15409152 - 6291456, rssBytes: 8122368, pageFaults: 4402, majorPageFaults: 0 });
    // The sandbox has no limit: memory.max says "max", which is no number.
    const sb = readCgroup(layout, SANDBOX, tree(V2), at);
    expect(sb?.memory).toMatchObject({ usageBytes: 90112 });
    expect(sb?.memory.limitBytes).toBeUndefined();
    const later = readCgroup(layout, ID, tree(V2_LATER), new Date(at.getTime() + 2000));
    expect(later?.processes).toBe(2);
    // 3.1 s of CPU between the two readings, 2 s apart by their read times: 1.55 cores.
    expect(cpuOf(later!, s!).usageNanoCores).toBe(Math.round((10_572_222_000 - 7_474_695_000) / 2));
  });

  it('cgroup v2, cgroupfs driver (docker/<id>) and Podman (machine.slice/libpod-<id>.scope) read the same files', () => {
    const moved = (to: string): Record<string, string> =>
      Object.fromEntries(Object.entries(V2).map(([k, v]) => [k.replace(`system.slice/docker-${ID}.scope`, to), v]));
    expect(readCgroup({ version: 2, driver: 'cgroupfs', root: '/sys/fs/cgroup' }, ID, tree(moved(`docker/${ID}`)), at)?.memory.usageBytes).toBe(15409152);
    expect(
      readCgroup({ version: 2, driver: 'systemd', root: '/sys/fs/cgroup' }, ID, tree(moved(`machine.slice/libpod-${ID}.scope`)), at)?.memory.usageBytes,
    ).toBe(15409152);
  });

  it('finds nothing where there is no cgroup (the caller asks the engine)', () => {
    expect(readCgroup({ version: 1, driver: 'cgroupfs', root: '/sys/fs/cgroup' }, ID, tree(V2), at)).toBeUndefined();
    expect(readCgroup({ version: 2, driver: 'cgroupfs', root: '/sys/fs/cgroup' }, ID, tree(V1), at)).toBeUndefined();
    expect(readCgroup({ version: 2, driver: 'systemd', root: '/sys/fs/cgroup' }, 'other', tree(V2), at)).toBeUndefined();
  });

  it('the recorded v2 pair through /metrics/cadvisor: the counters, the working set, the limit and no limit', () => {
    const layout = { version: 2, driver: 'systemd', root: '/sys/fs/cgroup' } as const;
    const pod = { name: 'rec', namespace: 'v2', uid: 'u-v2' };
    const text = cadvisorMetrics(
      [
        { id: SANDBOX, name: 'POD', type: 'sandbox', pod, image: 'pause', engineName: 'sb', stats: readCgroup(layout, SANDBOX, tree(V2_LATER), at)! },
        {
          id: ID,
          name: 'app',
          type: 'app',
          pod,
          image: 'busybox',
          engineName: 'app',
          stats: readCgroup(layout, ID, tree(V2_LATER), at)!,
          previous: readCgroup(layout, ID, tree(V2), at)!,
        },
      ],
      { cgroupOf: (id) => `/system.slice/docker-${id}.scope` },
    );
    const app = `{container="app",id="/system.slice/docker-${ID}.scope",image="busybox",name="app",namespace="v2",pod="rec"}`;
    expect(text).toContain(`container_cpu_usage_seconds_total${app} 10.572222 `);
    expect(text).toContain(`container_memory_working_set_bytes${app} ${15319040 - 6291456} `);
    expect(text).toContain(`container_spec_memory_limit_bytes${app} 67108864 `);
    expect(text).toContain(
      `container_spec_memory_limit_bytes{container="POD",id="/system.slice/docker-${SANDBOX}.scope",image="pause",name="sb",namespace="v2",pod="rec"} 0 `,
    );
  });

  it("reads a namespace's interfaces from /proc/<pid>/net/dev, loopback left out", () => {
    const text = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     840      10    0    0    0     0          0         0      840      10    0    0    0     0       0          0
  eth0: 1234567    4321    1    2    0     0          0         0   765432    2345    3    4    0     0       0          0
`;
    expect(netDev(text)).toEqual({
      eth0: { rxBytes: 1234567, rxPackets: 4321, rxErrors: 1, rxDropped: 2, txBytes: 765432, txPackets: 2345, txErrors: 3, txDropped: 4 },
    });
    expect(netDev(undefined)).toBeUndefined();
  });
});
