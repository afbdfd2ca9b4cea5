import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { localeOrder, rootCompare, rootOrderLocale } from '../../src/base/locale-order.js';

// src/base/locale-order.ts orders printable ASCII itself, so that sorting the agent's origins does
// not map ICU's collation data: its answer must be localeCompare's under an English locale.
const icu = (a: string, b: string): number => Math.sign(a.localeCompare(b, 'en-US'));

// Strings built from pieces that share prefixes and differ by case, punctuation and digits.
const pieces = [...' _-,;:!?.\'"()[]{}@*/\\&#%`^+<=>|~$0129azAZmM', 'a', 'A', 'dir:', '/etc/', '.yaml', 'apply:', 'web', 'Web', '-1', '_1'];
const asciiString = fc.array(fc.constantFrom(...pieces), { maxLength: 8 }).map((xs) => xs.join(''));

describe('localeOrder', () => {
  it('orders every pair of printable ASCII characters as ICU does', () => {
    const chars = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i));
    const wrong = chars.flatMap((a) => chars.filter((b) => rootCompare(a, b) !== icu(a, b)).map((b) => `${a}${b}`));
    expect(wrong).toEqual([]);
  });

  it('orders strings of printable ASCII as ICU does: prefixes, case, punctuation', () => {
    fc.assert(
      fc.property(asciiString, asciiString, (a, b) => rootCompare(a, b) === icu(a, b)),
      { numRuns: 10_000 },
    );
    for (const [a, b] of [
      ['aB', 'Ab'],
      ['ab', 'a-b'],
      ['web', 'Web'],
      ['a', 'a '],
      ['', 'A'],
      ['x.yaml', 'x-y.yaml'],
      ['dir:/m/a.yaml', 'apply:set'],
    ] as const) {
      expect(rootCompare(a, b)).toBe(icu(a, b));
      expect(rootCompare(b, a)).toBe(icu(b, a));
    }
  });

  it('leaves anything else to localeCompare', () => {
    for (const [a, b] of [
      ['é', 'e'],
      ['a\tb', 'a b'],
      ['ab', 'ab\u0000'],
      ['Straße', 'Strasse'],
    ] as const) {
      expect(rootCompare(a, b)).toBeUndefined();
      expect(Math.sign(localeOrder(a, b))).toBe(Math.sign(a.localeCompare(b)));
    }
  });

  it('takes ASCII order only for a locale that collates as ICU root', () => {
    expect(rootOrderLocale({})).toBe(true);
    expect(rootOrderLocale({ LANG: 'C.UTF-8' })).toBe(true);
    expect(rootOrderLocale({ LANG: 'en_GB.UTF-8' })).toBe(true);
    expect(rootOrderLocale({ LANG: 'POSIX', LC_COLLATE: 'lt_LT.UTF-8' })).toBe(true);
    // ICU reads LC_ALL, then LC_MESSAGES, then LANG.
    expect(rootOrderLocale({ LANG: 'C.UTF-8', LC_MESSAGES: 'lt_LT.UTF-8' })).toBe(false);
    expect(rootOrderLocale({ LANG: 'en_US.UTF-8', LC_ALL: 'cs_CZ.UTF-8' })).toBe(false);
    expect(rootOrderLocale({ LANG: 'de_DE.UTF-8' })).toBe(false);
    expect(rootOrderLocale({ LANG: 'en_US.UTF-8@posix' })).toBe(false);
    // Those locales do order ASCII otherwise: y before j, ch after h.
    expect('y'.localeCompare('j', 'lt')).toBe(-1);
    expect('ch'.localeCompare('h', 'cs')).toBe(1);
  });
});
