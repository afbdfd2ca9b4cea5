import { describe, expect, it } from 'vitest';
import { judgeSet, parseSetHeader, type FreshnessRecord } from '../../src/sources/freshness.js';

const now = new Date('2026-12-01T00:00:00Z');
const h = (line: string) => parseSetHeader(Buffer.from(`${line}\napiVersion: v1\n`));

describe('the podrun-set header', () => {
  it('reads version, expiry and node globs from the first line only', () => {
    expect(h('# podrun-set: version=42 expires=2027-06-01T00:00:00Z node=edge-*,gw-1')).toEqual({
      version: 42,
      expires: new Date('2027-06-01T00:00:00Z'),
      nodes: ['edge-*', 'gw-1'],
    });
    expect(h('# a comment')).toEqual({});
    expect(parseSetHeader(Buffer.from('apiVersion: v1\n# podrun-set: version=1\n'))).toEqual({});
  });

  it('refuses a header it cannot read, so a typo never turns the rules off', () => {
    for (const bad of [
      '# podrun-set: version=-1',
      '# podrun-set: verison=3',
      '# podrun-set: expires=tomorrow',
      '# podrun-set: node=a;b',
      '# podrun-set: version=1e3',
    ]) {
      expect(h(bad), bad).toHaveProperty('error');
    }
  });
});

describe('judging a verified set against what the source accepted', () => {
  const v2: FreshnessRecord = { version: 2, current: 'B', superseded: ['A'] };

  it('takes a first set, and a higher version, recording the one it supersedes', () => {
    expect(judgeSet(undefined, 'A', { version: 1 }, now, 'n')).toEqual({ next: { version: 1, current: 'A', superseded: [] } });
    expect(judgeSet(v2, 'C', { version: 3 }, now, 'n')).toEqual({ next: { version: 3, current: 'C', superseded: ['A', 'B'] } });
  });

  it('refuses a replay: a superseded body (versioned or not), a lower or equal version with other bytes, an unversioned set after a versioned one', () => {
    expect(judgeSet(v2, 'A', { version: 1 }, now, 'n')).toMatchObject({ kind: 'replay', reason: expect.stringContaining('superseded') });
    expect(judgeSet({ superseded: ['A'], current: 'B' }, 'A', {}, now, 'n')).toMatchObject({ kind: 'replay' });
    expect(judgeSet(v2, 'X', { version: 1 }, now, 'n')).toMatchObject({
      kind: 'replay',
      reason: 'replay: version 1 is older than version 2, already accepted',
    });
    expect(judgeSet(v2, 'X', { version: 2 }, now, 'n')).toMatchObject({
      kind: 'replay',
      reason: expect.stringContaining('already accepted with other content'),
    });
    expect(judgeSet(v2, 'X', {}, now, 'n')).toMatchObject({ kind: 'replay', reason: expect.stringContaining('has no version') });
  });

  it('refuses an expired set and one for another node, but always keeps the set in force', () => {
    expect(judgeSet(v2, 'C', { version: 3, expires: new Date('2026-11-30T00:00:00Z') }, now, 'n')).toMatchObject({ kind: 'expired' });
    expect(judgeSet(v2, 'C', { version: 3, nodes: ['edge-*'] }, now, 'gw-1')).toMatchObject({
      kind: 'node',
      reason: 'the set is signed for node edge-*, not this node (gw-1)',
    });
    expect(judgeSet(v2, 'C', { version: 3, nodes: ['gw-?', 'edge-*'] }, now, 'edge-7')).toHaveProperty('next');
    // The offline-boot cache of the set in force, expired meanwhile: kept (a clock never takes pods down).
    expect(judgeSet(v2, 'B', { version: 2, expires: new Date('2020-01-01T00:00:00Z') }, now, 'n')).toEqual({ next: v2 });
  });

  it('rolls back only forward: the old pods signed again under a higher version are taken', () => {
    expect(judgeSet(v2, 'A2', { version: 3 }, now, 'n')).toEqual({ next: { version: 3, current: 'A2', superseded: ['A', 'B'] } });
  });
});
