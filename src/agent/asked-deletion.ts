import type { Logger } from '../log/logger.js';
import type { PodCache } from '../pleg/cache.js';
import { graceOf } from '../reconcile/lifecycle.js';
import type { PodTurns } from '../reconcile/pod-turns.js';
import type { PodEngine } from '../runtime/roles.js';
import type { DeleteAnswer, DeleteAsk, PullAnswer, PullAsk } from '../server/client.js';
import { forgetApplied } from '../sources/applied-sets.js';
import { APPLY_PREFIX } from '../sources/origin-names.js';
import type { DesiredSet } from './desired-set.js';
import type { PodWorker } from './pod-worker.js';

export interface AskedDeletionDeps {
  stateDir: string;
  set: Pick<DesiredSet, 'get'>;
  cache: Pick<PodCache, 'pod' | 'refreshPod'>;
  worker: Pick<PodWorker, 'requestDeletion'>;
  workers: Pick<PodTurns, 'kill'>;
  log: Logger;
}

/** The kubelet's default grace period, for a pod the agent has neither declared nor seen. */
const DEFAULT_GRACE_S = 30;

/**
 * What the CLI asks of the agent, the state directory's one actor, over its socket. `podrun delete` asked over the socket: the agent, the state directory's one actor, deletes. The
 * pods are forgotten in their applied sets first (so nothing makes them again), then each pod's
 * worker is handed the deletion (its sync under way cancelled) and the answer waits until each is gone.
 */
export async function deleteAsked(x: AskedDeletionDeps, ask: DeleteAsk): Promise<DeleteAnswer> {
  forgetApplied(x.stateDir, new Set(ask.pods.map((p) => p.key)));
  const at = new Date().toISOString();
  const pods = await Promise.all(
    ask.pods.map(async (p) => {
      const d = x.set.get(p.uid);
      // The asker saw the pod on the engine; a cache not told of it yet would take it for gone.
      if (!x.cache.pod(p.uid) && p.ids?.length) {
        const sandboxes = new Set(p.sandboxIds);
        await x.cache.refreshPod(
          p.uid,
          p.ids.map((id) => [id, sandboxes.has(id) ? 'sandbox' : 'container']),
        );
      }
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

/** `podrun pull` asked over the socket: every image at once, each with its own outcome. */
export async function pullAsked(rt: Pick<PodEngine, 'ensureImage'>, ask: PullAsk): Promise<PullAnswer> {
  const images = await Promise.all(
    ask.images.map((i) =>
      rt.ensureImage(i.image, i.policy).then(
        () => ({ image: i.image }),
        (err: unknown) => ({ image: i.image, error: (err as Error).message }),
      ),
    ),
  );
  return { images };
}
