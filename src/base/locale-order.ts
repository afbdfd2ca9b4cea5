/**
 * `a.localeCompare(b)` without ICU's collator where the answer is known: the collator's first use
 * maps about 2 MB of ICU's data into the process for good (the idle agent's resident memory, which
 * sorts its sources' origins at every merge). Under an English or POSIX locale (V8 takes C and
 * POSIX as en-US), printable ASCII collates by ICU's root order: every character has one primary
 * weight, punctuation and symbols before digits before letters, a letter's case only a tertiary
 * difference (lower before upper, the first difference deciding). Strings of those characters are
 * compared here; anything else, or another locale, goes to localeCompare as before, so the answer
 * is localeCompare's for every input (test/base/locale-order.test.ts compares them).
 */

/** Printable ASCII in ICU's root primary order; a letter's two cases share a weight. */
const ROOT_ORDER = ' _-,;:!?.\'"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz';

/** Primary weight by code unit (0: not handled here). */
const WEIGHT = new Uint8Array(128);
for (let i = 0; i < ROOT_ORDER.length; i++) {
  WEIGHT[ROOT_ORDER.charCodeAt(i)] = i + 1;
  WEIGHT[ROOT_ORDER[i]!.toUpperCase().charCodeAt(0)] = i + 1;
}

/**
 * Whether the process's default collation is ICU's root order for ASCII: ICU takes the default
 * locale from the first of LC_ALL, LC_MESSAGES and LANG that is set; unset, empty, C, POSIX and
 * any English one qualify (a Lithuanian locale puts y before j, a Czech one ch after h).
 */
export function rootOrderLocale(env: Record<string, string | undefined>): boolean {
  const id = env.LC_ALL || env.LC_MESSAGES || env.LANG || '';
  if (id.includes('@')) return false;
  const language = id.split(/[_.]/)[0];
  return language === '' || language === 'C' || language === 'POSIX' || language === 'en';
}

const rootOrder = rootOrderLocale(process.env);

/** ICU's root order for two strings of printable ASCII; undefined when either has anything else. */
export function rootCompare(a: string, b: string): -1 | 0 | 1 | undefined {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    const wx = x < 128 ? WEIGHT[x]! : 0;
    const wy = y < 128 ? WEIGHT[y]! : 0;
    if (wx === 0 || wy === 0) return undefined;
    if (wx !== wy) return wx < wy ? -1 : 1;
  }
  for (const s of [a, b]) for (let i = n; i < s.length; i++) if (s.charCodeAt(i) >= 128 || WEIGHT[s.charCodeAt(i)] === 0) return undefined;
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  // Equal but for case: the first difference decides, lower case first.
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return x > y ? -1 : 1;
  }
  return 0;
}

/** The sign `a.localeCompare(b)` gives (-1, 0 or 1). */
export function localeOrder(a: string, b: string): number {
  return (rootOrder ? rootCompare(a, b) : undefined) ?? a.localeCompare(b);
}
