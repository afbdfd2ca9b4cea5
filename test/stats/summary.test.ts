import { describe, expect, it } from 'vitest';
import { memoryReading } from '../../src/runtime/cgroup-stats.js';
import type { ContainerReading } from '../../src/runtime/runtime-types.js';
import { cpuOf, formatCpu, formatMemory, memoryOf, podStats, type ContainerSample } from '../../src/stats/summary.js';

function stats(at: string, cpuNs: number, mem: { usage: number; stats: Record<string, number> }, extra: Partial<ContainerReading> = {}): ContainerReading {
  return { time: at, cpu: { usageNs: cpuNs }, memory: memoryReading(mem.usage, undefined, mem.stats), processes: 2, ...extra };
}

const v1 = {
  usage: 100 * 2 ** 20,
  stats: { total_inactive_file: 30 * 2 ** 20, total_rss: 60 * 2 ** 20, total_pgfault: 7, total_pgmajfault: 1, inactive_file: 999 },
};
const v2 = { usage: 50 * 2 ** 20, stats: { inactive_file: 10 * 2 ** 20, anon: 40 * 2 ** 20, pgfault: 3, pgmajfault: 0 } };

describe('Summary API numbers from engine stats', () => {
  it('takes the CPU rate between two readings, in nanocores', () => {
    const a = stats('2026-11-30T10:00:00Z', 1e9, v1);
    const b = stats('2026-11-30T10:00:10Z', 3e9, v1);
    expect(cpuOf(b, a)).toEqual({ time: '2026-11-30T10:00:10Z', usageCoreNanoSeconds: 3e9, usageNanoCores: 2e8 });
    expect(cpuOf(a).usageNanoCores).toBeUndefined();
    // The engine's own previous sample, when it gave one.
    expect(cpuOf({ ...b, earlier: { time: '2026-11-30T10:00:09Z', cpuUsageNs: 2.5e9 } }).usageNanoCores).toBe(5e8);
  });

  it('counts the working set as usage less inactive file pages, on cgroup v1 and v2', () => {
    expect(memoryOf(stats('t', 0, v1))).toEqual({
      time: 't',
      usageBytes: 100 * 2 ** 20,
      workingSetBytes: 70 * 2 ** 20,
      rssBytes: 60 * 2 ** 20,
      pageFaults: 7,
      majorPageFaults: 1,
    });
    expect(memoryOf(stats('t', 0, v2))).toMatchObject({ usageBytes: 50 * 2 ** 20, workingSetBytes: 40 * 2 ** 20, rssBytes: 40 * 2 ** 20 });
    expect(memoryOf(stats('t', 0, { usage: 1, stats: { total_inactive_file: 5 } })).workingSetBytes).toBe(0);
  });

  it('sums a pod from its containers and its sandbox, with the sandbox network, as kubectl top shows it', () => {
    const pod = { name: 'web', namespace: 'demo', uid: 'u1' };
    const at = '2026-11-30T10:00:10Z';
    const samples: ContainerSample[] = [
      {
        id: 's',
        name: 'POD',
        type: 'sandbox',
        pod,
        startedAt: '2026-11-30T09:00:00Z',
        stats: stats(at, 2e8, v2, { networks: { eth0: { rxBytes: 10, rxErrors: 0, txBytes: 20, txErrors: 1 } } }),
        previous: stats('2026-11-30T10:00:00Z', 1e8, v2),
      },
      {
        id: 'a',
        name: 'app',
        type: 'app',
        pod,
        stats: stats(at, 9e9, v1),
        previous: stats('2026-11-30T10:00:00Z', 4e9, v1),
        rootfsBytes: 4096,
        logsBytes: 100,
      },
    ];
    const [p] = podStats(samples);
    expect(p).toMatchObject({
      podRef: pod,
      startTime: '2026-11-30T09:00:00Z',
      cpu: { usageCoreNanoSeconds: 9.2e9, usageNanoCores: 5e8 + 1e7 },
      memory: { workingSetBytes: 110 * 2 ** 20 },
      network: { name: 'eth0', rxBytes: 10, txBytes: 20, txErrors: 1, interfaces: [{ name: 'eth0', rxBytes: 10, rxErrors: 0, txBytes: 20, txErrors: 1 }] },
      'ephemeral-storage': { usedBytes: 4196 },
      process_stats: { process_count: 4 },
    });
    expect(p?.containers.map((c) => c.name)).toEqual(['app']);
    expect(p?.containers[0]).toMatchObject({ rootfs: { usedBytes: 4096 }, logs: { usedBytes: 100 } });
    expect([formatCpu(p?.cpu.usageNanoCores), formatMemory(p!.memory.workingSetBytes), formatCpu(undefined)]).toEqual(['510m', '110Mi', '<unknown>']);
  });
});
