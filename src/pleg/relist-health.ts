// The kubelet's PLEG health check (pkg/kubelet/pleg/generic.go Healthy): unhealthy until a relist
// has succeeded, and again once the last successful relist began longer ago than the threshold
// (3 min beside its 1 s relist). A relist counts from when it began, so one that succeeds after
// taking longer than the threshold still leaves the check failing until the next quick one:
// "the relist took too long" (the many exited containers of kubernetes #45419).

/** The kubelet's relist threshold for its generic PLEG (genericPlegRelistThreshold). */
export const RELIST_THRESHOLD_MS = 3 * 60_000;

/**
 * The threshold for a relist every `periodMs`: the kubelet's 3 min, or more when podrun relists
 * more seldom (`--relist-period`), so that a healthy agent is never judged between two relists.
 */
export function relistThresholdFor(periodMs: number): number {
  return Math.max(RELIST_THRESHOLD_MS, 2 * periodMs + 60_000);
}

/** `3m0s`, `3m0.001s`, `45s`: Go's duration text, as the kubelet's message has it. */
export function goDuration(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = Number((s % 60).toFixed(3));
  return `${h ? `${h}h` : ''}${h || m ? `${m}m` : ''}${rest}s`;
}

export class RelistHealth {
  private lastStart: number | undefined;

  /**
   * `now`: a monotonic clock in ms (a wall clock stepped by NTP must not make the agent unhealthy).
   * process.hrtime rather than performance.now(), whose first use loads perf_hooks (eight of
   * Node's modules) into every apply.
   */
  constructor(
    readonly thresholdMs: number,
    readonly now: () => number = () => Number(process.hrtime.bigint()) / 1e6,
  ) {}

  /** A relist that began at `startedAt` (this clock's time) succeeded. */
  listed(startedAt: number): void {
    if (this.lastStart === undefined || startedAt > this.lastStart) this.lastStart = startedAt;
  }

  /** Why the relist is unhealthy, or undefined when it is not. */
  problem(): string | undefined {
    if (this.lastStart === undefined) return 'pleg has yet to be successful';
    const elapsed = this.now() - this.lastStart;
    if (elapsed > this.thresholdMs) return `pleg was last seen active ${goDuration(elapsed)} ago; threshold is ${goDuration(this.thresholdMs)}`;
    return undefined;
  }
}
