import { describe, expect, it } from 'vitest';
import { EngineRequestError, EngineUnavailableError } from '../../src/runtime/engine-errors.js';
import { retryingTeardown, TEARDOWN_RETRY_DELAYS_MS } from '../../src/runtime/cri/teardown-retry.js';

// containerd 1.6 refused a StopPodSandbox once with "remove netns: device or resource busy" while
// the kernel still held the namespace, and `podrun delete` failed (cri-pod-limits, issue 42).
const busy = (): EngineRequestError =>
  new EngineRequestError('stop sandbox: failed to remove network namespace: remove netns: device or resource busy', 500, 'refused');

function scripted(errors: (Error | undefined)[]): { op: () => Promise<string>; calls: () => number } {
  let calls = 0;
  return {
    op: async () => {
      const err = errors[calls++];
      if (err) throw err;
      return 'done';
    },
    calls: () => calls,
  };
}

describe('a sandbox teardown the runtime refuses', () => {
  it('is tried again after each delay until it passes', async () => {
    const waits: number[] = [];
    const s = scripted([busy(), busy(), undefined]);
    expect(await retryingTeardown(s.op, { wait: async (ms) => void waits.push(ms) })).toBe('done');
    expect(s.calls()).toBe(3);
    expect(waits).toEqual(TEARDOWN_RETRY_DELAYS_MS.slice(0, 2));
  });

  it('fails with the last refusal once the delays run out', async () => {
    const waits: number[] = [];
    const s = scripted(Array.from({ length: 10 }, busy));
    await expect(retryingTeardown(s.op, { wait: async (ms) => void waits.push(ms) })).rejects.toThrow(/device or resource busy/);
    expect(s.calls()).toBe(TEARDOWN_RETRY_DELAYS_MS.length + 1);
    expect(waits).toEqual([...TEARDOWN_RETRY_DELAYS_MS]);
  });

  it('is not retried when it is gone, stuck, or the runtime is down', async () => {
    for (const err of [
      new EngineRequestError('stop sandbox: not found', 404, 'not-found'),
      new EngineRequestError('stop sandbox: deadline exceeded', 504, 'failing'),
      new EngineUnavailableError('unix:///run/containerd/containerd.sock', 'connect ECONNREFUSED', 'ECONNREFUSED'),
    ]) {
      const s = scripted([err, undefined]);
      await expect(retryingTeardown(s.op, { wait: async () => undefined })).rejects.toBe(err);
      expect(s.calls()).toBe(1);
    }
  });
});
