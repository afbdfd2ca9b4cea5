import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(['node', 'podrun', ...args], {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    stdout: new PassThrough(),
    stderr: new PassThrough(),
    isTTY: false,
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('duration flags', () => {
  it('print their defaults as durations', async () => {
    const help = await cli('run', '--help');
    expect(help.out).toContain('(default: 20s, env: PODRUN_RESYNC_PERIOD)');
    expect(help.out).toContain('(default: 5m0s, env: PODRUN_CRASH_BACKOFF_MAX)');
    expect(help.out).not.toMatch(/default: \d{4,}\)/);
  });

  it('refuse a bare number, saying what to write', async () => {
    const r = await cli('apply', '--timeout', '120000', 'x.yaml');
    expect(r.code).toBe(2);
    expect(r.err).toContain(
      "option '--timeout <duration>' argument '120000' is invalid. invalid duration \"120000\": a number needs a unit, e.g. 120000s or 120000ms",
    );
  });
});
