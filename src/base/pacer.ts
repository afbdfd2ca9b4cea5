import { timerDelay } from './duration.js';

/**
 * What a synchronous run cost, in ms: the CPU time the process spent on it, never more than the
 * time that passed. Not the time that passed alone: on a loaded machine the thread is descheduled
 * for much of a run (at load 15 on 2 cores, a merge of 5 ms of CPU took 250 ms), and a wait of 9
 * times that held every change, deletions too, back for 2 s.
 */
export function cpuCost(fn: () => void): number {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  fn();
  const c = process.cpuUsage(c0);
  return Math.min(performance.now() - t0, (c.user + c.system) / 1000);
}

/** The time that passed: a run's cost where the test drives a fake clock. */
export function wallCost(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

/**
 * Runs `fn` when poked, and keeps what it costs to a share of the time: at once, unless the last
 * run ended less than `gap` times its own cost ago; then once at the end of that wait, for every
 * poke in it. A burst of pokes costs one run per wait, and a lone poke waits for nothing.
 */
export class Pacer {
  private timer: NodeJS.Timeout | undefined;
  private nextAt = Number.NEGATIVE_INFINITY;
  private stopped = false;

  constructor(
    private readonly fn: () => void,
    private readonly gap: number,
    private readonly cost: (fn: () => void) => number = cpuCost,
  ) {}

  poke(): void {
    if (this.timer || this.stopped) return;
    const wait = this.nextAt - performance.now();
    if (wait <= 0) {
      this.run();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.run();
    }, timerDelay(wait));
    this.timer.unref();
  }

  /** Runs now (a pending run is folded into this one). */
  run(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    let spent = 0;
    try {
      spent = this.cost(this.fn);
    } finally {
      this.nextAt = performance.now() + spent * this.gap;
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
