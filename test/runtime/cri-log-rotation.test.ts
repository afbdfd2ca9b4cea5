import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { rotateLog, rotationStamp } from '../../src/runtime/cri/log-rotation.js';

// The container log manager's steps on plain files, with a client that reopens (or refuses to).
const root = mkdtempSync(join(tmpdir(), 'podrun-rotate-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function dirWith(files: Record<string, string>): string {
  const d = mkdtempSync(join(root, 'c-'));
  for (const [n, text] of Object.entries(files)) writeFileSync(join(d, n), text);
  return d;
}

describe('CRI log rotation', () => {
  it('stamps as the kubelet (20060102-150405), in UTC', () => {
    expect(rotationStamp(new Date(Date.UTC(2026, 0, 2, 3, 4, 5)))).toBe('20260102-030405');
  });

  it('renames the current log, reopens it, compresses the older rotated ones and keeps maxFiles in all', async () => {
    const d = dirWith({
      '0.log': 'now\n',
      '0.log.20260101-000001.gz': 'x',
      '0.log.20260101-000002.gz': 'y',
      '0.log.20260101-000003': 'three\n',
      '0.log.20260101-000003.gz.tmp': 'half',
      'other.log': 'keep',
    });
    const reopened: string[] = [];
    const client = { reopenContainerLog: async (id: string): Promise<void> => void reopened.push(id) };
    await rotateLog(client, 'c1', join(d, '0.log'), { maxBytes: 1, maxFiles: 4 }, new Date(Date.UTC(2026, 0, 1, 0, 0, 9)));
    expect(reopened).toEqual(['c1']);
    // maxFiles 4: the (reopened) current, the newest rotated, two compressed; the oldest and the temporary gone, foreign files untouched.
    expect(readdirSync(d).sort()).toEqual(['0.log.20260101-000002.gz', '0.log.20260101-000003.gz', '0.log.20260101-000009', 'other.log']);
    expect(readFileSync(join(d, '0.log.20260101-000009'), 'utf8')).toBe('now\n');
    expect(gunzipSync(readFileSync(join(d, '0.log.20260101-000003.gz'))).toString()).toBe('three\n');
  });

  it('a refused reopen renames the log back: nothing lost, the next round tries again', async () => {
    const d = dirWith({ '0.log': 'keep me\n' });
    const client = { reopenContainerLog: async (): Promise<void> => Promise.reject(new Error('runtime says no')) };
    await expect(rotateLog(client, 'c1', join(d, '0.log'), { maxBytes: 1, maxFiles: 5 })).rejects.toThrow(/runtime says no/);
    expect(readdirSync(d)).toEqual(['0.log']);
    expect(readFileSync(join(d, '0.log'), 'utf8')).toBe('keep me\n');
  });

  it('two rotations in one second: the second waits (the names would collide)', async () => {
    const d = dirWith({ '0.log': 'b\n', '0.log.20260101-000009': 'a\n' });
    let reopens = 0;
    await rotateLog(
      { reopenContainerLog: async () => void reopens++ },
      'c1',
      join(d, '0.log'),
      { maxBytes: 1, maxFiles: 5 },
      new Date(Date.UTC(2026, 0, 1, 0, 0, 9)),
    );
    expect(reopens).toBe(0);
    expect(existsSync(join(d, '0.log'))).toBe(true);
  });
});
