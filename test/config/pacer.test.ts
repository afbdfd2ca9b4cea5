import { afterEach, describe, expect, it, vi } from 'vitest';
import { Pacer } from '../../src/base/pacer.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('the pacer (source changes merged as often as their cost allows)', () => {
  it('runs a lone poke at once, folds a burst into one run after the wait its cost earns, and runs nothing once stopped', async () => {
    vi.useFakeTimers();
    let runs = 0;
    // Each run costs 10 ms; with a gap of 9 the next may come 90 ms after it ended.
    const p = new Pacer(() => {
      runs++;
      vi.advanceTimersByTime(10);
    }, 9);
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
});
