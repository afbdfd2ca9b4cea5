/**
 * The agent's resource usage readings: every running container of podrun's (sandboxes included,
 * for the pod's network), read every housekeeping period (10 s, as cAdvisor's) from cgroupfs
 * (the engine's stats API for a remote engine), not once per request; /stats/summary, the
 * /metrics/* endpoints and `top` read the last readings. Unlike cAdvisor, the readings run only
 * while someone reads them (and 5 minutes after): an agent nobody asks pays nothing for them.
 * The writable layer size costs the engine a walk of the layer, so it is read every minute.
 */
import { timerDelay } from '../base/duration.js';
import type { ObservedPod } from '../runtime/observed.js';
import type { EngineStats } from '../runtime/runtime-types.js';
import type { PodEngine } from '../runtime/roles.js';
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
  /** How long readings go on after the last request for them (default 5 min). */
  idleMs?: number;
  /** When a container started, if known. */
  startedAt?: (podUid: string, id: string) => string | undefined;
  /** For metrics: how long one collection took and how many engine stats calls it made (none from cgroupfs). */
  onCollected?: (seconds: number, calls: number) => void;
}

/** The shortest span a CPU rate is taken over. */
const MIN_RATE_WINDOW_MS = 500;

export class StatsCollector {
  private readonly readings = new Map<string, Reading>();
  private readonly disk = new Map<string, { rwBytes?: number; logsBytes?: number }>();
  private timer: NodeJS.Timeout | undefined;
  private diskTimer: NodeJS.Timeout | undefined;
  // The engine answers a stats request at its collector's next tick (Docker: every second, one
  // tick for all subscribers), so a request is mostly waiting: many at once, or a reading of 90
  // containers four at a time takes 20 s.
  private readonly slots = new Slots(64);
  private inFlight: Promise<void> | undefined;
  private soon: NodeJS.Timeout | undefined;
  private stopped = false;
  private lastDemand = 0;

  constructor(
    private readonly rt: PodEngine,
    private readonly pods: () => ObservedPod[],
    private readonly o: StatsCollectorOptions = {},
  ) {}

  /**
   * Someone wants the readings: they start (two readings a second apart, so the first answer
   * has CPU rates) unless already going, and go on until `idleMs` after the last request.
   */
  async demand(): Promise<void> {
    if (this.stopped) return;
    this.lastDemand = Date.now();
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (Date.now() - this.lastDemand > (this.o.idleMs ?? 300_000)) this.pause();
      else void this.collect().catch(() => undefined);
    }, timerDelay(this.o.periodMs ?? 10_000));
    this.timer.unref();
    this.diskTimer = setInterval(() => void this.collectDisk().catch(() => undefined), this.o.diskPeriodMs ?? 60_000);
    this.diskTimer.unref();
    await this.collect().catch(() => undefined);
    await new Promise((r) => setTimeout(r, 1000));
    await this.collect().catch(() => undefined);
  }

  /** Nobody has asked for a while: no more readings, and none kept (the next rates start afresh). */
  private pause(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.diskTimer) clearInterval(this.diskTimer);
    this.timer = undefined;
    this.diskTimer = undefined;
    this.readings.clear();
  }

  stop(): void {
    this.stopped = true;
    if (this.soon) clearTimeout(this.soon);
    this.pause();
  }

  private liveContainers(): { id: string; type: string }[] {
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
    let engineCalls = 0;
    const ids = new Set(live.map((c) => c.id));
    for (const id of this.readings.keys()) if (!ids.has(id)) this.readings.delete(id);
    for (const id of this.disk.keys()) if (!ids.has(id)) this.disk.delete(id);
    await Promise.all(
      live.map((c) =>
        this.slots.run(async () => {
          const stats = await this.rt.containerStats(c.id, true, c.type === 'sandbox').catch(() => undefined);
          if (!stats) return;
          if (stats.source !== 'cgroup') engineCalls++;
          const before = this.readings.get(c.id);
          // Two readings close together (a period's, and the follow-up for a container first seen)
          // say nothing of a rate: cgroupfs answers at once, so they can be a millisecond apart.
          const base = before && Date.parse(stats.read) - Date.parse(before.stats.read) < MIN_RATE_WINDOW_MS ? before.previous : before?.stats;
          this.readings.set(c.id, { stats, ...(base ? { previous: base } : {}) });
        }),
      ),
    );
    if (this.disk.size === 0 && live.length) await this.collectDisk();
    this.o.onCollected?.((performance.now() - t0) / 1000, engineCalls);
    // A container read for the first time has no rate yet: read again soon rather than a period later.
    if (!this.stopped && this.timer && !this.soon && [...this.readings.values()].some((r) => !r.previous)) {
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

  /** The Summary API's pods, from the last readings (starting them if none run). */
  async summary(): Promise<PodStatsV1[]> {
    return podStats(await this.samples());
  }

  /** The last reading of every running container (starting the readings if none run). */
  async samples(): Promise<ContainerSample[]> {
    await this.demand();
    const samples: ContainerSample[] = [];
    for (const p of this.pods()) {
      for (const c of [...p.sandboxes, ...p.containers]) {
        const r = this.readings.get(c.id);
        if (!r || c.state !== 'running') continue;
        const d = this.disk.get(c.id);
        const startedAt = this.o.startedAt?.(p.uid, c.id);
        samples.push({
          id: c.id,
          name: c.name,
          type: c.type,
          pod: { name: p.name, namespace: p.namespace, uid: p.uid },
          image: c.image,
          dockerName: c.dockerName,
          stats: r.stats,
          ...(r.previous ? { previous: r.previous } : {}),
          ...(startedAt ? { startedAt } : {}),
          ...(d?.rwBytes !== undefined ? { rootfsBytes: d.rwBytes } : {}),
          ...(d?.logsBytes !== undefined ? { logsBytes: d.logsBytes } : {}),
        });
      }
    }
    return samples;
  }
}
