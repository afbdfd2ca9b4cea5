import { describe, expect, it, vi } from 'vitest';
import type { ObservedPod } from '../../src/runtime/observed.js';
import type { PodEngine } from '../../src/runtime/roles.js';
import type { ContainerReading, EngineCapabilities } from '../../src/runtime/runtime-types.js';
import { StatsCollector } from '../../src/stats/collector.js';

// The collector against readings that answer at once (cgroupfs): a CPU at one core reads as one core.

const READS: EngineCapabilities = { restartPolicy: true, execKill: true, streaming: true, events: true, stats: true };

describe('StatsCollector', () => {
  it('takes rates over at least half a second, however close together two readings come', async () => {
    const t0 = Date.now();
    // A container burning one core: its counter is the nanoseconds since t0.
    const rt = {
      containerStats: async (): Promise<ContainerReading> => ({
        time: new Date().toISOString(),
        source: 'cgroup',
        cpu: { usageNs: (Date.now() - t0) * 1e6 },
        memory: { workingSetBytes: 0 },
      }),
      containerDisk: async () => ({}),
      capabilities: READS,
    } as unknown as PodEngine;
    const pods = (): ObservedPod[] => [
      {
        uid: 'u',
        name: 'p',
        namespace: 'n',
        source: 's',
        sandboxes: [],
        containers: [{ id: 'c1', engineName: 'x', name: 'c', type: 'app', hash: '', restartCount: 0, state: 'running', created: 0, image: 'i' }],
      },
    ];
    const c = new StatsCollector(rt, pods, { periodMs: 10_000 });
    try {
      const [pod] = await c.summary();
      expect(pod?.containers[0]?.cpu.usageNanoCores).toBeGreaterThan(0.8e9);
      expect(pod?.containers[0]?.cpu.usageNanoCores).toBeLessThan(1.2e9);
      // The follow-up reading for a first-seen container lands a moment later: the rate holds.
      await new Promise((r) => setTimeout(r, 300));
      const [again] = await c.summary();
      expect(again?.containers[0]?.cpu.usageNanoCores).toBeGreaterThan(0.8e9);
    } finally {
      c.stop();
    }
  });

  it('reads when asked and the last reading is older than the period: never unasked, at most once a period', async () => {
    let reads = 0;
    const t0 = Date.now();
    const rt = {
      containerStats: async (): Promise<ContainerReading> => {
        reads++;
        return { time: new Date().toISOString(), source: 'cgroup', cpu: { usageNs: (Date.now() - t0) * 1e6 }, memory: { workingSetBytes: 0 } };
      },
      containerDisk: async () => ({}),
      capabilities: READS,
    } as unknown as PodEngine;
    const pods = (): ObservedPod[] => [
      {
        uid: 'u',
        name: 'p',
        namespace: 'n',
        source: 's',
        sandboxes: [],
        containers: [{ id: 'c1', engineName: 'x', name: 'c', type: 'app', hash: '', restartCount: 0, state: 'running', created: 0, image: 'i' }],
      },
    ];
    // On a fake clock: the period, the second between the first two readings and the idle time
    // pass as the test says, however loaded the machine.
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    const c = new StatsCollector(rt, pods, { periodMs: 1500, idleMs: 4000 });
    const sleep = (ms: number): Promise<unknown> => vi.advanceTimersByTimeAsync(ms);
    /** A request, with the clock moved past the second its first answer waits between two readings. */
    const asked = async (): Promise<Awaited<ReturnType<typeof c.samples>>> => {
      const answer = c.samples();
      await sleep(1000);
      return answer;
    };
    try {
      await sleep(1200);
      expect(reads).toBe(0);
      // The first request: two readings a second apart, so it has a rate.
      await asked();
      expect(reads).toBe(2);
      // Asked again within the period (three scrapers at once, say): the same readings.
      await Promise.all([c.samples(), c.samples(), c.samples()]);
      expect(reads).toBe(2);
      await sleep(1600);
      expect(reads).toBe(2);
      // Past the period: one new reading, its rate over the span since the last.
      const [s] = await c.samples();
      expect(reads).toBe(3);
      expect(Date.parse(s!.stats.time) - Date.parse(s!.previous!.time)).toBeGreaterThan(1400);
      // Unasked past the idle time: nothing kept, and the next request starts afresh.
      await sleep(4300);
      expect(reads).toBe(3);
      await asked();
      expect(reads).toBe(5);
    } finally {
      c.stop();
      vi.useRealTimers();
    }
  }, 20_000);

  it("reads a container's writable layer when it first shows, not only at the next disk pass", async () => {
    const diskAsked: string[] = [];
    const rt = {
      containerStats: async (): Promise<ContainerReading> => ({
        time: new Date().toISOString(),
        source: 'cgroup',
        cpu: { usageNs: 0 },
        memory: { workingSetBytes: 0 },
      }),
      containerDisk: async (id: string) => {
        diskAsked.push(id);
        return { rwBytes: id === 'c1' ? 100 : 200 };
      },
      capabilities: READS,
    } as unknown as PodEngine;
    const container = (id: string): ObservedPod['containers'][number] => ({
      id,
      engineName: id,
      name: id,
      type: 'app',
      hash: '',
      restartCount: 0,
      state: 'running',
      created: 0,
      image: 'i',
    });
    const live = [container('c1')];
    const pods = (): ObservedPod[] => [{ uid: 'u', name: 'p', namespace: 'n', source: 's', sandboxes: [], containers: [...live] }];
    // Readings every 10 ms, the disk pass once an hour.
    const c = new StatsCollector(rt, pods, { periodMs: 10, diskPeriodMs: 3_600_000 });
    const rootfs = async (id: string): Promise<number | undefined> => (await c.samples()).find((s) => s.id === id)?.rootfsBytes;
    try {
      expect(await rootfs('c1')).toBe(100);
      // A second container starts after the pass: its layer is in the first answer that shows it.
      live.push(container('c2'));
      await new Promise((r) => setTimeout(r, 20));
      expect(await rootfs('c2')).toBe(200);
      // Each asked once: known containers wait for the next pass.
      await new Promise((r) => setTimeout(r, 20));
      await c.samples();
      expect(diskAsked.sort()).toEqual(['c1', 'c2']);
    } finally {
      c.stop();
    }
  });

  it('keeps the last writable-layer reading of a container the engine did not answer for at the next pass', async () => {
    let answer: { rwBytes: number } | undefined = { rwBytes: 100 };
    const rt = {
      containerStats: async (): Promise<ContainerReading> => ({
        time: new Date().toISOString(),
        source: 'cgroup',
        cpu: { usageNs: 0 },
        memory: { workingSetBytes: 0 },
      }),
      containerDisk: async () => answer,
      capabilities: READS,
    } as unknown as PodEngine;
    const c1: ObservedPod['containers'][number] = {
      id: 'c1',
      engineName: 'c1',
      name: 'c1',
      type: 'app',
      hash: '',
      restartCount: 0,
      state: 'running',
      created: 0,
      image: 'i',
    };
    const pods = (): ObservedPod[] => [{ uid: 'u', name: 'p', namespace: 'n', source: 's', sandboxes: [], containers: [c1] }];
    const c = new StatsCollector(rt, pods, { periodMs: 10, diskPeriodMs: 10 });
    try {
      expect((await c.samples())[0]?.rootfsBytes).toBe(100);
      answer = undefined;
      // Past both periods: a new pass, which gets no answer (run beside the readings: looked at twice).
      await new Promise((r) => setTimeout(r, 30));
      await c.samples();
      await new Promise((r) => setTimeout(r, 30));
      expect((await c.samples())[0]?.rootfsBytes).toBe(100);
    } finally {
      c.stop();
    }
  });

  it('asks an engine without readings for none', async () => {
    let reads = 0;
    const rt = {
      containerStats: async () => (reads++, undefined),
      containerDisk: async () => ({}),
      capabilities: { ...READS, stats: false },
    } as unknown as PodEngine;
    const pods = (): ObservedPod[] => [
      {
        uid: 'u',
        name: 'p',
        namespace: 'n',
        source: 's',
        sandboxes: [],
        containers: [{ id: 'c1', engineName: 'x', name: 'c', type: 'app', hash: '', restartCount: 0, state: 'running', created: 0, image: 'i' }],
      },
    ];
    const c = new StatsCollector(rt, pods, { periodMs: 10_000 });
    try {
      expect(await c.summary()).toEqual([]);
      expect(reads).toBe(0);
    } finally {
      c.stop();
    }
  });
});
