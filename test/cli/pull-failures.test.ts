import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { anyPullFailures, loadPullFailures, recordPullFailures } from '../../src/cli/pull-failures.js';

const root = mkdtempSync(join(tmpdir(), 'podrun-pull-failures-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// apply skips removing each pod's record of a failed pull when none is on record: the answer must
// never be "none" while a record may be there, or a pod that pulls fine would keep ErrImagePull.
describe('anyPullFailures', () => {
  it('is false with no record directory or an empty one, true once a pod has a record', () => {
    const state = join(root, 'a');
    expect(anyPullFailures(state)).toBe(false);
    mkdirSync(join(state, 'pull-failures'), { recursive: true });
    expect(anyPullFailures(state)).toBe(false);
    const failure = { container: 'c', image: 'x:1', reason: 'ErrImagePull', message: 'no', at: '2026-12-02T00:00:00.000Z' };
    recordPullFailures(state, 'uid-1', 'ns/p', [failure]);
    expect(anyPullFailures(state)).toBe(true);
    expect(loadPullFailures(state).get('uid-1')).toEqual([failure]);
    recordPullFailures(state, 'uid-1', 'ns/p', []);
    expect(anyPullFailures(state)).toBe(false);
  });

  it('is true when the directory cannot be read: the records are then removed one by one, as before', () => {
    const state = join(root, 'b');
    mkdirSync(state, { recursive: true });
    writeFileSync(join(state, 'pull-failures'), 'not a directory');
    expect(anyPullFailures(state)).toBe(true);
  });
});
