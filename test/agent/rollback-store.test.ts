import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RollbackStore } from '../../src/agent/rollback-store.js';
import type { Logger } from '../../src/log/logger.js';
import type { Pod } from '../../src/manifest/types.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(): { stateDir: string; errors: string[]; log: Logger } {
  const stateDir = mkdtempSync(join(tmpdir(), 'podrun-rollback-'));
  dirs.push(stateDir);
  const errors: string[] = [];
  const none = (): undefined => undefined;
  return { stateDir, errors, log: { debug: none, info: none, warn: none, error: (m) => void errors.push(m) } };
}

const pod: Pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web' }, spec: { containers: [{ name: 'app', image: 'busybox' }] } };

describe('the rollback records', () => {
  it('survive a restart, and a pod uid of any shape never names a path', () => {
    const { stateDir, log } = setup();
    const a = new RollbackStore(stateDir, log);
    const uid = '../../etc/passwd';
    a.set(uid, 'default/web', { good: { version: 'v1', pod, at: '2026-11-30T10:00:00.000Z' }, trying: { version: 'v2', since: '2026-11-30T10:01:00.000Z' } });
    expect(readdirSync(join(stateDir, 'rollback'))).toEqual([expect.stringMatching(/^[0-9a-f]{32}\.json$/)]);
    const b = new RollbackStore(stateDir, log);
    b.load();
    expect(b.get(uid)).toEqual({ good: { version: 'v1', pod, at: '2026-11-30T10:00:00.000Z' }, trying: { version: 'v2', since: '2026-11-30T10:01:00.000Z' } });
    b.forget(uid);
    expect(readdirSync(join(stateDir, 'rollback'))).toEqual([]);
  });

  it('a damaged record is logged and ignored: its pod runs what its source declares', () => {
    const { stateDir, errors, log } = setup();
    const a = new RollbackStore(stateDir, log);
    a.set('uid-1', 'default/web', { good: { version: 'v1', pod, at: 'x' } });
    const [file] = readdirSync(join(stateDir, 'rollback'));
    writeFileSync(join(stateDir, 'rollback', file ?? ''), '{"uid": "uid-1", "good": {"vers');
    writeFileSync(join(stateDir, 'rollback', 'ffff.json'), JSON.stringify({ uid: 'uid-2', key: 'default/other' }));
    const b = new RollbackStore(stateDir, log);
    b.load();
    expect(b.get('uid-1')).toEqual({});
    expect(b.get('uid-2')).toEqual({});
    expect(errors).toHaveLength(2);
    expect(errors).toEqual(
      expect.arrayContaining([expect.stringContaining('cannot read the rollback record'), expect.stringContaining('not the uid its name is made from')]),
    );
  });
});
