/**
 * Durations as Go and kubectl write them (`1m30s`, `500ms`, `2h`), parsed and printed the same
 * way, so a value copied from a KubeletConfiguration or a kubectl flag means the same here. A bare
 * number other than 0 is refused: read as seconds it was a trap (`--timeout 120000` was 33 hours).
 * Hand-written rather than a library: the npm parsers accept bare numbers and words ("1 hour")
 * and so cannot refuse what Go refuses.
 */

// Go's units: micro as `us`, the micro sign (U+00B5) and the Greek mu (U+03BC), as time.ParseDuration takes them.
const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, '\u00b5s': 1e-3, '\u03bcs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds from a Go duration; throws a message that says what to write instead. */
export function parseDuration(text: string): number {
  const s = text.trim();
  if (s === '0') return 0;
  if (/^\d+(\.\d+)?$/.test(s)) throw new Error(`invalid duration "${text}": a number needs a unit, e.g. ${s}s or ${s}ms (units: ms, s, m, h)`);
  if (s.startsWith('-')) throw new Error(`invalid duration "${text}": must not be negative`);
  // µ and μ written as escapes: podrun's bundle stays ASCII, which its start reads fastest (cached-script.ts).
  const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/y;
  let total = 0;
  let i = s.startsWith('+') ? 1 : 0;
  if (i >= s.length) throw new Error(`invalid duration "${text}" (use e.g. 90s, 1m30s, 500ms)`);
  while (i < s.length) {
    part.lastIndex = i;
    const m = part.exec(s);
    if (!m) throw new Error(`invalid duration "${text}" (use e.g. 90s, 1m30s, 500ms; units: ms, s, m, h)`);
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    i = part.lastIndex;
  }
  return total;
}

/** As Go's time.Duration.String: `0s`, `500ms`, `20s`, `1m30s`, `5m0s`, `1h0m0s`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${+ms.toFixed(3)}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = +((ms % 60_000) / 1000).toFixed(3);
  if (h) return `${h}h${m}m${s}s`;
  if (m) return `${m}m${s}s`;
  return `${s}s`;
}

/** The longest delay Node's timers take: a longer one fires after 1 ms instead (a hot loop). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A delay for setTimeout/setInterval from any duration: at most MAX_TIMER_MS (about 24.8 days; a timer that fires early looks again). */
export function timerDelay(ms: number): number {
  return Math.min(Math.max(ms, 0), MAX_TIMER_MS);
}
