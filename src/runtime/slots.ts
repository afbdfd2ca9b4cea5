/**
 * A counting semaphore: at most `limit` holders at once, the rest wait in order. It bounds what
 * costs the engine (creates, starts, removals, lists), never the time a pod spends waiting (a
 * grace period, a hook, a back-off), so no pod waits behind another's graceful stop.
 */
export class Slots {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((r) => this.waiting.push(r));
    else this.active++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
