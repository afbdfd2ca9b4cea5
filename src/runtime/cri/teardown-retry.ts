import { EngineRequestError } from '../engine-errors.js';

// A sandbox's teardown is tried again: the kubelet retries a failed StopPodSandbox at its next
// sync, and containerd's network teardown can fail while the kernel still holds the namespace a
// moment ("remove netns: ... device or resource busy"), then pass. Bounded in count, so a runtime
// that keeps refusing still fails the call; only a refusal is retried (gone is done, a runtime that
// is down or stuck is the caller's to report at once).

/** Waits between the attempts: about 4 s in all, well inside a deletion's own bounds. */
export const TEARDOWN_RETRY_DELAYS_MS: readonly number[] = [250, 500, 1000, 2000];

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function isRefusal(err: unknown): boolean {
  return err instanceof EngineRequestError && err.kind === 'refused';
}

/** Runs `op`, again after each delay while it is refused; the last refusal is thrown. */
export async function retryingTeardown<T>(op: () => Promise<T>, o: { delaysMs?: readonly number[]; wait?: (ms: number) => Promise<void> } = {}): Promise<T> {
  const delays = o.delaysMs ?? TEARDOWN_RETRY_DELAYS_MS;
  const wait = o.wait ?? sleep;
  for (let attempt = 0; ; attempt++) {
    try {
      return await op();
    } catch (err) {
      const delay = delays[attempt];
      if (delay === undefined || !isRefusal(err)) throw err;
      await wait(delay);
    }
  }
}
