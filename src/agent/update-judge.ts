import type { DesiredPod } from '../manifest/types.js';
import type { PodCache } from '../pleg/cache.js';
import type { PodTurns } from '../reconcile/pod-turns.js';
import type { DesiredSet } from './desired-set.js';
import type { HealthGate } from './health-gate.js';
import type { PodSyncer } from './pod-syncer.js';

/** What judging a health-gated update reads and moves: the agent's parts. */
export interface JudgeDeps {
  set: Pick<DesiredSet, 'declared' | 'get' | 'replace'>;
  cache: Pick<PodCache, 'connected'>;
  gate: Pick<HealthGate, 'decided' | 'gate' | 'versionOf'>;
  syncer: Pick<PodSyncer, 'readiness' | 'acting'>;
  workers: Pick<PodTurns, 'enqueue'>;
}

/**
 * Judges a health-gated update by how the pod does now (unless the sources moved on meanwhile);
 * true when the pod is to run another version from now on.
 */
export function judge(x: JudgeDeps, uid: string, d: DesiredPod): boolean {
  const declared = x.set.declared(uid);
  if (!declared || x.set.get(uid) !== d || !x.cache.connected || x.gate.decided(declared)) return false;
  const next = x.gate.gate(declared, { version: x.gate.versionOf(d), readiness: x.syncer.readiness(d) });
  if (next === d || (next.pod === d.pod && next.origin === d.origin)) return false;
  x.set.replace(next);
  return true;
}

/**
 * An update's deadline came: judged now, and the worker runs only to act on a rollback; unless
 * the worker is carrying out actions, when the pod is half changed: then right after them.
 */
export function judgeDue(x: JudgeDeps, uid: string): void {
  const d = x.set.get(uid);
  if (!d || !x.cache.connected || x.syncer.acting(uid)) {
    x.workers.enqueue(uid);
    return;
  }
  if (judge(x, uid, d)) x.workers.enqueue(uid);
}
