import { describe, expect, it } from 'vitest';
import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { appliedDir, stageAppliedSet } from '../../src/sources/applied-sets.js';
import { pod, recordSet, stateDir } from './applied-fixtures.js';

// `apply` stages its record while the engine's list comes (its fsync off the engine's path) and
// commits it where it always recorded it: before the engine is changed. Until the commit nothing on
// disk has changed (an agent sees the old set; a failed list leaves no trace); once the commit
// returns, the set is in place for every reader and for a kill -9, whatever fsync still runs.

const images = (state: string, set: string): string[] =>
  (JSON.parse(readFileSync(join(appliedDir(state), `${set}.json`), 'utf8')) as { items: { spec: { containers: { image: string }[] } }[] }).items.map(
    (p) => p.spec.containers[0]!.image,
  );

describe("an apply's record, staged while the engine lists", () => {
  it('changes nothing on disk until committed, and is in place once the commit returns', async () => {
    const disk = stateDir('podrun-staged-');
    await recordSet(disk, 'aaaa', [pod('web', 'busybox:1')], false);
    await recordSet(disk, 'bbbb', [pod('db', 'busybox:1', 'file:/b.yaml')], false);
    const staged = stageAppliedSet(disk, 'aaaa', [pod('web', 'busybox:2'), pod('db', 'busybox:2')], false);
    // An agent reading now sees the sets as they were: the pod still in bbbb, web's old image.
    expect(images(disk, 'aaaa')).toEqual(['busybox:1']);
    expect(images(disk, 'bbbb')).toEqual(['busybox:1']);
    const { durable } = await staged.commit();
    // In place before the directory's fsync is known to have ended: a kill -9 from here keeps it.
    expect(images(disk, 'aaaa')).toEqual(['busybox:2', 'busybox:2']);
    expect(readdirSync(appliedDir(disk))).toEqual(['aaaa.json']);
    await durable;
    expect(readdirSync(appliedDir(disk))).toEqual(['aaaa.json']);
  });

  it('discarded (the list failed), it leaves the old set and no file of its own', async () => {
    const disk = stateDir('podrun-staged-');
    await recordSet(disk, 'aaaa', [pod('web', 'busybox:1')], false);
    const staged = stageAppliedSet(disk, 'aaaa', [pod('web', 'busybox:2')], false);
    staged.discard();
    expect(readdirSync(appliedDir(disk))).toEqual(['aaaa.json']);
    expect(images(disk, 'aaaa')).toEqual(['busybox:1']);
  });

  it('a corrupt set is set aside at the commit, not when staged', async () => {
    const disk = stateDir('podrun-staged-');
    await recordSet(disk, 'aaaa', [pod('web', 'busybox:1')], false);
    writeFileSync(join(appliedDir(disk), 'aaaa.json'), '{not json');
    const staged = stageAppliedSet(disk, 'aaaa', [pod('web', 'busybox:2')], false);
    expect(readdirSync(appliedDir(disk)).filter((n) => !n.startsWith('.'))).toEqual(['aaaa.json']);
    await (
      await staged.commit()
    ).durable;
    const names = readdirSync(appliedDir(disk)).sort();
    expect(names).toHaveLength(2);
    expect(names[0]).toBe('aaaa.json');
    expect(names[1]).toMatch(/^aaaa\.json\.corrupt-\d+$/);
    expect(images(disk, 'aaaa')).toEqual(['busybox:2']);
  });

  it('a state directory that cannot take it fails the commit and changes nothing', async () => {
    if (process.getuid?.() === 0) {
      // root writes through a read-only mode: a file where the directory should be stands in.
      const disk = stateDir('podrun-staged-');
      writeFileSync(appliedDir(disk), 'in the way');
      const staged = stageAppliedSet(disk, 'aaaa', [pod('web')], false);
      await expect(staged.commit()).rejects.toThrow();
      expect(readFileSync(appliedDir(disk), 'utf8')).toBe('in the way');
      return;
    }
    const disk = stateDir('podrun-staged-');
    await recordSet(disk, 'aaaa', [pod('web', 'busybox:1')], false);
    chmodSync(appliedDir(disk), 0o500);
    try {
      const staged = stageAppliedSet(disk, 'aaaa', [pod('web', 'busybox:2')], false);
      await expect(staged.commit()).rejects.toThrow();
      expect(images(disk, 'aaaa')).toEqual(['busybox:1']);
    } finally {
      chmodSync(appliedDir(disk), 0o700);
    }
  });
});
