import { timerDelay } from '../base/duration.js';

/**
 * One worker per pod, pods in parallel up to a bound. Changes to a pod while it syncs coalesce
 * into one more sync afterwards; a sync may ask to run again later (backoff, retry after error).
 * A pod that is to go (`kill`) does not wait for its sync to end: the sync's signal is aborted, so
 * it stops at its next step, and the next run (the deletion) comes right after, as the kubelet's
 * pod worker cancels a sync's context when the pod is to terminate (pod_workers.go UpdatePod).
 */
export class PodTurns {
  private readonly running = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** The signal of each sync under way: aborted when its pod is to go. */
  private readonly syncs = new Map<string, AbortController>();
  private active = 0;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly sync: (uid: string, signal: AbortSignal) => Promise<number | undefined>,
    private readonly concurrency = 4,
    private readonly onError: (uid: string, err: Error) => void = () => undefined,
  ) {}

  /** Pods with a worker running, queued, or waiting on a timer (every per-pod entry held here). */
  get size(): number {
    return new Set([...this.running, ...this.dirty, ...this.queued, ...this.queue, ...this.timers.keys(), ...this.syncs.keys()]).size;
  }

  /** Pods whose worker runs now or is about to (not those waiting on a timer). */
  working(): Set<string> {
    return new Set([...this.running, ...this.dirty, ...this.queued]);
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

  /**
   * The pod is to go: a sync under way is cancelled (it stops at its next step; what it was doing
   * with the engine at that moment ends first), a delayed run comes now, and the pod's next run
   * follows at once.
   */
  kill(uid: string): void {
    if (this.stopped) return;
    const t = this.timers.get(uid);
    if (t) {
      clearTimeout(t);
      this.timers.delete(uid);
    }
    this.syncs.get(uid)?.abort();
    this.enqueue(uid);
  }

  private pump(): void {
    while (!this.stopped && this.active < this.concurrency && this.queue.length > 0) {
      const uid = this.queue.shift() as string;
      this.queued.delete(uid);
      this.active++;
      this.running.add(uid);
      // Fire-and-forget: run() catches what a sync throws and ends by pumping the queue itself.
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
    const sync = new AbortController();
    this.syncs.set(uid, sync);
    try {
      again = await this.sync(uid, sync.signal);
    } catch (err) {
      // A cancelled sync ends however it ends: the run that follows is what matters.
      if (!sync.signal.aborted) {
        again = 5_000;
        // Anything may be thrown (`throw undefined` too): reading `.message` of it here would
        // reject this run, which nobody awaits (an agent crash), and strand the pod as running.
        this.onError(uid, err instanceof Error ? err : new Error(`sync failed: ${String(err)}`));
      }
    }
    this.syncs.delete(uid);
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
    this.timers.clear();
    const deadline = Date.now() + maxWaitMs;
    while (this.active > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }
}
