import { describe, expect, it } from 'vitest';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppliedSource, appliedFiles, resolveMoves } from '../../src/sources/applied-source.js';
import { appliedDir, appliedHolders, forgetApplied } from '../../src/sources/applied-sets.js';
import { mergeOrigins, type OriginPods } from '../../src/sources/merge.js';
import type { PodSource } from '../../src/sources/source.js';
import { pod, recordSet, stateDir } from './applied-fixtures.js';

// A pod applied again from elsewhere moves between two set files in two writes. Whatever mix of
// old and new files the agent's source holds, the pod is declared once: never twice (a conflict),
// never nowhere (a deletion).

/** A copy of a state directory's applied sets, `replaced` taken from `from` instead. */
function copyOf(state: string, from?: string, replaced?: string): string {
  const d = stateDir('podrun-moves-');
  cpSync(appliedDir(state), appliedDir(d), { recursive: true });
  if (from && replaced) cpSync(join(appliedDir(from), replaced), join(appliedDir(d), replaced));
  return d;
}

/** What a directory source holds after reading the set files of `state` (one first scan). */
async function viewOf(state: string): Promise<OriginPods[]> {
  const s = appliedFiles(state);
  await s.start(() => undefined);
  await s.stop();
  return s.snapshot();
}

/** A source whose view is set by hand, as the directory source's may be: any mix of old and new files. */
class HandView implements PodSource {
  readonly name = 'hand';
  readonly ready = true;
  view: OriginPods[] = [];
  snapshot = (): OriginPods[] => this.view;
  errors = (): never[] => [];
  owns = (): boolean => true;
  canForget = (): boolean => true;
  start = async (): Promise<void> => undefined;
  stop = async (): Promise<void> => undefined;
}

const declared = (view: OriginPods[], key: string): string[] => view.flatMap((o) => o.pods.filter((d) => d.key === key).map(() => o.origin));

