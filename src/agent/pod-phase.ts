/**
 * Where a pod's worker is in its life, as the kubelet's pod worker keeps it (pod_workers.go:
 * SyncPod while the pod is wanted, SyncTerminatingPod until nothing of it runs, SyncTerminatedPod
 * for its volumes, then the worker forgets it). Plain data, moved only by `nextPhase`.
 */
export type PodPhase = 'syncing' | 'terminating' | 'terminated' | 'forgotten';

/** What a transition reads: the desired set's word and what the last look at the engine found. */
export interface PhaseFacts {
  /** The desired set has the pod. */
  declared: boolean;
  /** The engine listed something of the pod at the last look (true when it was not looked at). */
  onEngine: boolean;
  /** The pod's directory is gone. */
  dirGone: boolean;
}

/**
 * One step. A pod declared again while it terminates waits for terminated, then syncs anew (the
 * kubelet lets a pod of the same name start only once the one before has terminated); nothing of
 * the old sync carries over (the worker drops the record on terminated → syncing).
 */
export function nextPhase(phase: PodPhase, f: PhaseFacts): PodPhase {
  switch (phase) {
    case 'syncing':
      return f.declared ? 'syncing' : 'terminating';
    case 'terminating':
      return f.onEngine ? 'terminating' : 'terminated';
    case 'terminated':
      return f.declared ? 'syncing' : f.dirGone ? 'forgotten' : 'terminated';
    case 'forgotten':
      return f.declared ? 'syncing' : 'forgotten';
  }
}

/** Steps until the phase holds: the phases passed through, the first being `phase`, the last where it rests. */
export function settlePhase(phase: PodPhase, f: PhaseFacts): PodPhase[] {
  const path = [phase];
  for (let next = nextPhase(phase, f); next !== path[path.length - 1]; next = nextPhase(next, f)) path.push(next);
  return path;
}
