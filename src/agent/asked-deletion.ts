import type { Logger } from '../log/logger.js';
import type { PodCache } from '../pleg/cache.js';
import { graceOf } from '../reconcile/lifecycle.js';
import type { PodWorkers } from '../reconcile/workers.js';
import type { DeleteAnswer, DeleteAsk } from '../server/client.js';
import { forgetApplied } from '../sources/applied-sets.js';
import { APPLY_PREFIX } from '../sources/origin-names.js';
import type { DesiredSet } from './desired-set.js';
import type { PodWorker } from './pod-worker.js';

export interface AskedDeletionDeps {
  stateDir: string;
  set: Pick<DesiredSet, 'get'>;
  cache: Pick<PodCache, 'pod'>;
  worker: Pick<PodWorker, 'requestDeletion'>;
  workers: Pick<PodWorkers, 'kill'>;
  log: Logger;
}

/** The kubelet's default grace period, for a pod the agent has neither declared nor seen. */
const DEFAULT_GRACE_S = 30;

/**
 * `podrun delete` asked over the socket: the agent, the state directory's one actor, deletes. The
 * pods are forgotten in their applied sets first (so nothing makes them again), then each pod's
 * worker is handed the deletion (its sync under way cancelled) and the answer waits until each is gone.
 */
export async function deleteAsked(x: AskedDeletionDeps, ask: DeleteAsk): Promise<DeleteAnswer> {
  forgetApplied(x.stateDir, new Set(ask.pods.map((p) => p.key)));
  const at = new Date().toISOString();
  const pods = await Promise.all(
    ask.pods.map(async (p) => {
      const d = x.set.get(p.uid);
      const o = x.cache.pod(p.uid);
      const grace = ask.override ?? (o ? graceOf(o) : (d?.pod.spec.terminationGracePeriodSeconds ?? DEFAULT_GRACE_S));
      x.log.info(`pod ${p.key}: deletion asked (grace ${grace}s)`, { pod: p.key });
      const gone = x.worker.requestDeletion(p.uid, {
        ...(ask.override !== undefined ? { override: ask.override } : {}),
        deletionTimestamp: at,
        deletionGracePeriodSeconds: grace,
        untilUndeclared: d?.origin.source.startsWith(APPLY_PREFIX) ?? false,
      });
      x.workers.kill(p.uid);
      await gone;
      return { key: p.key };
    }),
  );
  return { pods };
}
