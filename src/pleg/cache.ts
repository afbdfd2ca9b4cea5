import { timerDelay } from '../base/duration.js';
import type { Logger } from '../log/logger.js';
import { LABEL } from '../runtime/labels.js';
import type { EngineRecord, ObservedPod, RecordKind } from '../runtime/observed.js';
import type { EngineEvent, SandboxEvent } from '../runtime/runtime-types.js';
import type { EngineLifecycle } from '../runtime/roles.js';
import { lookIsNewer } from './freshness.js';
import { ContainerRecords } from './records.js';
import { RelistHealth, relistThresholdFor } from './relist-health.js';

export interface PodCacheOptions {
  /** Safety-net relist period; events drive everything else. */
  relistMs?: number;
  log?: Logger;
  /** Called when the engine comes back after being unreachable (or on first contact). */
  onConnected?: () => void;
  /** For metrics: each full relist's duration, and each time the event stream was followed again after a loss. */
  onRelisted?: (seconds: number) => void;
  onReconnected?: () => void;
  /** A monotonic clock in ms for the relist health check (tests move it by hand). */
  clock?: () => number;
}

/**
 * What the cache learned, in order: an engine event, or its own look at one container (undefined:
 * gone), with `since`, the last seq told before the look began.
 */
type Recent = { seq: number; event: EngineEvent } | { seq: number; looked: string; info: EngineRecord | undefined; since: number };

const RECENT_LIMIT = 2000;

/** The kubelet's generic PLEG relists every second: the period when the engine tells no events. */
const GENERIC_RELIST_MS = 1000;

/**
 * While the engine is away it is dialled once each generic relist period, as the kubelet's relist
 * asks its runtime every second: a runtime that comes back is noticed within a second. One dial
 * at a time, the next a period after the last one failed, so a dead engine costs one dial a second.
 */
export const RECONNECT_MS = GENERIC_RELIST_MS;

/**
 * The pod cache (PLEG): podrun's containers as the engine last told us, kept current by the event
 * stream so a container death is seen at once without a relist, with a periodic relist as a
 * safety net. Dials the engine again every second while it is away.
 */
export class PodCache {
  private readonly records = new ContainerRecords();
  private readonly finished = new Map<string, number>();
  private readonly recent: Recent[] = [];
  /** Lists in flight: while one is, the worker's looks are kept for its replay. */
  private listing = 0;
  private seq = 0;
  private unsubscribe: (() => void) | undefined;
  private relistTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  /** Why the engine is away, for /healthz. */
  private lostWith: Error | undefined;
  private stopped = false;
  connected = false;
  private everConnected = false;
  /** How long the last full relist took: the cost the event stream saves on every reaction. */
  lastRelistMs = 0;
  /** The kubelet's PLEG health: the last successful relist began no longer ago than the threshold. */
  readonly health: RelistHealth;
  private plegUnhealthy = false;

  constructor(
    private readonly rt: EngineLifecycle,
    private readonly onPodChange: (uid: string) => void,
    private readonly o: PodCacheOptions = {},
  ) {
    this.health = new RelistHealth(relistThresholdFor(o.relistMs ?? 60_000), o.clock);
  }

  async start(): Promise<void> {
    await this.connect();
    // Without the engine's events, the relist is all there is: the kubelet's generic PLEG period.
    const period = this.rt.capabilities.events ? (this.o.relistMs ?? 60_000) : Math.min(this.o.relistMs ?? 60_000, GENERIC_RELIST_MS);
    this.relistTimer = setInterval(() => {
      this.judgeHealth();
      // Away, the engine is dialled by the reconnect alone: one dial a period, not two.
      if (!this.connected) return;
      void this.relist().catch((err: unknown) => this.lost(err instanceof Error ? err : new Error(String(err))));
    }, timerDelay(period));
    this.relistTimer.unref();
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.relistTimer) clearInterval(this.relistTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }

  /** Subscribes to events first, then lists, so nothing between the two is missed. */
  private async connect(): Promise<void> {
    if (this.stopped) return;
    try {
      if (this.rt.capabilities.events)
        this.unsubscribe = await this.rt.watchEvents(
          (e) => this.onEvent(e),
          (err) => {
            if (!this.stopped) this.lost(err);
          },
        );
      await this.relist();
      if (this.everConnected) this.o.onReconnected?.();
      this.everConnected = true;
      this.connected = true;
      this.lostWith = undefined;
      this.o.onConnected?.();
    } catch (err) {
      this.lost(err as Error);
    }
  }

