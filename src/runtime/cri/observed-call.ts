import type { RuntimeObserver } from '../runtime-types.js';

/**
 * `fn`, a runtime call, timed and told to the observer under `what` (the runtime operation
 * metrics). The clock is read only when someone listens: `apply` has no observer, and
 * `performance` would load perf_hooks into its start.
 */
export async function observedCall<T>(observer: RuntimeObserver | undefined, what: string, fn: () => Promise<T>): Promise<T> {
  const t0 = observer ? performance.now() : 0;
  let failed = false;
  try {
    return await fn();
  } catch (err) {
    failed = true;
    throw err;
  } finally {
    observer?.call?.(what, (performance.now() - t0) / 1000, failed);
  }
}
