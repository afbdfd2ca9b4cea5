import { afterEach, describe, expect, it, vi } from 'vitest';
import { cpuCost, Pacer, wallCost } from '../../src/base/pacer.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('the pacer (source changes merged as often as their cost allows)', () => {
  it('runs a lone poke at once, folds a burst into one run after the wait its cost earns, and runs nothing once stopped', async () => {
    vi.useFakeTimers();
    let runs = 0;
    // Each run costs 10 ms; with a gap of 9 the next may come 90 ms after it ended.
    const p = new Pacer(
      () => {
        runs++;
        vi.advanceTimersByTime(10);
      },
      9,
      wallCost,
    );
    p.poke();
    expect(runs).toBe(1);
    for (let i = 0; i < 50; i++) p.poke();
    expect(runs).toBe(1);
    await vi.advanceTimersByTimeAsync(89);
    expect(runs).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(runs).toBe(2);
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toBe(2);
    // Quiet for longer than the wait: the next poke runs at once again.
    p.poke();
    expect(runs).toBe(3);
    p.poke();
    p.stop();
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toBe(3);
  });

  it('a run that costs nothing lets the next poke run at once', () => {
    let runs = 0;
    const p = new Pacer(() => runs++, 9);
    for (let i = 0; i < 5; i++) p.poke();
    expect(runs).toBeGreaterThanOrEqual(1);
    p.stop();
  });

  it('counts what a run cost the CPU, not the time it was descheduled for', () => {
    // A run that waits 200 ms without working (as a descheduled thread does) costs about nothing.
    const sleep = new Int32Array(new SharedArrayBuffer(4));
    const idle = cpuCost(() => Atomics.wait(sleep, 0, 0, 200));
    expect(idle).toBeLessThan(50);
    // A run that works 50 ms of CPU costs about that (worked until the process has had 50 ms,
    // however long a loaded machine takes to give them).
    // The process's CPU counts its other threads too (GC, the compiler), so it can pass 50 ms
    // before 50 ms have passed: the loop also runs 50 ms of wall time, as cpuCost takes the least.
    const busy = cpuCost(() => {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const giveUp = t0 + 10_000;
      while (performance.now() < giveUp) {
        const c = process.cpuUsage(c0);
        if (c.user + c.system >= 50_000 && performance.now() - t0 >= 50) break;
      }
    });
    expect(busy).toBeGreaterThan(40);
  });

  it('paces by that cost: a run descheduled for 100 ms lets the next come long before 9 × 100 ms', async () => {
    // On a fake clock, the run's 100 ms pass while it does nothing (as a descheduled thread), so
    // its cost is the CPU it really spent (a moment) and nothing waits on how loaded the machine is.
    vi.useFakeTimers();
    let runs = 0;
    const p = new Pacer(() => {
      runs++;
      vi.advanceTimersByTime(100);
    }, 9);
    p.poke();
    p.poke();
    expect(runs).toBe(1);
    // Paced by the time that passed, the second run would wait 900 ms.
    await vi.advanceTimersByTimeAsync(899);
    expect(runs).toBe(2);
    p.stop();
  });
});
