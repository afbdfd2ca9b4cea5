import { timerDelay } from '../base/duration.js';

/**
 * One worker per pod, pods in parallel up to a bound. Changes to a pod while it syncs coalesce
 * into one more sync afterwards; a sync may ask to run again later (backoff, retry after error).
 */
export class PodWorkers {
  private readonly running = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private active = 0;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly sync: (uid: string) => Promise<number | undefined>,
    private readonly concurrency = 4,
    private readonly onError: (uid: string, err: Error) => void = () => undefined,
  ) {}

  /** Pods with a worker running, queued, or waiting on a timer. */
  get size(): number {
    return new Set([...this.running, ...this.dirty, ...this.queued, ...this.timers.keys()]).size;
  }

  enqueue(uid: string, afterMs = 0): void {
    if (this.stopped) return;
    if (afterMs > 0) {
      const prev = this.timers.get(uid);
      if (prev) clearTimeout(prev);
      const t = setTimeout(() => {
        this.timers.delete(uid);
        this.enqueue(uid);
      }, timerDelay(afterMs));
      t.unref();
      this.timers.set(uid, t);
      return;
    }
    if (this.running.has(uid)) {
      this.dirty.add(uid);
      return;
    }
    if (this.queued.has(uid)) return;
    this.queued.add(uid);
    this.queue.push(uid);
    this.pump();
  }

  private pump(): void {
    while (!this.stopped && this.active < this.concurrency && this.queue.length > 0) {
      const uid = this.queue.shift() as string;
      this.queued.delete(uid);
      this.active++;
      this.running.add(uid);
      void this.run(uid);
    }
    if (this.active === 0 && this.queue.length === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  private async run(uid: string): Promise<void> {
    let again: number | undefined;
    try {
      again = await this.sync(uid);
    } catch (err) {
      this.onError(uid, err as Error);
      again = 5_000;
    }
    this.running.delete(uid);
    this.active--;
    if (this.dirty.delete(uid)) this.enqueue(uid);
    else if (again !== undefined) this.enqueue(uid, again);
    this.pump();
  }

  /** Resolves when nothing is running or queued (delayed retries do not count). */
  idle(): Promise<void> {
    if (this.active === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /**
   * Stops taking work and waits a moment for what is under way. A sync in a long grace period is
   * not waited for: the engine finishes a stop it was asked for, and the next agent completes
   * whatever is left, so SIGTERM ends the agent promptly.
   */
  async stop(maxWaitMs = 2000): Promise<void> {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.queue.length = 0;
    this.queued.clear();
    const deadline = Date.now() + maxWaitMs;
    while (this.active > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }
}
