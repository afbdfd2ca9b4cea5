import type { Logger } from '../log/logger.js';
import type { DesiredPod } from '../manifest/types.js';
import type { PodCache } from '../pleg/cache.js';
import type { ObservedPod } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import { deletionTurn } from './pod-deletion.js';
import { settlePhase } from './pod-phase.js';
import type { DeletionRequest } from './pod-record.js';
import type { PodSyncer } from './pod-syncer.js';

export interface PodWorkerDeps {
  rt: PodEngine;
  cache: PodCache;
  log: Logger;
  syncer: PodSyncer;
  /** Whether a pod nobody declares may be deleted (desired-set.ts: its source has loaded and it is the agent's). */
  mayDelete: (o: ObservedPod) => boolean;
}

/** What a worker turn leaves: when to look again, whether it synced a declared pod, whether the pod is to be forgotten. */
export interface WorkerTurn {
  again?: number;
  synced: boolean;
  forgotten: boolean;
}

/**
 * How long an applied pod deleted is held while its set still declares it: the set is read again
 * within a second; one applied again meanwhile is declared for good, and is made anew after this.
 */
export const UNDECLARE_WAIT_MS = 10_000;

/** Whether the pod, deleted as asked, is still held back from being made again. */
function held(r: DeletionRequest, d: DesiredPod | undefined, now: number): boolean {
  return d !== undefined && r.untilUndeclared && now - (r.goneAt ?? now) < UNDECLARE_WAIT_MS;
}

/**
 * The pod's worker (the kubelet's pod_workers.go): each turn reads the pod's phase from its record
 * and moves it by plain facts (pod-phase.ts). Syncing runs the syncer's turn; terminating runs
 * the plan's removal (pod-deletion.ts) until the engine lists nothing of the pod and its directory
 * is gone; then the pod is forgotten, or, declared again meanwhile, syncs anew. What it keeps
 * of a pod (the name its deletion is said by, a deletion asked) is in the pod's record (pod-record.ts).
 */
export class PodWorker {
  constructor(private readonly x: PodWorkerDeps) {}

  /** The pod left the desired set (under the name `key`): if this agent worked on it, its deletion is said by that name. */
  leaving(uid: string, key: string | undefined): void {
    const r = this.x.syncer.records.worked(uid);
    if (key !== undefined && r) r.deleting = key;
  }

  /** Resolves once the pod is gone from the engine (and, with `untilUndeclared`, nothing makes it again). */
  requestDeletion(uid: string, r: Omit<DeletionRequest, 'gone' | 'waiters'>): Promise<void> {
    const rec = this.x.syncer.records.make(uid);
    const held = rec.awaitedDeletion;
    const request = held && !held.gone ? held : { ...r, gone: false, waiters: [] };
    // A second delete with a shorter grace shortens it, as the kubelet honours a smaller deletion grace.
    if (r.override !== undefined && (request.override === undefined || r.override < request.override)) {
      request.override = r.override;
      request.deletionGracePeriodSeconds = r.override;
    }
    rec.awaitedDeletion = request;
    return new Promise((resolve) => request.waiters.push(resolve));
  }

  /** The deletion asked and under way, as readers show it. */
  deletionShown(uid: string): { deletionTimestamp: string; deletionGracePeriodSeconds: number } | undefined {
    const r = this.x.syncer.records.get(uid)?.awaitedDeletion;
    return r && !r.gone ? { deletionTimestamp: r.deletionTimestamp, deletionGracePeriodSeconds: r.deletionGracePeriodSeconds } : undefined;
  }

  /** The deletion asked of the pod, answered and no longer held: it goes. */
  private settled(uid: string): void {
    const r = this.x.syncer.records.get(uid);
    if (r) delete r.awaitedDeletion;
  }

  async turn(uid: string, d: DesiredPod | undefined, signal: AbortSignal): Promise<WorkerTurn> {
    const sup = this.x.syncer;
    const o = this.x.cache.pod(uid);
    const done = sup.records.get(uid)?.awaitedDeletion;
    if (done?.gone) {
      if (held(done, d, Date.now())) return { again: 200, synced: false, forgotten: false };
      this.settled(uid);
    }
    const asked = sup.records.get(uid)?.awaitedDeletion;
    // Protected: its source cannot say it is unwanted, so it is neither synced nor deleted, unless asked.
    if (!d && o && !asked && !this.x.mayDelete(o)) return { synced: false, forgotten: false };
    const declared = d !== undefined && !asked;
    // No record: a pod declared, or one on the engine nobody declares (an agent before this one
    // made it), begins as syncing; neither: nothing of it is known and nothing is removed (a pod
    // whose source has not loaded yet loses nothing).
    const from = sup.phase(uid) ?? (declared || o || asked ? 'syncing' : 'forgotten');
    // Before acting only the desired set's word moves it: the engine is looked at by the removal
    // itself, the cache having perhaps not heard of a create yet.
    let path = settlePhase(from, { declared, onEngine: true, dirGone: false });
    if (path.at(-1) === 'terminating') {
      if (from !== 'terminating') sup.enter(uid, 'terminating');
      const removal = await deletionTurn(this.x, uid, o, asked?.override);
      if (removal.gone && asked) {
        asked.gone = true;
        asked.goneAt = Date.now();
        for (const w of asked.waiters.splice(0)) w();
        if (held(asked, d, asked.goneAt)) return { again: 200, synced: false, forgotten: false };
        this.settled(uid);
      }
      // Once the asked deletion is done, a pod its source still declares is made anew (a static pod's way).
      const stillAsked = sup.records.get(uid)?.awaitedDeletion !== undefined;
      path = settlePhase('terminating', { declared: d !== undefined && !stillAsked, onEngine: !removal.gone, dirGone: removal.gone });
      if (path.at(-1) === 'terminating') return { ...(removal.again !== undefined ? { again: removal.again } : {}), synced: false, forgotten: false };
    }
    const phase = path.at(-1);
    if (phase === 'forgotten') return { synced: false, forgotten: true };
    if (phase !== 'syncing' || !d) return { again: 1000, synced: false, forgotten: false };
    if (path.includes('terminated')) {
      // Declared again while it terminated: it syncs anew, with nothing kept of its sync before.
      sup.renew(uid);
    }
    return { ...(await sup.turn(d, signal)), synced: true, forgotten: false };
  }
}
