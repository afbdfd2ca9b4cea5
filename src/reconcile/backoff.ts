/**
 * Crash-loop backoff as the kubelet keeps it: the first restart is immediate, then 10 s doubling
 * to a 300 s cap, measured from the container's finish; keyed by pod, container and spec hash (a
 * spec change starts afresh); forgotten after 10 min without a restart. Pure state + clock.
 */
export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
  /** A restart more than this after the previous one starts the sequence over. */
  resetMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 10_000, maxMs: 300_000, resetMs: 600_000 };

interface Entry {
  /** Delay that applies to the next restart after this one. */
  nextMs: number;
  lastRestart: number;
}

export class Backoff {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly policy: BackoffPolicy = DEFAULT_BACKOFF) {}

  static key(podUid: string, container: string, hash: string): string {
    return `${podUid}/${container}/${hash}`;
  }

  /** Milliseconds left before `key` may restart, given when the container finished. 0 = now. */
  remaining(key: string, finishedAt: number, now: number): number {
    const e = this.entries.get(key);
    if (!e) return 0;
    if (now - e.lastRestart > this.policy.resetMs) {
      this.entries.delete(key);
      return 0;
    }
    return Math.max(0, finishedAt + e.nextMs - now);
  }

  /** Milliseconds left before `key` may be tried again, counted from its last attempt. */
  remainingSinceLast(key: string, now: number): number {
    const e = this.entries.get(key);
    return e ? Math.max(0, e.lastRestart + e.nextMs - now) : 0;
  }

  /** The back-off the next restart of `key` waits (0: none yet, or forgotten after quiet time). */
  currentDelay(key: string, now: number): number {
    const e = this.entries.get(key);
    return e && now - e.lastRestart <= this.policy.resetMs ? e.nextMs : 0;
  }

  /** Records a restart of `key` at `now`; returns the delay the following restart will wait. */
  restarted(key: string, now: number): number {
    const e = this.entries.get(key);
    const fresh = !e || now - e.lastRestart > this.policy.resetMs;
    const nextMs = fresh ? this.policy.initialMs : Math.min(e.nextMs * 2, this.policy.maxMs);
    this.entries.set(key, { nextMs, lastRestart: now });
    return nextMs;
  }

  /** Forgets one key (it worked: the next failure starts the sequence over). */
  forget(key: string): void {
    this.entries.delete(key);
  }

  /** Entries held (each a pod's container and spec, or image). */
  get size(): number {
    return this.entries.size;
  }

  /** Drops the state of pods that are gone. */
  forgetPod(podUid: string): void {
    for (const k of this.entries.keys()) if (k.startsWith(`${podUid}/`)) this.entries.delete(k);
  }
}