describe('a pod applied again from elsewhere, as the agent reads the sets', () => {
  it('is declared once, with no conflict, whichever of the two writes the source has read', async () => {
    const disk = stateDir('podrun-moves-');
    await recordSet(disk, 'aaaa', [pod('web', 'busybox:1', 'file:/a.yaml'), pod('db', 'busybox:1', 'file:/a.yaml')], false);
    const before = copyOf(disk);
    await recordSet(disk, 'bbbb', [pod('web', 'busybox:2', 'stdin')], false);
    expect(readdirSync(appliedDir(disk)).sort()).toEqual(['aaaa.json', 'bbbb.json']);
    // The disk between the two writes: the new set written, the old one not yet changed.
    const between = copyOf(before, disk, 'bbbb.json');

    const hand = new HandView();
    const source = new AppliedSource(hand, disk);
    hand.view = await viewOf(before);
    expect(declared(source.snapshot(), 'default/web')).toEqual(['apply:aaaa']);

    // Read between the writes, or the new set read and the old set's change not yet: once, in the new set.
    for (const at of [between, disk]) {
      const s = new AppliedSource(hand, at);
      hand.view = await viewOf(between);
      s.snapshot();
      const view = s.snapshot();
      expect(declared(view, 'default/web')).toEqual(['apply:bbbb']);
      expect(mergeOrigins(view, new Map([['default/web', 'apply:aaaa']])).conflicts).toEqual([]);
    }

    // The old set's change read, the new set not yet (it waits to settle): still declared, as it was.
    const oldSetRead = copyOf(disk);
    rmSync(join(appliedDir(oldSetRead), 'bbbb.json'));
    hand.view = await viewOf(oldSetRead);
    const held = source.snapshot();
    expect(declared(held, 'default/web')).toEqual(['apply:aaaa']);
    expect(held.flatMap((o) => o.pods).find((d) => d.key === 'default/web')?.pod.spec.containers[0]?.image).toBe('busybox:1');

    // Then the new set read: the pod is there, once.
    hand.view = await viewOf(disk);
    expect(declared(source.snapshot(), 'default/web')).toEqual(['apply:bbbb']);
  });

  it('a pod deleted is gone at once, and a pod held by no set on disk is not kept', async () => {
    const disk = stateDir('podrun-moves-');
    await recordSet(disk, 'aaaa', [pod('web'), pod('db')], false);
    const hand = new HandView();
    const source = new AppliedSource(hand, disk);
    hand.view = [{ origin: 'apply:aaaa', pods: [pod('web'), pod('db')] }];
    source.snapshot();
    forgetApplied(disk, new Set(['default/web']));
    hand.view = [{ origin: 'apply:aaaa', pods: [pod('db')] }];
    expect(declared(source.snapshot(), 'default/web')).toEqual([]);
  });

  it('newest stamp wins; sets written before stamps (a tie) are left to the merge as before', () => {
    const a = { origin: 'apply:aaaa', pods: [pod('web', 'busybox:1')] };
    const b = { origin: 'apply:bbbb', pods: [pod('web', 'busybox:2')] };
    const holders = (sa: number, sb: number) => () =>
      new Map([
        [
          'default/web',
          [
            { setId: 'aaaa', stamp: sa },
            { setId: 'bbbb', stamp: sb },
          ],
        ],
      ]);
    expect(declared(resolveMoves([a, b], new Map(), holders(3, 2)), 'default/web')).toEqual(['apply:aaaa']);
    expect(declared(resolveMoves([a, b], new Map(), holders(0, 0)), 'default/web')).toEqual(['apply:aaaa', 'apply:bbbb']);
    // A set that no longer holds it on disk loses to one that does, even one written before stamps.
    const onlyB = () => new Map([['default/web', [{ setId: 'bbbb', stamp: 0 }]]]);
    expect(declared(resolveMoves([a, b], new Map(), onlyB), 'default/web')).toEqual(['apply:bbbb']);
  });

  it('a move stamps the new set above every set on disk, and reads a set written before stamps', async () => {
    const disk = stateDir('podrun-moves-');
    // As the previous release wrote it: no stamps.
    mkdirSync(appliedDir(disk));
    writeFileSync(
      join(appliedDir(disk), 'aaaa.json'),
      JSON.stringify({ apiVersion: 'v1', kind: 'PodList', sources: { 'default/web': 'file:/a.yaml' }, items: [pod('web').pod, pod('db').pod] }),
      { flag: 'w' },
    );
    await recordSet(disk, 'bbbb', [pod('web', 'busybox:2', 'stdin')], false);
    const h = appliedHolders(disk);
    expect(h.get('default/web')).toEqual([{ setId: 'bbbb', stamp: 1 }]);
    expect(h.get('default/db')).toEqual([{ setId: 'aaaa', stamp: 0 }]);
    await recordSet(disk, 'aaaa', [pod('web', 'busybox:3')], false);
    expect(appliedHolders(disk).get('default/web')).toEqual([{ setId: 'aaaa', stamp: 2 }]);
    expect(JSON.parse(readFileSync(join(appliedDir(disk), 'aaaa.json'), 'utf8')).sources).toEqual({ 'default/web': 'file:/a.yaml' });
  });

  it('a hand-edited set whose items are no pods is refused by every reader, which go on, and is kept', async () => {
    const disk = stateDir('podrun-moves-');
    await recordSet(disk, 'aaaa', [pod('web')], false);
    const bad = JSON.stringify({ apiVersion: 'v1', kind: 'PodList', stamps: { 'default/x': 'soon' }, items: [42, { metadata: null }] });
    writeFileSync(join(appliedDir(disk), 'cccc.json'), bad);
    expect(() => appliedHolders(disk)).not.toThrow();
    expect(() => forgetApplied(disk, new Set(['default/web']))).not.toThrow();
    await recordSet(disk, 'bbbb', [pod('db')], false);
    expect(readFileSync(join(appliedDir(disk), 'cccc.json'), 'utf8')).toBe(bad);
    expect([...appliedHolders(disk).keys()]).toEqual(['default/db']);
  });
});
