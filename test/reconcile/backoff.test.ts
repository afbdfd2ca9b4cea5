import { describe, expect, it } from 'vitest';
import { Backoff } from '../../src/reconcile/backoff.js';
import { PodTurns } from '../../src/reconcile/pod-turns.js';

describe('crash-loop backoff', () => {
  it('restarts at once, then waits 10 s doubling to the cap, from the finish time', () => {
    const b = new Backoff({ initialMs: 10_000, maxMs: 40_000, resetMs: 600_000 });
    const k = Backoff.key('uid', 'c', 'h1');
    let now = 1_000_000;
    const waits: number[] = [];
    for (let i = 0; i < 6; i++) {
      const left = b.remaining(k, now, now); // the container finished just now
      waits.push(left);
      now += left;
      b.restarted(k, now);
      now += 1000; // runs for a second, then crashes
    }
    expect(waits).toEqual([0, 10_000, 20_000, 40_000, 40_000, 40_000]);
  });

  it('counts time already spent since the finish, resets after quiet time, and is per spec hash', () => {
    const b = new Backoff({ initialMs: 10_000, maxMs: 300_000, resetMs: 600_000 });
    const k = Backoff.key('uid', 'c', 'h1');
    b.restarted(k, 0);
    expect(b.remaining(k, 1_000, 4_000)).toBe(7_000);
    expect(b.remaining(Backoff.key('uid', 'c', 'h2'), 1_000, 4_000)).toBe(0);
    expect(b.remaining(k, 700_000, 700_000)).toBe(0); // more than resetMs since the last restart
    b.forgetPod('uid');
    expect(b.remaining(k, 1_000, 1_000)).toBe(0);
  });
});

describe('pod workers', () => {
  it('coalesce changes to a pod while it syncs, and bound parallelism', async () => {
    let active = 0;
    let peak = 0;
    const runs: string[] = [];
    const release: (() => void)[] = [];
    const w = new PodTurns(async (uid) => {
      active++;
      peak = Math.max(peak, active);
      runs.push(uid);
      await new Promise<void>((r) => release.push(r));
      active--;
      return undefined;
    }, 2);
    for (const u of ['a', 'b', 'c']) w.enqueue(u);
    w.enqueue('a');
    w.enqueue('a');
    await new Promise((r) => setTimeout(r, 10));
    expect(runs).toEqual(['a', 'b']);
    while (runs.length < 4 || active > 0) {
      release.shift()?.();
      await new Promise((r) => setTimeout(r, 5));
    }
    await w.idle();
    expect(runs.sort()).toEqual(['a', 'a', 'b', 'c']); // the two extra enqueues of a became one re-run
    expect(peak).toBe(2);
    await w.stop();
  });
});
