import { formatDuration, parseDuration, timerDelay } from '../base/duration.js';
import type { Logger } from '../log/logger.js';
import { podVersion } from '../manifest/hash.js';
import type { DesiredPod } from '../manifest/types.js';
import { decideRollback, rollbackDeadline, rolledBack, type Readiness, type RollbackRecord } from '../reconcile/rollback.js';
import type { PodRef } from '../status/events.js';
import { PodRecords } from './pod-record.js';
import { RollbackStore } from './rollback-store.js';

export interface HealthGateOptions {
  stateDir: string;
  /** `--rollback-after`: the deadline for pods without the annotation (0: they are not gated). */
  defaultMs: number;
  log: Logger;
  /** Whether the engine can be reached now (an update's clock starts only then). */
  engineUp: () => boolean;
  /** An update's deadline (or its recheck) came: judge it now. */
  due: (uid: string) => void;
  /** A rollback: its event, and the metric. */
  rolledBack: (pod: PodRef, message: string) => void;
  /** The wall clock and a monotonic one (ms); for tests. */
  clock?: { wall: () => number; mono: () => number };
  /** The pods' records (the syncer's, in the agent), where the gate keeps its timer, what runs and an update's origin. */
  records?: PodRecords;
}

/** An elapsed time across a restart that is negative or longer than this is a clock that jumped. */
const PLAUSIBLE_MS = 24 * 3600_000;

function sameRecord(a: RollbackRecord, b: RollbackRecord): boolean {
  return (
    a.good?.version === b.good?.version &&
    a.trying?.version === b.trying?.version &&
    a.trying?.since === b.trying?.since &&
    a.failed?.version === b.failed?.version
  );
}

/**
 * Health-gated updates in the agent: between the declared pods and the workers, it says which
 * version of each pod to run (`decideRollback`), stores each decision before it is acted on, and
 * wakes a pod's worker at its deadline. The workers never know: they are given a pod, as always.
 * What it keeps per pod in memory is in the pod's record (`GateFacts`), so it goes with the record.
 */
export class HealthGate {
  private readonly store: RollbackStore;
  private readonly records: PodRecords;
  private readonly versions = new WeakMap<object, string>();
  private stopped = false;
  private readonly wall: () => number;
  private readonly mono: () => number;

  constructor(private readonly o: HealthGateOptions) {
    this.store = new RollbackStore(o.stateDir, o.log);
    this.records = o.records ?? new PodRecords();
    // The rollback record of a pod gone goes with it: a pod declared again later starts afresh.
    this.records.onForget((uid) => this.store.forget(uid));
    this.wall = o.clock?.wall ?? Date.now;
    this.mono = o.clock?.mono ?? (() => performance.now());
  }

  /**
   * "Now" for a pod's decision, on a clock that does not jump: an update's deadline is counted on
   * the monotonic clock from its `since`. Appliances without a real-time clock boot in 1970 and
   * step to today when NTP answers; a wall-clock deadline would then pass (or never come) in an
   * instant. Across an agent restart the time already spent is taken from the wall clock only when
   * it is plausible; otherwise the update gets its whole deadline again.
   */
  private nowFor(uid: string, record: RollbackRecord, version: string): number {
    const t = record.trying;
    if (!t || t.version !== version) return this.wall();
    let origin = this.records.get(uid)?.gate.origin;
    if (!origin || origin.since !== t.since) {
      const spent = this.wall() - Date.parse(t.since);
      origin = { since: t.since, mono: this.mono() - (spent >= 0 && spent <= PLAUSIBLE_MS ? spent : 0) };
      this.records.make(uid).gate.origin = origin;
    }
    return Date.parse(t.since) + (this.mono() - origin.mono);
  }

  load(): void {
    this.store.load();
  }

  stop(): void {
    this.stopped = true;
    for (const [uid] of this.records.entries()) this.schedule(uid, undefined);
  }

  versionOf(d: DesiredPod): string {
    let v = this.versions.get(d.pod);
    if (!v) {
      v = podVersion(d.pod);
      this.versions.set(d.pod, v);
    }
    return v;
  }

