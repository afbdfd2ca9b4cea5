import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatIssue, ManifestError } from '../../src/manifest/errors.js';
import { loadManifestSet, type LoadedText, type ManifestText, type TextCache } from '../../src/manifest/load.js';
import { OPEN_POLICY, type PodPolicy } from '../../src/manifest/policy.js';
import type { DesiredPod } from '../../src/manifest/types.js';

// What apply's cache (src/cli/manifest-cache.ts) does to an entry: it is written as JSON and read back.
function jsonCache(): TextCache & { entries: Map<string, string>; hits: number } {
  const entries = new Map<string, string>();
  const key = (t: ManifestText): string => `${t.file}\0${t.source}\0${t.text}`;
  const cache = {
    entries,
    hits: 0,
    get(t: ManifestText): LoadedText | undefined {
      const e = entries.get(key(t));
      if (e !== undefined) cache.hits++;
      return e === undefined ? undefined : (JSON.parse(e) as LoadedText);
    },
    put(t: ManifestText, loaded: LoadedText): void {
      entries.set(key(t), JSON.stringify(loaded));
    },
  };
  return cache;
}

const text = (dir: string, name: string): ManifestText => ({ file: name, source: `file:${join(dir, name)}`, text: readFileSync(join(dir, name), 'utf8') });
const plain = (pods: DesiredPod[]): unknown => pods.map((p) => ({ key: p.key, uid: p.uid, pod: p.pod, origin: p.origin, json: JSON.stringify(p.pod) }));

// The kitchen sink asks for an unsafe sysctl.
const POLICY: PodPolicy = { ...OPEN_POLICY, allowedUnsafeSysctls: ['*'] };
const FIXTURES = join(import.meta.dirname, '../fixtures');
const SETS: ManifestText[][] = [
  readdirSync(join(FIXTURES, 'static-pods')).map((n) => text(join(FIXTURES, 'static-pods'), n)),
  readdirSync(join(import.meta.dirname, '../../manifests')).map((n) => text(join(import.meta.dirname, '../../manifests'), n)),
  [text(FIXTURES, 'kitchen-sink.yaml')],
];

describe('a set loaded through a cache of known texts', () => {
  it.each(SETS.map((s, i) => [i, s] as const))('gives the same pods, uids, origins and warnings from the cache as from the files (set %i)', (_i, set) => {
    const cache = jsonCache();
    const fresh = loadManifestSet(set, POLICY, cache);
    expect(cache.entries.size).toBe(set.length);
    const again = loadManifestSet(set, POLICY, cache);
    expect(cache.hits).toBe(set.length);
    expect(plain(again.pods)).toStrictEqual(plain(fresh.pods));
    expect(again.issues).toStrictEqual(fresh.issues);
  });

  it('keeps no text with an error, and a known text beside a bad one still fails the set as without a cache', () => {
    const cache = jsonCache();
    const good = text(join(FIXTURES, 'static-pods'), 'etcd.yaml');
    const bad = { file: 'bad.yaml', source: 'file:bad.yaml', text: 'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a}]}\n' };
    loadManifestSet([good], undefined, cache);
    expect(() => loadManifestSet([good, bad], undefined, cache)).toThrowError(ManifestError);
    expect([...cache.entries.keys()].map((k) => k.split('\0')[0])).toEqual(['etcd.yaml']);
  });

  it('points at both places of a pod declared twice, the first one known', () => {
    const cache = jsonCache();
    const web = readFileSync(join(import.meta.dirname, '../../manifests/web.yaml'), 'utf8');
    const a = { file: 'a.yaml', source: 'file:a.yaml', text: web };
    const b = { file: 'b.yaml', source: 'file:b.yaml', text: `\n\n${web}` };
    loadManifestSet([a], undefined, cache);
    let err: unknown;
    try {
      loadManifestSet([a, b], undefined, cache);
    } catch (e) {
      err = e;
    }
    let uncached: unknown;
    try {
      loadManifestSet([a, b]);
    } catch (e) {
      uncached = e;
    }
    expect(err).toBeInstanceOf(ManifestError);
    expect((err as ManifestError).issues.map(formatIssue)).toEqual((uncached as ManifestError).issues.map(formatIssue));
    expect((err as ManifestError).issues.map(formatIssue).join('\n')).toMatch(/b\.yaml:\d+:\d+ metadata\.name: pod .* is also declared at a\.yaml:\d+/);
  });
});
