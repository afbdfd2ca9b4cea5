import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { validateCommand } from '../../src/cli/validate.js';
import { copyCases, EXPECTED, INVALID_DIR, makeSpecialCases } from '../fixtures/invalid-cases.js';

async function validate(path: string): Promise<{ code: number; lines: string[] }> {
  const lines: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l), stdout: process.stdout, stderr: process.stderr, isTTY: false };
  const code = await validateCommand([path], io);
  return { code, lines };
}

const scratch = mkdtempSync(join(tmpdir(), 'podrun-invalid-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('every invalid manifest gets its one clear line', () => {
  const names = readdirSync(INVALID_DIR)
    .filter((n) => n !== 'expected.json')
    .sort();

  it('has at least 150 committed cases, each with an expectation', () => {
    expect(names.length).toBeGreaterThanOrEqual(150);
    expect(Object.keys(EXPECTED).sort()).toEqual(names);
  });

  it.each(names)('%s', async (name) => {
    const path = join(INVALID_DIR, name);
    const r = await validate(path);
    expect(r.code).toBe(1);
    expect(r.lines).toEqual([`${path}:${EXPECTED[name]}`]);
  });

  it('refuses a FIFO, symlink loops, a dangling link, a directory named *.yaml and an oversized file without hanging', async () => {
    const special = makeSpecialCases(scratch);
    for (const [name, line] of Object.entries(special)) {
      const path = join(scratch, name);
      const r = await validate(path);
      expect([name, r.code]).toEqual([name, 1]);
      // A directory given by path is read as a directory of manifests; inside a watched directory it is an error.
      if (name === 'special-directory.yaml') continue;
      expect(r.lines).toEqual([`${path}:${line}`]);
    }
    const dangling = await validate(join(scratch, 'special-dangling.yaml'));
    expect(dangling.lines).toEqual([`${join(scratch, 'special-dangling.yaml')}: cannot read: no such file or directory`]);
    // The same files inside a directory given to validate: each one is named, none is skipped in silence.
    const all = mkdtempSync(join(tmpdir(), 'podrun-invalid-dir-'));
    try {
      copyCases(all);
      const specials = makeSpecialCases(all);
      const r = await validate(all);
      expect(r.code).toBe(1);
      const want = { ...EXPECTED, ...specials, 'special-dangling.yaml': ' cannot read: no such file or directory' };
      expect(r.lines.filter((l) => !l.includes('warning:')).sort()).toEqual(
        Object.entries(want)
          .map(([n, l]) => `${join(all, n)}:${l}`)
          .sort(),
      );
    } finally {
      rmSync(all, { recursive: true, force: true });
    }
  });
});