  /**
   * The pod to run for declared `d`: itself, or for an update that was not Ready in time the last
   * version that was. `observed` is how the version just synced does, when judging after a sync.
   */
  gate(d: DesiredPod, observed?: { version: string; readiness: Readiness }): DesiredPod {
    let deadlineMs: number | undefined;
    try {
      deadlineMs = rollbackDeadline(d.pod, this.o.defaultMs, parseDuration);
    } catch {
      // Refused at validation; a pod from before that check is not gated.
    }
    const before = this.store.get(d.uid);
    const now = this.nowFor(d.uid, before, this.versionOf(d));
    const dec = decideRollback(before, {
      declared: { version: this.versionOf(d), pod: d.pod },
      deadlineMs,
      ...(observed ? { observed } : {}),
      now,
      engineUp: this.o.engineUp(),
    });
    const facts = this.records.make(d.uid).gate;
    if (dec.record.trying && dec.record.trying !== before.trying) facts.origin = { since: dec.record.trying.since, mono: this.mono() };
    if (!dec.record.trying) delete facts.origin;
    if (!sameRecord(before, dec.record)) {
      try {
        this.store.set(d.uid, d.key, dec.record);
      } catch (err) {
        // Acted on anyway: after a restart the older record leads to the same verdict again.
        this.o.log.error(`pod ${d.key}: cannot store its rollback record: ${(err as Error).message}`, { pod: d.key });
      }
    }
    this.schedule(d.uid, dec.checkAt === undefined ? undefined : dec.checkAt - now);
    const good = dec.record.good;
    if (dec.rolledBack && good) {
      const message = `version ${this.versionOf(d)} was not Ready within ${formatDuration(deadlineMs ?? 0)}: ${dec.rolledBack}; rolled back to version ${good.version}, the last that was Ready (not tried again until its manifest changes)`;
      this.o.log.warn(`pod ${d.key}: ${message}`, { pod: d.key });
      this.o.rolledBack({ uid: d.uid, name: d.pod.metadata.name, namespace: d.pod.metadata.namespace ?? 'default' }, message);
    }
    let run = d;
    if (dec.run === 'good' && good) {
      const last = facts.running;
      run = last && last.pod === good.pod && last.origin === d.origin ? last : { ...d, pod: good.pod };
    }
    facts.running = run;
    return run;
  }

  /**
   * Whether the verdict on `declared` is known whatever its readiness: its version is the last
   * Ready one and no update is tried or failed (decideRollback then keeps the record as it is and
   * runs it). Each turn of a pod's worker would otherwise work its whole status out for nothing.
   */
  decided(declared: DesiredPod): boolean {
    const r = this.store.get(declared.uid);
    return !r.trying && !r.failed && r.good?.version === this.versionOf(declared);
  }

  /** Why the pod runs an older version than `declared`, if it does: for its status. */
  rolledBack(declared: DesiredPod): { version: string; message: string } | undefined {
    const r = this.store.get(declared.uid);
    return r.failed?.version === this.versionOf(declared) ? rolledBack(r) : undefined;
  }

  /**
   * Forgets pods no longer declared: their timers, what ran and update origins (the rest of their
   * record goes when their worker forgets them), and (when `present` says they are gone) their
   * rollback records.
   */
  prune(declared: ReadonlySet<string>, present: (uid: string) => boolean, sourcesLoaded: boolean): void {
    for (const [uid, r] of this.records.entries()) {
      if (declared.has(uid)) continue;
      this.schedule(uid, undefined);
      delete r.gate.running;
      delete r.gate.origin;
    }
    // Records of pods gone while no agent ran: a pod declared again later starts afresh.
    if (sourcesLoaded) for (const uid of this.store.uids()) if (!declared.has(uid) && !present(uid)) this.store.forget(uid);
  }

  /** The rollback records (files, each also held in memory); the timers, versions run and origins are counted with the pods' records. */
  stateSize(): Record<string, number> {
    return { gateRecords: this.store.size };
  }

  /** Wakes the pod's worker in `inMs` (undefined: no check pending). */
  private schedule(uid: string, inMs: number | undefined): void {
    const facts = this.records.get(uid)?.gate;
    if (facts?.timer) clearTimeout(facts.timer);
    if (facts) delete facts.timer;
    if (inMs === undefined || this.stopped) return;
    const timer = setTimeout(() => {
      const now = this.records.get(uid)?.gate;
      if (now?.timer === timer) delete now.timer;
      this.o.due(uid);
    }, timerDelay(inMs));
    timer.unref();
    this.records.make(uid).gate.timer = timer;
  }
}
