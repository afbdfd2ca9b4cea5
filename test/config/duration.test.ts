import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/base/duration.js';

describe('durations as Go writes them', () => {
  it('reads compound and fractional values', () => {
    expect(parseDuration('1m30s')).toBe(90_000);
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    expect(parseDuration('2h45m')).toBe(9_900_000);
    expect(parseDuration('1500us')).toBe(1.5);
    expect(parseDuration('1500µs')).toBe(1.5);
    expect(parseDuration('1ms500µs')).toBe(1.5);
    // Go takes the Greek mu too (U+03BC, beside the micro sign U+00B5).
    expect(parseDuration('1500\u03bcs')).toBe(1.5);
    expect(parseDuration('0')).toBe(0);
    expect(parseDuration('0s')).toBe(0);
    expect(parseDuration('+20s')).toBe(20_000);
  });

  it('refuses a bare number with a hint, and what Go refuses', () => {
    expect(() => parseDuration('120000')).toThrow('invalid duration "120000": a number needs a unit, e.g. 120000s or 120000ms');
    for (const bad of ['', 's', '1d', '1m30', '-5s', '1 m', 'ten seconds', '1s2']) expect(() => parseDuration(bad), bad).toThrow(/invalid duration/);
  });

  it('prints as Go does, and reads back what it prints', () => {
    const cases: [number, string][] = [
      [0, '0s'],
      [500, '500ms'],
      [20_000, '20s'],
      [90_000, '1m30s'],
      [300_000, '5m0s'],
      [3_600_000, '1h0m0s'],
      [5_400_000, '1h30m0s'],
      [1500, '1.5s'],
    ];
    for (const [ms, text] of cases) {
      expect(formatDuration(ms)).toBe(text);
      expect(parseDuration(text)).toBe(ms);
    }
  });
});
