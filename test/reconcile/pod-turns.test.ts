import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_TIMER_MS, timerDelay } from '../../src/base/duration.js';
import { PodTurns } from '../../src/reconcile/pod-turns.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('the pod workers', () => {
  it('a re-run asked for beyond what a timer can hold waits, instead of firing at once and again', async () => {
    vi.useFakeTimers();
    const runs: string[] = [];
    const w = new PodTurns(async (uid) => {
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
    expect([timerDelay(-5), timerDelay(1500), timerDelay(MAX_TIMER_MS + 1), timerDelay(Number.POSITIVE_INFINITY)]).toEqual([
      0,
      1500,
      MAX_TIMER_MS,
      MAX_TIMER_MS,
    ]);
  });

  it('a kill while the pod syncs aborts that sync, and the next run (the deletion) follows it at once', async () => {
    const runs: string[] = [];
    const errors: string[] = [];
    let release = (): void => undefined;
    const w = new PodTurns(
      async (uid, signal) => {
        runs.push(`${uid} start`);
        if (runs.length === 1) {
          // A create that would wait a long time for its turn; it gives up when the signal aborts.
          await new Promise<void>((resolve, reject) => {
            release = resolve;
            signal.addEventListener('abort', () => reject(new Error('cancelled')), { once: true });
          });
        }
        runs.push(`${uid} end${signal.aborted ? ' (aborted)' : ''}`);
        return undefined;
      },
      Number.POSITIVE_INFINITY,
      (uid, err) => errors.push(`${uid}: ${err.message}`),
    );
    w.enqueue('a');
    await new Promise((r) => setImmediate(r));
    w.enqueue('a'); // a change: coalesces, does not cancel
    await new Promise((r) => setImmediate(r));
    expect(runs).toEqual(['a start']);
    w.kill('a');
    await w.idle();
    expect(runs).toEqual(['a start', 'a start', 'a end']);
    // The cancelled sync's failure is not an error of the pod's.
    expect(errors).toEqual([]);
    release();
    await w.stop();
  });

  it('a change while the pod syncs is run after the sync, which is not cancelled', async () => {
    const seen: boolean[] = [];
    let release = (): void => undefined;
    const w = new PodTurns(async (_uid, signal) => {
      if (seen.length === 0) await new Promise<void>((r) => (release = r));
      seen.push(signal.aborted);
      return undefined;
    });
    w.enqueue('a');
    await new Promise((r) => setImmediate(r));
    w.enqueue('a');
    release();
    await w.idle();
    expect(seen).toEqual([false, false]);
    await w.stop();
  });

  it('a kill brings a delayed run (a back-off) forward', async () => {
    vi.useFakeTimers();
    const runs: string[] = [];
    const w = new PodTurns(async (uid) => {
      runs.push(uid);
      return undefined;
    });
    w.enqueue('a', 300_000);
    await vi.advanceTimersByTimeAsync(10);
    expect(runs).toEqual([]);
    w.kill('a');
    await vi.advanceTimersByTimeAsync(10);
    expect(runs).toEqual(['a']);
    // The timer went with it: no second run when it would have fired.
    await vi.advanceTimersByTimeAsync(300_000);
    expect(runs).toEqual(['a']);
    expect(w.size).toBe(0);
    await w.stop();
  });
});

describe('a sync that throws what is not an Error', () => {
  it('is reported and retried, not an unhandled rejection that strands the pod', async () => {
    vi.useFakeTimers();
    const errors: string[] = [];
    let runs = 0;
    const w = new PodTurns(
      async () => {
        runs++;
        if (runs === 1) throw undefined; // a library that throws a non-Error: the case under test
        return undefined;
      },
      4,
      (_uid, err) => errors.push(err.message),
    );
    w.enqueue('a');
    await vi.advanceTimersByTimeAsync(0);
    expect(errors).toEqual(['sync failed: undefined']);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(runs).toBe(2);
    expect(w.working().size).toBe(0);
    await w.stop();
  });

  it('runs one sync of a pod at a time, however often it is woken, coalescing the wake-ups into one more; other pods run beside it', async () => {
    const running = new Map<string, number>();
    let most = 0;
    const runs: string[] = [];
    let release = (): void => undefined;
    const held = new Promise<void>((r) => (release = r));
    const w = new PodTurns(async (uid) => {
      running.set(uid, (running.get(uid) ?? 0) + 1);
      most = Math.max(most, running.get(uid) ?? 0);
      runs.push(uid);
      if (uid === 'a' && runs.filter((x) => x === 'a').length === 1) await held;
      running.set(uid, (running.get(uid) ?? 0) - 1);
      return undefined;
    });
    w.enqueue('a');
    await new Promise((r) => setImmediate(r));
    for (let i = 0; i < 50; i++) w.enqueue('a');
    w.enqueue('b');
    await new Promise((r) => setImmediate(r));
    // b ran while a's first sync was held; a has not run again meanwhile.
    expect(runs).toEqual(['a', 'b']);
    release();
    await w.idle();
    expect(runs).toEqual(['a', 'b', 'a']);
    expect(most).toBe(1);
    await w.stop();
  });
});