  private lost(err?: Error): void {
    if (this.stopped) return;
    if (this.connected) this.o.log?.warn(`engine connection lost${err ? `: ${err.message}` : ''}; reconnecting`);
    this.connected = false;
    if (err) this.lostWith = err;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    if (this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      // Fire-and-forget: connect() catches all it awaits and turns it into the next retry.
      void this.connect();
    }, RECONNECT_MS);
  }

  private onEvent(e: EngineEvent): void {
    this.remember({ seq: ++this.seq, event: e });
    const uid = this.apply(e);
    if (uid) {
      const a = e.labels;
      const what = e.kind === 'sandbox' ? `sandbox ${e.state}` : e.kind;
      this.o.log?.debug(
        `engine event ${what} of container ${a[LABEL.containerName] ?? '?'} of pod ${a[LABEL.podNamespace] ?? '?'}/${a[LABEL.podName] ?? '?'}`,
        {
          pod: `${a[LABEL.podNamespace] ?? ''}/${a[LABEL.podName] ?? ''}`,
          container: a[LABEL.containerName],
          event: what,
        },
      );
      this.onPodChange(uid);
    }
  }

  private remember(r: Recent): void {
    this.recent.push(r);
    if (this.recent.length > RECENT_LIMIT) this.recent.splice(0, this.recent.length - RECENT_LIMIT);
  }

  /** Folds one event into the records; returns the pod it concerns. */
  private apply(e: EngineEvent): string | undefined {
    const uid = e.labels[LABEL.podUid];
    if (!uid || !e.id) return undefined;
    if (e.kind === 'sandbox') return this.applySandbox(e, uid);
    if (e.kind === 'removed') {
      this.records.delete(e.id);
      this.finished.delete(e.id);
      return uid;
    }
    let rec = this.records.get(e.id);
    if (rec?.kind !== 'container') {
      rec = {
        kind: 'container',
        id: e.id,
        name: e.name ?? '',
        image: e.image ?? '',
        labels: { ...e.labels },
        state: 'created',
        created: Math.floor(e.timeMs / 1000),
      };
      this.records.set(e.id, rec);
    } else if (e.kind === 'created') {
      // A create is the first thing that happens to a container: one already known was seen at it
      // or later (the worker's own look after it started it, before a slow stream or the CRI
      // relist told the create). Taken as news it showed a running instance "never started", and
      // the worker replaced it under the same attempt, its log file shared with the next.
      return undefined;
    }
    // The list's uptime is of the instance it saw: any news since (a restart in place) and it is not known.
    delete rec.startedBy;
    switch (e.kind) {
      case 'created':
        rec.state = 'created';
        break;
      case 'started':
        rec.state = 'running';
        delete rec.exitCode;
        break;
      case 'exited':
        rec.state = 'exited';
        rec.exitCode = e.exitCode ?? -1;
        this.finished.set(e.id, e.timeMs);
        break;
    }
    this.records.changed(e.id);
    return uid;
  }

  /** A sandbox's new state; not ready, it finished then (an adopted one's engine restart is timed from it). */
  private applySandbox(e: SandboxEvent, uid: string): string {
    const rec = this.records.get(e.id);
    if (e.state === 'removed') {
      this.records.delete(e.id);
      this.finished.delete(e.id);
    } else if (rec?.kind !== 'sandbox') {
      this.records.set(e.id, {
        kind: 'sandbox',
        id: e.id,
        name: e.name ?? '',
        image: e.image ?? '',
        labels: { ...e.labels },
        state: e.state,
        createdAt: Math.floor(e.timeMs / 1000),
      });
    } else {
      rec.state = e.state;
      this.records.changed(e.id);
    }
    if (e.state === 'notready') this.finished.set(e.id, e.timeMs);
    return uid;
  }

  /** Replaces every record with a fresh list, then replays newer events. */
  private async replaceAll(given?: readonly EngineRecord[]): Promise<Set<string>> {
    const startSeq = this.seq;
    let list = given;
    if (!list) {
      this.listing++;
      try {
        list = await this.rt.listContainers();
      } finally {
        this.listing--;
      }
    }
    const touched = new Set<string>(this.records.uids());
    this.records.clear();
    for (const info of list) {
      this.records.set(info.id, info);
      touched.add(info.labels[LABEL.podUid] ?? '');
    }
    for (const [i, r] of this.recent.entries()) {
      if (r.seq <= startSeq) continue;
      if ('event' in r) this.apply(r.event);
      // A look since the list began: one that found a container gone stands; one that found a
      // container the list lacks was made after the list was read (seen missing, a worker would
      // make it again). One the list holds stands only where it saw the container further along its
      // life: a list read between a create and its start would show a started instance "never
      // started", and the worker would replace it (Podman under load, its start told late).
      else if (!r.info) this.records.delete(r.looked);
      else {
        const held = this.records.get(r.looked);
        if (held && !lookIsNewer(held, r.info)) continue;
        this.records.set(r.looked, { ...r.info });
        // As refreshPod took it: events told while the look was under way come after it (a
        // container the engine restarted in place meanwhile runs again).
        for (const e of this.toldDuring(i, r.since, r.looked)) this.apply(e);
      }
    }
    // A container destroyed while the event stream was down never sends its 'removed': the list is
    // the word on what exists, and a finish time of a container that does not is dropped with it.
    for (const id of this.finished.keys()) if (!this.records.get(id)) this.finished.delete(id);
    touched.delete('');
    return touched;
  }

  /** The events of container `id` told after `since` and before the look at `recent[i]`, in order. */
  private toldDuring(i: number, since: number, id: string): EngineEvent[] {
    const told: EngineEvent[] = [];
    for (let j = i - 1; j >= 0 && this.recent[j]!.seq > since; j--) {
      const r = this.recent[j]!;
      if ('event' in r && r.event.id === id) told.unshift(r.event);
    }
    return told;
  }

  /**
   * Why the agent is not healthy (the engine unreachable, or its relist stale), or undefined.
   * Logged once each time it turns, as the kubelet logs "PLEG is not healthy".
   */
  judgeHealth(): string | undefined {
    if (!this.connected) return this.unreachable();
    // The engine's loss and return are logged where they happen; this says the relist's own turns.
    const problem = this.health.problem();
    // Said as it turns, not at each look (the age in the text grows at each).
    if ((problem !== undefined) !== this.plegUnhealthy) {
      if (problem) this.o.log?.warn(`PLEG is not healthy: ${problem}`);
      else this.o.log?.info('PLEG is healthy again');
    }
    this.plegUnhealthy = problem !== undefined;
    return problem;
  }

  /** The engine away, named with its endpoint and the last error (the runtime's own words name the endpoint already, mostly). */
  private unreachable(): string {
    const where = `${this.rt.runtimeName} at ${this.rt.endpoint}`;
    const why = this.lostWith?.message;
    if (!why) return `engine unreachable: ${where}`;
    return `engine unreachable: ${why.includes(this.rt.endpoint) ? this.rt.runtimeName : where}: ${why}`;
  }

  /** `given`: a list the caller has just made (`apply`'s plan), taken instead of listing again. */
  async relist(given?: readonly EngineRecord[]): Promise<void> {
    const started = Date.now();
    const began = this.health.now();
    const touched = await this.replaceAll(given);
    this.health.listed(began);
    this.lastRelistMs = Date.now() - started;
    this.o.onRelisted?.(this.lastRelistMs / 1000);
    for (const uid of touched) this.onPodChange(uid);
  }

  /**
   * An authoritative look at one pod, after podrun changed it (so a re-sync never acts on stale
   * state). It inspects the sandboxes and containers the cache knows for the pod and `created`,
   * those podrun just made (its worker's record keeps them until this look), by id and as what
   * each is: a list call costs the engine O(every container it holds), which is seconds with a
   * pile of dead ones, and this runs after every sync. New containers made by anyone else arrive
   * as events, and the periodic relist is the safety net.
   */
  async refreshPod(uid: string, created: Iterable<[string, RecordKind]> = []): Promise<void> {
    const startSeq = this.seq;
    const ids = new Map(created);
    for (const rec of this.records.ofPod(uid)) ids.set(rec.id, rec.kind);
    const seen = await this.rt.inspectContainers(ids);
    for (const [id, info] of seen) {
      if (info) {
        // A copy: the events folded into the record next must not change what the look saw.
        this.records.set(id, { ...info });
      } else {
        this.records.delete(id);
        this.finished.delete(id);
      }
    }
    for (const r of this.recent) {
      if (r.seq > startSeq && 'event' in r && r.event.labels[LABEL.podUid] === uid) this.apply(r.event);
    }
    // Kept in order with the events for a relist whose list is in flight, the one reader of them
    // (else each sync's looks would crowd the events out of the replay's window).
    if (this.listing > 0) for (const [id, info] of seen) this.remember({ seq: ++this.seq, looked: id, info, since: startSeq });
  }

  pod(uid: string): ObservedPod | undefined {
    return this.records.pod(uid);
  }

  pods(): ObservedPod[] {
    return this.records.pods();
  }

  /** Records kept: containers the engine holds, their finish times. */
  stateSize(): Record<string, number> {
    return { cacheRecords: this.records.size, cacheViews: this.records.viewCount, cacheByPod: this.records.podIndexSize, cacheFinished: this.finished.size };
  }

  /** When the container finished, if an event told us. */
  finishedAt(id: string): number | undefined {
    return this.finished.get(id);
  }
}
