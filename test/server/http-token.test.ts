import { chmodSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bearerMatches, defaultTokenPath, loadHttpToken } from '../../src/server/http-token.js';

const dir = (): string => mkdtempSync(join(tmpdir(), 'podrun-token-'));

describe('the TCP port token', () => {
  it('is made once, private, and read back the same', () => {
    const path = defaultTokenPath(dir());
    const token = loadHttpToken(path, true);
    expect(token).toMatch(/^[\w-]{43}$/);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(loadHttpToken(path, true)).toBe(token);
    expect(readFileSync(path, 'utf8').trim()).toBe(token);
  });

  it('is never made at a path the operator named, nor through a link', () => {
    const d = dir();
    expect(() => loadHttpToken(join(d, 'missing'), false)).toThrow(`cannot read the HTTP token file ${join(d, 'missing')}`);
    symlinkSync(join(d, 'elsewhere'), join(d, 'link'));
    expect(() => loadHttpToken(join(d, 'link'), true)).toThrow(`cannot create the HTTP token file ${join(d, 'link')}`);
    expect(() => statSync(join(d, 'elsewhere'))).toThrow();
  });

  it('refuses a file other users can read, or one too short to be a secret', () => {
    const d = dir();
    const open = join(d, 'open');
    writeFileSync(open, 'a'.repeat(40));
    chmodSync(open, 0o640);
    expect(() => loadHttpToken(open, true)).toThrow(`the HTTP token file ${open} is open to other users (mode 0640); refusing it (fix: chmod 600 ${open})`);
    const short = join(d, 'short');
    writeFileSync(short, 'abc\n', { mode: 0o600 });
    expect(() => loadHttpToken(short, false)).toThrow('at least 16 characters');
    const spaced = join(d, 'spaced');
    writeFileSync(spaced, 'abcdefghij klmnopqrstu\n', { mode: 0o600 });
    expect(() => loadHttpToken(spaced, false)).toThrow('without spaces');
  });

  it('matches only the exact token after Bearer', () => {
    const t = 'abcdefghijklmnopqrstuvwxyz012345';
    expect(bearerMatches(`Bearer ${t}`, t)).toBe(true);
    expect(bearerMatches(`bearer ${t}`, t)).toBe(true);
    for (const h of [undefined, '', t, `Bearer ${t}x`, `Bearer ${t.slice(1)}`, `Basic ${t}`, `Bearer ${t} ${t}`, 'Bearer ', `Token ${t}`])
      expect(bearerMatches(h, t), String(h)).toBe(false);
  });
});
