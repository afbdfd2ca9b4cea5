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
  /** The exited instance the last restart was counted for (crash back-off only). */
  after?: string;
}

/** The pod a key belongs to: keys are `<pod uid>/<container or POD>/<hash or image>`. */
function podOf(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? key : key.slice(0, slash);
}

export class Backoff {
  /** By pod, then by key: a pod's entries are found (and pruned) without a scan of everyone's. */
  private readonly pods = new Map<string, Map<string, Entry>>();
  private count = 0;

  constructor(private readonly policy: BackoffPolicy = DEFAULT_BACKOFF) {}

  static key(podUid: string, container: string, hash: string): string {
    return `${podUid}/${container}/${hash}`;
  }

  private get(key: string): Entry | undefined {
    return this.pods.get(podOf(key))?.get(key);
  }

  private delete(key: string): void {
    const uid = podOf(key);
    const pod = this.pods.get(uid);
    if (!pod?.delete(key)) return;
    this.count--;
    if (pod.size === 0) this.pods.delete(uid);
  }

  /** Milliseconds left before `key` may restart, given when the container finished. 0 = now. */
  remaining(key: string, finishedAt: number, now: number): number {
    const e = this.get(key);
    if (!e) return 0;
    if (now - e.lastRestart > this.policy.resetMs) {
      this.delete(key);
      return 0;
    }
    return Math.max(0, finishedAt + e.nextMs - now);
  }

  /** Milliseconds left before `key` may be tried again, counted from its last attempt. */
  remainingSinceLast(key: string, now: number): number {
    const e = this.get(key);
    return e ? Math.max(0, e.lastRestart + e.nextMs - now) : 0;
  }

  /** The back-off the next restart of `key` waits (0: none yet, or forgotten after quiet time). */
  currentDelay(key: string, now: number): number {
    const e = this.get(key);
    return e && now - e.lastRestart <= this.policy.resetMs ? e.nextMs : 0;
  }

  /**
   * Records a restart of `key` at `now`; returns the delay the following restart will wait.
   * `after`: the exited instance it restarts from. A second restart from the same one (its
   * replacement seen "never started", or its exit told twice) is not a second crash, and leaves
   * the delay where the first put it: one exit advances the back-off once.
   */
  restarted(key: string, now: number, after?: string): number {
    const e = this.get(key);
    const fresh = !e || now - e.lastRestart > this.policy.resetMs;
    if (!fresh && after !== undefined && e.after === after) return e.nextMs;
    const nextMs = fresh ? this.policy.initialMs : Math.min(e.nextMs * 2, this.policy.maxMs);
    const uid = podOf(key);
    let pod = this.pods.get(uid);
    if (!pod) this.pods.set(uid, (pod = new Map()));
    if (!pod.has(key)) this.count++;
    pod.set(key, { nextMs, lastRestart: now, ...(after !== undefined ? { after } : {}) });
    return nextMs;
  }

  /** Forgets one key (it worked: the next failure starts the sequence over). */
  forget(key: string): void {
    this.delete(key);
  }

  /** Entries held (each a pod's container and spec, or image), and any pod left with none (a leak). */
  get size(): number {
    let empty = 0;
    for (const pod of this.pods.values()) if (pod.size === 0) empty++;
    return this.count + empty;
  }

  /** Drops the state of pods that are gone. */
  forgetPod(podUid: string): void {
    this.count -= this.pods.get(podUid)?.size ?? 0;
    this.pods.delete(podUid);
  }

  /**
   * Keeps only the pod's entries in `current` (the keys of its spec now): an update gives a
   * container a new hash or image, and the back-off of what it was before starts afresh, as the
   * kubelet's does, instead of staying for the pod's life.
   */
  retainPod(podUid: string, current: ReadonlySet<string>): void {
    const pod = this.pods.get(podUid);
    if (!pod) return;
    for (const key of [...pod.keys()]) if (!current.has(key)) this.delete(key);
  }
}
