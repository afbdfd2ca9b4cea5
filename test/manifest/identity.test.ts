import { describe, expect, it } from 'vitest';
import { podVersion } from '../../src/manifest/hash.js';
import { podUid } from '../../src/manifest/identity.js';
import { loadManifestText } from '../../src/manifest/load.js';

// A pod's uid names its containers on the engine: a podrun that derived another one would not
// know the pods an older podrun made (upgrade.test.ts). These are what earlier podruns derived.
const GOLDEN: [string, string][] = [
  ['applystart-bench/as-16', 'bab11541-1fd1-506e-bfea-40e620d3793b'],
  ['applystart-bench/as-8', 'f9d49163-be67-5fa9-9d1a-4b140c62fffe'],
];

function load(namespace: string, name: string, extra = '') {
  const text = `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\n${extra}spec:\n  containers:\n  - name: c0\n    image: busybox:1\n`;
  const r = loadManifestText({ file: 'p.yaml', source: 'file:/p.yaml', text });
  const d = r.pods[0];
  if (!d) throw new Error(r.issues.map((i) => i.message).join('; '));
  return d;
}

describe('pod uids, derived when first read', () => {
  it.each(GOLDEN)('%s keeps the uid earlier podruns gave it', (key, uid) => {
    const [namespace, name] = key.split('/') as [string, string];
    const d = load(namespace, name);
    expect(d.uid).toBe(uid);
    expect(d.pod.metadata.uid).toBe(uid);
    expect(podUid(d.pod)).toBe(uid);
  });

  it('serializes as an assigned uid would: last in metadata, the same version hash', () => {
    const d = load('applystart-bench', 'as-16');
    expect(JSON.stringify(d.pod.metadata)).toBe('{"name":"as-16","namespace":"applystart-bench","uid":"bab11541-1fd1-506e-bfea-40e620d3793b"}');
    // The sandbox's pod-spec label and the version hash are made from this JSON.
    const assigned = { ...d.pod, metadata: { name: 'as-16', namespace: 'applystart-bench', uid: 'bab11541-1fd1-506e-bfea-40e620d3793b' } };
    expect(podVersion(d.pod)).toBe(podVersion(assigned));
    // Copies (spreads, clones) carry the value.
    expect({ ...d }.uid).toBe(d.uid);
    expect(structuredClone(d.pod).metadata.uid).toBe(d.uid);
  });

  it('is of the pod as loaded: renaming it afterwards does not change who it is', () => {
    const d = load('applystart-bench', 'as-8');
    d.pod.metadata.name = 'other';
    expect(d.uid).toBe('f9d49163-be67-5fa9-9d1a-4b140c62fffe');
  });

  it('takes a uid the manifest gives, and one set later', () => {
    const d = load('ns', 'given', '  uid: 0000-given\n');
    expect(d.uid).toBe('0000-given');
    const e = load('ns', 'set-later');
    e.pod.metadata.uid = 'assigned';
    expect(e.uid).toBe('assigned');
    expect(JSON.stringify(e.pod.metadata)).toContain('"uid":"assigned"');
  });
});
