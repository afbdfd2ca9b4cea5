import type { Logger } from '../log/logger.js';
import { containerHash } from '../manifest/hash.js';
import type { DesiredPod } from '../manifest/types.js';
import { Backoff } from '../reconcile/backoff.js';
import { imageKey, sandboxKey } from '../reconcile/start-backoff.js';
import { specOf } from '../reconcile/lifecycle.js';
import { ContainerImageError, SyncStepFailure } from '../reconcile/sync.js';
import { isPodrunBug } from '../runtime/runtime-types.js';
import type { PodRecord } from './pod-record.js';

/** After a bug of podrun's (a TypeError in a step), the turn is tried again this soon. */
const BUG_RETRY_MS = 5_000;

/** After a failed pull, the next look (which reports ImagePullBackOff) comes this soon. */
const IMAGE_BACKOFF_LOOK_MS = 1000;

export interface FailureBooks {
  log: Logger;
  startFailed?: (type: 'sandbox' | 'init' | 'app', reason: string) => void;
}

/**
 * The record step of a turn whose actions failed: the failure goes to the pod's back-off and, for
 * the user's container, becomes its waiting reason (the kubelet's SyncResult, typed: nothing is
 * read back from a message). Returns when to look again; what is no step's failure (the engine
 * went away mid-turn) is thrown on, for the worker to retry.
 */
export function recordFailure(err: unknown, d: DesiredPod, r: PodRecord, x: FailureBooks, now: number): number {
  if (err instanceof SyncStepFailure) {
    // As the kubelet: CreateContainerError, RunContainerError and a refused sandbox back off
    // like a crash loop (10 s doubling to 5 min), so a bad mount or a missing binary costs
    // the engine one attempt per back-off, not a hot loop.
    const spec = err.container ? specOf(d.pod, err.container) : undefined;
    const key = err.container && spec ? Backoff.key(d.uid, err.container, containerHash(d.pod, spec)) : sandboxKey(d);
    const backoffMs = r.backoff.startFailures.restarted(key, now);
    x.startFailed?.(err.container ? (d.pod.spec.initContainers?.some((c) => c.name === err.container) ? 'init' : 'app') : 'sandbox', err.reason);
    const { container, reason, message } = err.result;
    if (container && reason !== 'FailedCreatePodSandBox') r.waiting.set(container, { reason, message });
    x.log.warn(`pod ${d.key}: ${err.container ? `container ${err.container}` : 'sandbox'}: ${err.message}; retrying in ${Math.round(backoffMs / 1000)}s`, {
      pod: d.key,
      container: err.container ?? 'POD',
      reason: err.reason,
    });
    return backoffMs;
  }
  if (isPodrunBug(err)) {
    // Neither the manifest's fault nor the engine's: podrun's own (a TypeError and the like).
    // Said as such, with its stack, and the turn tried again later; no waiting reason is made
    // up for the user's container.
    x.log.error(`pod ${d.key}: podrun bug during sync, retrying in ${BUG_RETRY_MS / 1000}s: ${err.stack ?? err.message}`, { pod: d.key });
    return BUG_RETRY_MS;
  }
  // The engine went away mid-turn, and the like: the worker logs it and tries again.
  if (!(err instanceof ContainerImageError)) throw err;
  const backoffMs = r.backoff.imagePulls.restarted(imageKey(d, err.container), now);
  // As the kubelet: the attempt that failed says ErrImagePull; the look right after finds the
  // pull in back-off and says ImagePullBackOff until the next attempt (kubectl shows both).
  r.waiting.set(err.container, { reason: err.imageError.reason, message: err.message });
  x.log.warn(`pod ${d.key}: container ${err.container}: ${err.message}; retrying in ${Math.round(backoffMs / 1000)}s`, {
    pod: d.key,
    container: err.container,
    reason: err.imageError.reason,
  });
  return Math.min(backoffMs, IMAGE_BACKOFF_LOOK_MS);
}
