import type { Logger } from '../log/logger.js';
import type { PodCache } from '../pleg/cache.js';
import { removePodDir } from '../reconcile/lifecycle.js';
import { removalActions } from '../reconcile/plan.js';
import { executeRemoval } from '../reconcile/sync.js';
import type { ObservedPod } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import type { PodSyncer } from './pod-syncer.js';

export interface DeletionDeps {
  rt: PodEngine;
  cache: PodCache;
  log: Logger;
  /** Its records keep the name each deletion began under (`PodRecord.deleting`). */
  syncer: Pick<PodSyncer, 'probes' | 'events' | 'known' | 'refresh' | 'records'>;
}

/** What a deletion turn leaves to the worker: when to look again, and whether the pod is gone for good. */
export interface DeletionTurn {
  again?: number;
  gone: boolean;
}

/**
 * One worker turn of a pod no longer declared (and that may be deleted): its containers stopped
 * and removed, then its directory, which outlives every container of the pod (a container the
 * cache had not seen yet still binds from it: the pod is looked at again instead). A pod with no
 * container left loses the directory a cancelled sync may have made, if this agent worked on it
 * (so a pod merely not loaded yet loses nothing). `override`: delete's grace period, asked of the agent.
 */
export async function deletionTurn(x: DeletionDeps, uid: string, o: ObservedPod | undefined, override?: number): Promise<DeletionTurn> {
  if (!o) {
    if (x.syncer.known(uid) && !(await removePodDir(x.rt, uid))) return { again: 1000, gone: false };
    // Another hand (a `podrun delete` beside the agent) removed the last of it between two turns.
    const r = x.syncer.records.get(uid);
    const begun = r?.deleting;
    if (begun !== undefined) x.log.info(`pod ${begun}: deleted`, { pod: begun });
    if (r) delete r.deleting;
    return { gone: true };
  }
  const pod = `${o.namespace}/${o.name}`;
  x.log.info(`pod ${pod}: no longer declared; deleting`, { pod });
  const r = x.syncer.records.make(uid);
  r.deleting = pod;
  x.syncer.probes.removePod(uid);
  let whole = false;
  try {
    // Deletion is the plan's outcome, carried out by the executor, as every other action is.
    whole = await executeRemoval(x.rt, o, removalActions(o, override), (type, reason, message, fieldPath) =>
      x.syncer.events.record({ uid, name: o.name, namespace: o.namespace }, type, reason, message, fieldPath),
    );
  } catch (err) {
    await x.syncer.refresh(uid);
    throw err;
  }
  if (whole) {
    // The engine listed nothing of the pod after the removals: gone, whatever the cache has yet to
    // hear (an event of a call that was under way when the deletion began). Said before the
    // cache is brought up to date, which is bookkeeping (an inspect per container, seconds on a
    // loaded engine), not the deletion.
    x.log.info(`pod ${pod}: deleted`, { pod });
    delete r.deleting;
  }
  await x.syncer.refresh(uid);
  return whole ? { gone: true } : { again: 1000, gone: false };
}
