import type { Logger } from '../log/logger.js';
import type { SetExpiry } from '../sources/source.js';

/** setTimeout's longest delay; a later expiry is looked at again after this. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/**
 * Says in the log, once, that a signed set in force has expired. Expiry is reported, never
 * enforced (a wrong clock must not take pods down), so without this line the node goes on running
 * a stale set and only a scrape or `get node` would tell. A timer wakes at the next expiry, so the
 * line comes when the set expires, not at some later poll; each set (origin, expiry, version) is
 * named once per agent, and forgotten once it is no longer in force.
 */
export class ExpiryLog {
  private readonly warned = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly o: { expiries: () => SetExpiry[]; log: Logger; now?: () => number }) {}

  /** Looks at the sets in force now (after a source changed, and at each expiry). */
  check(): void {
    if (this.stopped) return;
    const now = this.o.now?.() ?? Date.now();
    const inForce = new Set<string>();
    let next = Infinity;
    for (const e of this.o.expiries()) {
      const key = `${e.origin}\n${e.expires.toISOString()}\n${e.version ?? ''}`;
      inForce.add(key);
      if (e.expires.getTime() > now) {
        next = Math.min(next, e.expires.getTime());
        continue;
      }
      if (this.warned.has(key)) continue;
      this.warned.add(key);
      const version = e.version !== undefined ? ` (version ${e.version})` : '';
      this.o.log.warn(
        `signed set ${e.origin}${version} expired at ${e.expires.toISOString()}: its pods keep running (expiry is reported, not enforced) until a newer signed set is published`,
        { source: e.origin },
      );
    }
    for (const key of this.warned) if (!inForce.has(key)) this.warned.delete(key);
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (next !== Infinity) {
      this.timer = setTimeout(() => this.check(), Math.min(Math.max(next - now + 1, 1), MAX_DELAY_MS));
      this.timer.unref();
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
