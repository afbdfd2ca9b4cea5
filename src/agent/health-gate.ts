import { formatDuration, parseDuration } from '../config/duration.js';
import type { Logger } from '../log/logger.js';
import { podVersion } from '../manifest/hash.js';
import type { DesiredPod } from '../manifest/types.js';
import { decideRollback, rollbackDeadline, rolledBack, type Readiness, type RollbackRecord } from '../reconcile/rollback.js';
import type { PodRef } from '../status/events.js';
import { RollbackStore } from './rollback-store.js';

export interface HealthGateOptions {
  stateDir: string;
  /** `--rollback-after`: the deadline for pods without the annotation (0: they are not gated). */
  defaultMs: number;
  log: Logger;
  /** Whether the engine can be reached now (an update's clock starts only then). */
  engineUp: () => boolean;
  /** Wakes a pod's worker, to judge its update at the deadline. */
  wake: (uid: string) => void;
  /** A rollback: its event, and the metric. */
  rolledBack: (pod: PodRef, message: string) => void;
}

function sameRecord(a: RollbackRecord, b: RollbackRecord): boolean {
  return a.good?.version === b.good?.version && a.trying?.version === b.trying?.version && a.trying?.since === b.trying?.since && a.failed?.version === b.failed?.version;
}

/**
 * Health-gated updates in the agent: between the declared pods and the workers, it says which
 * version of each pod to run (`decideRollback`), stores each decision before it is acted on, and
 * wakes a pod's worker at its deadline. The workers never know: they are given a pod, as always.
 */
export class HealthGate {
  private readonly store: RollbackStore;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly versions = new WeakMap<object, string>();
  /** What each pod was last given to run, so an unchanged answer is the same object. */
  private readonly running = new Map<string, DesiredPod>();
  private stopped = false;

  constructor(private readonly o: HealthGateOptions) {
    this.store = new RollbackStore(o.stateDir, o.log);
  }

  load(): void {
    this.store.load();
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
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
    const dec = decideRollback(before, { declared: { version: this.versionOf(d), pod: d.pod }, deadlineMs, ...(observed ? { observed } : {}), now: Date.now(), engineUp: this.o.engineUp() });
    if (!sameRecord(before, dec.record)) {
      try {
        this.store.set(d.uid, d.key, dec.record);
      } catch (err) {
        // Acted on anyway: after a restart the older record leads to the same verdict again.
        this.o.log.error(`pod ${d.key}: cannot store its rollback record: ${(err as Error).message}`, { pod: d.key });
      }
    }
    this.schedule(d.uid, dec.checkAt);
    const good = dec.record.good;
    if (dec.rolledBack && good) {
      const message = `version ${this.versionOf(d)} was not Ready within ${formatDuration(deadlineMs ?? 0)}: ${dec.rolledBack}; rolled back to version ${good.version}, the last that was Ready (not tried again until its manifest changes)`;
      this.o.log.warn(`pod ${d.key}: ${message}`, { pod: d.key });
      this.o.rolledBack({ uid: d.uid, name: d.pod.metadata.name, namespace: d.pod.metadata.namespace ?? 'default' }, message);
    }
    let run = d;
    if (dec.run === 'good' && good) {
      const last = this.running.get(d.uid);
      run = last && last.pod === good.pod && last.origin === d.origin ? last : { ...d, pod: good.pod };
    }
    this.running.set(d.uid, run);
    return run;
  }

  /** Why the pod runs an older version than `declared`, if it does: for its status. */
  rolledBack(declared: DesiredPod): { version: string; message: string } | undefined {
    const r = this.store.get(declared.uid);
    return r.failed?.version === this.versionOf(declared) ? rolledBack(r) : undefined;
  }

  /** Forgets pods no longer declared: their timers, and (when `present` says they are gone) their records. */
  prune(declared: ReadonlySet<string>, present: (uid: string) => boolean, sourcesLoaded: boolean): void {
    for (const uid of [...this.timers.keys()]) if (!declared.has(uid)) this.schedule(uid, undefined);
    for (const uid of [...this.running.keys()]) if (!declared.has(uid)) this.running.delete(uid);
    // Records of pods gone while no agent ran: a pod declared again later starts afresh.
    if (sourcesLoaded) for (const uid of this.store.uids()) if (!declared.has(uid) && !present(uid)) this.store.forget(uid);
  }

  /** The pod was deleted: its record goes with it. */
  forget(uid: string): void {
    this.schedule(uid, undefined);
    this.running.delete(uid);
    this.store.forget(uid);
  }

  private schedule(uid: string, at: number | undefined): void {
    const t = this.timers.get(uid);
    if (t) clearTimeout(t);
    this.timers.delete(uid);
    if (at === undefined || this.stopped) return;
    const timer = setTimeout(() => {
      this.timers.delete(uid);
      this.o.wake(uid);
    }, Math.max(0, at - Date.now()));
    timer.unref();
    this.timers.set(uid, timer);
  }
}
