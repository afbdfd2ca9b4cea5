import type { Logger } from '../log/logger.js';
import type { DesiredPod } from '../manifest/types.js';
import type { PodCache } from '../pleg/cache.js';
import type { ObservedPod } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import { deletionTurn } from './pod-deletion.js';
import { settlePhase } from './pod-phase.js';
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

/** A deletion asked over the socket (`podrun delete`): the agent, the one actor, carries it out. */
export interface DeletionRequest {
  /** delete's grace period, replacing every container's. */
  override?: number;
  /** What readers show while it runs: the pod Terminating since then, with this grace. */
  deletionTimestamp: string;
  deletionGracePeriodSeconds: number;
  /** Held past the deletion until the desired set drops the pod too (an applied pod forgotten in its set), so it is not made again meanwhile. */
  untilUndeclared: boolean;
  gone: boolean;
  /** When it was gone (ms since the epoch): the hold for `untilUndeclared` ends UNDECLARE_WAIT_MS later. */
  goneAt?: number;
  waiters: (() => void)[];
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
 * is gone; then the pod is forgotten, or, declared again meanwhile, syncs anew.
 */
export class PodWorker {
  /** Pods whose deletion began, by uid, with their names: "deleted" is said of each once it is gone. */
  readonly deleting = new Map<string, string>();
  /** Deletions asked of this agent, by uid: a pod asked is terminated even while declared. */
  readonly requests = new Map<string, DeletionRequest>();

  constructor(private readonly x: PodWorkerDeps) {}

  /** The pod left the desired set (under the name `key`): if this agent worked on it, its deletion is said by that name. */
  leaving(uid: string, key: string | undefined): void {
    if (key !== undefined && this.x.syncer.known(uid)) this.deleting.set(uid, key);
  }

  /** Resolves once the pod is gone from the engine (and, with `untilUndeclared`, nothing makes it again). */
  requestDeletion(uid: string, r: Omit<DeletionRequest, 'gone' | 'waiters'>): Promise<void> {
    const held = this.requests.get(uid);
    const request = held && !held.gone ? held : { ...r, gone: false, waiters: [] };
    // A second delete with a shorter grace shortens it, as the kubelet honours a smaller deletion grace.
    if (r.override !== undefined && (request.override === undefined || r.override < request.override)) {
      request.override = r.override;
      request.deletionGracePeriodSeconds = r.override;
    }
    this.requests.set(uid, request);
    return new Promise((resolve) => request.waiters.push(resolve));
  }

  /** The deletion asked and under way, as readers show it. */
  deletionShown(uid: string): { deletionTimestamp: string; deletionGracePeriodSeconds: number } | undefined {
    const r = this.requests.get(uid);
    return r && !r.gone ? { deletionTimestamp: r.deletionTimestamp, deletionGracePeriodSeconds: r.deletionGracePeriodSeconds } : undefined;
  }

  /** What is kept of the pod goes, but for a deletion someone still waits for. */
  forget(uid: string): void {
    this.deleting.delete(uid);
    if (this.requests.get(uid)?.gone) this.requests.delete(uid);
  }

  async turn(uid: string, d: DesiredPod | undefined, signal: AbortSignal): Promise<WorkerTurn> {
    const sup = this.x.syncer;
    const o = this.x.cache.pod(uid);
    const done = this.requests.get(uid);
    if (done?.gone) {
      if (held(done, d, Date.now())) return { again: 200, synced: false, forgotten: false };
      this.requests.delete(uid);
    }
    const asked = this.requests.get(uid);
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
      const removal = await deletionTurn({ ...this.x, deleting: this.deleting }, uid, o, asked?.override);
      if (removal.gone && asked) {
        asked.gone = true;
        asked.goneAt = Date.now();
        for (const w of asked.waiters.splice(0)) w();
        if (held(asked, d, asked.goneAt)) return { again: 200, synced: false, forgotten: false };
        this.requests.delete(uid);
      }
      // Once the asked deletion is done, a pod its source still declares is made anew (a static pod's way).
      path = settlePhase('terminating', { declared: d !== undefined && !this.requests.has(uid), onEngine: !removal.gone, dirGone: removal.gone });
      if (path.at(-1) === 'terminating') return { ...(removal.again !== undefined ? { again: removal.again } : {}), synced: false, forgotten: false };
    }
    const phase = path.at(-1);
    if (phase === 'forgotten') return { synced: false, forgotten: true };
    if (phase !== 'syncing' || !d) return { again: 1000, synced: false, forgotten: false };
    if (path.includes('terminated')) {
      // Declared again while it terminated: it syncs anew, with nothing kept of the pod before.
      sup.forget(uid);
      this.deleting.delete(uid);
    }
    return { ...(await sup.turn(d, signal)), synced: true, forgotten: false };
  }
}
