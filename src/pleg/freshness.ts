import type { ContainerState, EngineRecord } from '../runtime/observed.js';

// Which of two reads of one container is the newer, when their times cannot say: a relist's list
// is read at some moment while it is in flight, and the worker's own look at a container may land
// in that flight before or after it. The kubelet's cache keeps the newer of two statuses by the
// time each read began (pkg/kubelet/container/cache.go Set); here the container's own life orders
// them, where it can. Pure.

/** A container is made, then runs, then ends, and never goes back (without the engine's restarts). */
const STAGE: Readonly<Record<ContainerState, number | undefined>> = {
  created: 0,
  running: 1,
  exited: 2,
  // Docker's dead or removing, a runtime that could not tell: nothing says where in its life it is.
  unknown: undefined,
};

/**
 * Whether the worker's look saw the container further along its life than the list did, so the
 * look is the newer read and stands over the list's record. A look that saw it no further (the
 * same stage, an earlier one, or one that cannot be placed) keeps the list's word.
 *
 * A container the engine restarts in place runs again after it ended: between two of its runs it
 * is engine-restarting, and its running and exited come round again, so neither of those orders
 * against engine-restarting. Engine-restarting has run once at least: it is after a create.
 */
export function lookIsNewer(listed: EngineRecord, looked: EngineRecord): boolean {
  // A sandbox goes NOTREADY before it is started and again once it ended: its two reads cannot be
  // placed in its life, so the list keeps its word.
  if (listed.kind !== 'container' || looked.kind !== 'container') return false;
  if (listed.engineRestarting || looked.engineRestarting) return listed.state === 'created' && !listed.engineRestarting && looked.engineRestarting === true;
  const was = STAGE[listed.state];
  const now = STAGE[looked.state];
  return was !== undefined && now !== undefined && now > was;
}
