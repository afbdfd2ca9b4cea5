import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_TIMER_MS, timerDelay } from '../../src/base/duration.js';
import { PodWorkers } from '../../src/reconcile/workers.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('the pod workers', () => {
  it('a re-run asked for beyond what a timer can hold waits, instead of firing at once and again', async () => {
    vi.useFakeTimers();
    const runs: string[] = [];
    const w = new PodWorkers(async (uid) => {
      runs.push(uid);
      return undefined;
    });
    w.enqueue('a', 30 * 24 * 3600_000); // a crash back-off of 30 days (--crash-backoff-max 720h)
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toEqual([]);
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS);
    expect(runs).toEqual(['a']);
    await w.stop();
  });

  it('timer delays are clamped to what Node can hold', () => {
    expect([timerDelay(-5), timerDelay(1500), timerDelay(MAX_TIMER_MS + 1), timerDelay(Number.POSITIVE_INFINITY)]).toEqual([0, 1500, MAX_TIMER_MS, MAX_TIMER_MS]);
  });
});
