/**
 * The agent's resource usage readings: every running container of podrun's (sandboxes included,
 * for the pod's network), from cgroupfs (the engine's stats API for a remote engine). A reading is
 * taken when someone asks (/stats/summary, the /metrics/* endpoints, `top`) and the last one is
 * older than the housekeeping interval (10 s, cAdvisor's period): asked every 15 s, as Prometheus
 * scrapes, that is one reading a scrape; asked more often, at most one a period; never asked,
 * none at all. cAdvisor reads on a timer whether anyone looks or not. The writable layer size
 * costs the engine a walk of the layer, so it is read at most once a minute.
 */
import { timerDelay } from '../base/duration.js';
import { SANDBOX_NAME } from '../runtime/labels.js';
import type { ObservedPod } from '../runtime/observed.js';
import type { ContainerReading } from '../runtime/runtime-types.js';
import type { PodEngine } from '../runtime/roles.js';
import { Slots } from '../runtime/slots.js';
import { podStats, type ContainerSample, type PodStatsV1 } from './summary.js';

/** What is read of a pod: its ready sandbox (its pause process and network) and its running containers. */
interface Live {
  id: string;
  name: string;
  type: ContainerSample['type'];
  image: string;
  engineName: string;
}

function liveOf(p: ObservedPod): Live[] {
  return [
    ...p.sandboxes
      .filter((s) => s.state === 'ready')
      .map((s) => ({ id: s.id, name: SANDBOX_NAME, type: 'sandbox' as const, image: s.image, engineName: s.engineName })),
    ...p.containers.filter((c) => c.state === 'running'),
  ];
}

interface Reading {
  stats: ContainerReading;
  previous?: ContainerReading;
}

export interface StatsCollectorOptions {
  /** The oldest a reading may be when asked for (the housekeeping interval). */
  periodMs?: number;
  diskPeriodMs?: number;
  /** After this long unasked, readings are dropped and the next request starts afresh (default 5 min). */
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
  // The engine answers a stats request at its collector's next tick (Docker: every second, one
  // tick for all subscribers), so a request is mostly waiting: many at once, or a reading of 90
  // containers four at a time takes 20 s.
  private readonly slots = new Slots(64);
  private inFlight: Promise<void> | undefined;
  private fresh: Promise<void> | undefined;
  private soon: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** When the last collection started (0: none kept). */
  private lastCollected = 0;
  private lastDisk = 0;

  constructor(
    private readonly rt: PodEngine,
    private readonly pods: () => ObservedPod[],
    private readonly o: StatsCollectorOptions = {},
  ) {}

  /**
   * Someone wants the readings: a new one unless the last is younger than the period. With none
   * kept (first request, or after an idle spell), two a second apart, so the first answer has
   * CPU rates.
   */
  demand(): Promise<void> {
    // An engine without readings is not asked: every container reads as none.
    if (this.stopped || !this.rt.capabilities.stats) return Promise.resolve();
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.forget(), this.o.idleMs ?? 300_000);
    this.idleTimer.unref();
    if (Date.now() - this.lastCollected < timerDelay(this.o.periodMs ?? 10_000)) return this.fresh ?? Promise.resolve();
    const afresh = this.lastCollected === 0;
    this.lastCollected = Date.now();
    this.fresh = (async () => {
      await this.collect().catch(() => undefined);
      if (afresh && !this.stopped) {
        await new Promise((r) => setTimeout(r, 1000));
        await this.collect().catch(() => undefined);
      }
      this.followUpNewcomers();
    })();
    return this.fresh;
  }

  /** A container read for the first time has no rate yet: read again soon rather than at the next request. */
  private followUpNewcomers(): void {
    if (this.stopped || !this.lastCollected || this.soon || ![...this.readings.values()].some((r) => !r.previous)) return;
    this.soon = setTimeout(() => {
      this.soon = undefined;
      void this.collect().catch(() => undefined);
    }, 1000);
    this.soon.unref();
  }

  /** Nobody has asked for a while: none kept (the next rates start afresh). */
  private forget(): void {
    this.readings.clear();
    this.disk.clear();
    this.lastCollected = 0;
    this.lastDisk = 0;
  }

  /** Readings kept, per running container (pruned to the live ones at each collection). */
  stateSize(): Record<string, number> {
    return { statsReadings: this.readings.size, statsDisk: this.disk.size };
  }

  stop(): void {
    this.stopped = true;
    if (this.soon) clearTimeout(this.soon);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.forget();
  }

  private liveContainers(): Live[] {
    return this.pods().flatMap(liveOf);
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
          const base = before && Date.parse(stats.time) - Date.parse(before.stats.time) < MIN_RATE_WINDOW_MS ? before.previous : before?.stats;
          this.readings.set(c.id, { stats, ...(base ? { previous: base } : {}) });
        }),
      ),
    );
    // The first disk reading is waited for (the answer has it); later ones run beside the readings.
    if (Date.now() - this.lastDisk >= (this.o.diskPeriodMs ?? 60_000) && live.length) {
      this.lastDisk = Date.now();
      const first = this.disk.size === 0;
      const disk = this.collectDisk(live).catch(() => undefined);
      if (first) await disk;
    } else {
      // A container started since the last pass is read now, not up to a period later: cAdvisor
      // starts each container's own disk housekeeping when it sees the container. Waited for, as
      // the first pass is, so the answer that first shows the container has its layer.
      const newcomers = live.filter((c) => !this.disk.has(c.id));
      if (newcomers.length) await this.collectDisk(newcomers).catch(() => undefined);
    }
    this.o.onCollected?.((performance.now() - t0) / 1000, engineCalls);
  }

  /** The writable layer and log sizes of `live`; a container the engine has no answer for keeps its last reading (none for a new one), asked again at the next pass. */
  private async collectDisk(live: { id: string }[]): Promise<void> {
    // A new container is marked asked for: a collection while this pass runs does not ask again.
    for (const c of live) if (!this.disk.has(c.id)) this.disk.set(c.id, {});
    await Promise.all(
      live.map((c) =>
        this.slots.run(async () => {
          const d = await this.rt.containerDisk(c.id).catch(() => undefined);
          if (!d) return;
          this.disk.set(c.id, { ...(d.rwBytes !== undefined ? { rwBytes: d.rwBytes } : {}), ...(d.logBytes !== undefined ? { logsBytes: d.logBytes } : {}) });
        }),
      ),
    );
  }

  /** The Summary API's pods, from the readings. */
  async summary(): Promise<PodStatsV1[]> {
    return podStats(await this.samples());
  }

  /** The last reading of every running container (a new one if the last is older than the period). */
  async samples(): Promise<ContainerSample[]> {
    await this.demand();
    const samples: ContainerSample[] = [];
    for (const p of this.pods()) {
      for (const c of liveOf(p)) {
        const r = this.readings.get(c.id);
        if (!r) continue;
        const d = this.disk.get(c.id);
        const startedAt = this.o.startedAt?.(p.uid, c.id);
        samples.push({
          id: c.id,
          name: c.name,
          type: c.type,
          pod: { name: p.name, namespace: p.namespace, uid: p.uid },
          image: c.image,
          engineName: c.engineName,
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
