import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { versionLine } from '../../src/status/version.js';

// `podrun version` names the commit and the build date; the date is the commit's, so two builds
// of one commit are the same bytes (scripts/build-info.mjs, run by every build).
const SCRIPT = fileURLToPath(new URL('../../scripts/build-info.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'podrun-build-info-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const git = (...args: string[]): string =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, GIT_COMMITTER_DATE: '2024-02-03T04:05:06Z', GIT_AUTHOR_DATE: '2024-02-03T04:05:06Z' },
  }).trim();
const record = (env: NodeJS.ProcessEnv = {}): { commit: string; date: string } => {
  execFileSync(process.execPath, [SCRIPT], { cwd: dir, env: { ...process.env, SOURCE_DATE_EPOCH: '', ...env } });
  return JSON.parse(readFileSync(join(dir, 'dist/build-info.json'), 'utf8')) as { commit: string; date: string };
};

describe('the build record', () => {
  it("is the commit and the commit's date, not the clock's", () => {
    git('init', '-q');
    writeFileSync(join(dir, 'a'), 'one\n');
    git('add', 'a');
    git('commit', '-qm', 'one');
    expect(record()).toEqual({ commit: git('rev-parse', 'HEAD'), date: '2024-02-03T04:05:06Z' });
    expect(record({ SOURCE_DATE_EPOCH: '0' }).date).toBe('1970-01-01T00:00:00Z');
  });

  it('says -dirty when the tree differs from the commit', () => {
    writeFileSync(join(dir, 'a'), 'two\n');
    expect(record().commit).toBe(`${git('rev-parse', 'HEAD')}-dirty`);
  });

  it("is on podrun version's line", () => {
    expect(versionLine()).toMatch(/^podrun \d+\.\d+\.\d+\S* \(commit (unknown|[0-9a-f]{40}(-dirty)?), built (unknown|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)\)$/);
  });
});
