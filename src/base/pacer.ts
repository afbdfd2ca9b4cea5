import { timerDelay } from './duration.js';

/**
 * Runs `fn` when poked, and keeps what it costs to a share of the time: at once, unless the last
 * run ended less than `gap` times its own duration ago; then once at the end of that wait, for
 * every poke in it. A burst of pokes costs one run per wait, and a lone poke waits for nothing.
 */
export class Pacer {
  private timer: NodeJS.Timeout | undefined;
  private nextAt = Number.NEGATIVE_INFINITY;
  private stopped = false;

  constructor(private readonly fn: () => void, private readonly gap: number) {}

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
    const t0 = performance.now();
    try {
      this.fn();
    } finally {
      const end = performance.now();
      this.nextAt = end + (end - t0) * this.gap;
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
