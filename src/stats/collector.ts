/**
 * The agent's resource usage readings: every running container of podrun's (sandboxes included,
 * for the pod's network), read from the engine every housekeeping period (10 s, as cAdvisor's),
 * not once per scrape; a scrape of /stats/summary or /metrics reads the last readings. The
 * writable layer size costs the engine a walk of the layer, so it is read every minute.
 */
import type { ObservedPod } from '../runtime/observed.js';
import type { EngineStats, PodRuntime } from '../runtime/runtime.js';
import { Slots } from '../runtime/slots.js';
import { podStats, type ContainerSample, type PodStatsV1 } from './summary.js';
import { statSync } from 'node:fs';

interface Reading {
  stats: EngineStats;
  previous?: EngineStats;
}

export interface StatsCollectorOptions {
  periodMs?: number;
  diskPeriodMs?: number;
  /** When a container started, if known. */
  startedAt?: (id: string) => string | undefined;
  /** For metrics: how long one collection took and how many engine calls it made. */
  onCollected?: (seconds: number, calls: number) => void;
}

export class StatsCollector {
  private readonly readings = new Map<string, Reading>();
  private readonly disk = new Map<string, { rwBytes?: number; logsBytes?: number }>();
  private timer: NodeJS.Timeout | undefined;
  private diskTimer: NodeJS.Timeout | undefined;
  private readonly slots = new Slots(4);
  private inFlight: Promise<void> | undefined;
  private soon: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly rt: PodRuntime,
    private readonly pods: () => ObservedPod[],
    private readonly o: StatsCollectorOptions = {},
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.collect().catch(() => undefined), this.o.periodMs ?? 10_000);
    this.timer.unref();
    this.diskTimer = setInterval(() => void this.collectDisk().catch(() => undefined), this.o.diskPeriodMs ?? 60_000);
    this.diskTimer.unref();
    void this.collect().catch(() => undefined);
  }

  stop(): void {
    this.stopped = true;
    if (this.soon) clearTimeout(this.soon);
    if (this.timer) clearInterval(this.timer);
    if (this.diskTimer) clearInterval(this.diskTimer);
  }

  private liveContainers(): { id: string }[] {
    return this.pods().flatMap((p) => [...p.sandboxes, ...p.containers].filter((c) => c.state === 'running'));
  }

  /** One reading of every running container; a collection still under way is joined, not doubled. */
  collect(): Promise<void> {
    this.inFlight ??= this.collectOnce().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async collectOnce(): Promise<void> {
    const t0 = performance.now();
    const live = this.liveContainers();
    const ids = new Set(live.map((c) => c.id));
    for (const id of this.readings.keys()) if (!ids.has(id)) this.readings.delete(id);
    for (const id of this.disk.keys()) if (!ids.has(id)) this.disk.delete(id);
    await Promise.all(
      live.map((c) =>
        this.slots.run(async () => {
          const stats = await this.rt.containerStats(c.id, true).catch(() => undefined);
          if (!stats) return;
          const before = this.readings.get(c.id);
          this.readings.set(c.id, { stats, ...(before ? { previous: before.stats } : {}) });
        }),
      ),
    );
    if (this.disk.size === 0 && live.length) await this.collectDisk();
    this.o.onCollected?.((performance.now() - t0) / 1000, live.length);
    // A container read for the first time has no rate yet: read again soon rather than a period later.
    if (!this.stopped && !this.soon && [...this.readings.values()].some((r) => !r.previous)) {
      this.soon = setTimeout(() => {
        this.soon = undefined;
        void this.collect().catch(() => undefined);
      }, 1000);
      this.soon.unref();
    }
  }

  private async collectDisk(): Promise<void> {
    await Promise.all(
      this.liveContainers().map((c) =>
        this.slots.run(async () => {
          const d = await this.rt.containerDisk(c.id).catch(() => undefined);
          if (!d) return;
          let logsBytes: number | undefined;
          try {
            if (d.logPath) logsBytes = statSync(d.logPath).size;
          } catch {
            // a remote engine's log path is not ours to read
          }
          this.disk.set(c.id, { ...(d.rwBytes !== undefined ? { rwBytes: d.rwBytes } : {}), ...(logsBytes !== undefined ? { logsBytes } : {}) });
        }),
      ),
    );
  }

  /** The Summary API's pods, from the last readings. */
  summary(): PodStatsV1[] {
    const samples: ContainerSample[] = [];
    for (const p of this.pods()) {
      for (const c of [...p.sandboxes, ...p.containers]) {
        const r = this.readings.get(c.id);
        if (!r || c.state !== 'running') continue;
        const d = this.disk.get(c.id);
        const startedAt = this.o.startedAt?.(c.id);
        samples.push({
          id: c.id,
          name: c.name,
          type: c.type,
          pod: { name: p.name, namespace: p.namespace, uid: p.uid },
          stats: r.stats,
          ...(r.previous ? { previous: r.previous } : {}),
          ...(startedAt ? { startedAt } : {}),
          ...(d?.rwBytes !== undefined ? { rootfsBytes: d.rwBytes } : {}),
          ...(d?.logsBytes !== undefined ? { logsBytes: d.logsBytes } : {}),
        });
      }
    }
    return podStats(samples);
  }
}
