import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { clearTerminating, deletionUnderway, markTerminating } from '../../src/reconcile/terminating.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const stateDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'podrun-terminating-'));
  dirs.push(d);
  return d;
};

describe('deletionUnderway: an agent leaves a pod alone while podrun delete removes it', () => {
  it('is true from the note until it is cleared', () => {
    const s = stateDir();
    expect(deletionUnderway(s, 'u1', Date.now())).toBe(false);
    markTerminating(s, 'u1', 5);
    expect(deletionUnderway(s, 'u1', Date.now())).toBe(true);
    expect(deletionUnderway(s, 'u2', Date.now())).toBe(false);
    clearTerminating(s, 'u1');
    expect(deletionUnderway(s, 'u1', Date.now())).toBe(false);
  });

  it('gives up on a note whose deleter died (grace period and slack past), and removes it', () => {
    const s = stateDir();
    markTerminating(s, 'u1', 5);
    const file = join(s, 'terminating', 'u1.json');
    expect(deletionUnderway(s, 'u1', Date.now() + 34_000)).toBe(true);
    expect(deletionUnderway(s, 'u1', Date.now() + 36_000)).toBe(false);
    expect(existsSync(file)).toBe(false);
  });

  it('takes a damaged note for none', () => {
    const s = stateDir();
    mkdirSync(join(s, 'terminating'), { recursive: true });
    writeFileSync(join(s, 'terminating', 'u1.json'), '{"deletionTimestamp": "nonsense"');
    expect(deletionUnderway(s, 'u1', Date.now())).toBe(false);
    writeFileSync(join(s, 'terminating', 'u1.json'), '{"deletionTimestamp": "nonsense", "deletionGracePeriodSeconds": 1}');
    expect(deletionUnderway(s, 'u1', Date.now())).toBe(false);
  });
});
