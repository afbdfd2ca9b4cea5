import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openManifestCache } from '../../src/cli/manifest-cache.js';
import { loadManifestSet, type ManifestText } from '../../src/manifest/load.js';
import { OPEN_POLICY } from '../../src/manifest/policy.js';

const WEB = readFileSync(join(import.meta.dirname, '../../manifests/web.yaml'), 'utf8');
const dirs: string[] = [];
const stateDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'podrun-manifest-cache-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const web: ManifestText = { file: 'web.yaml', source: 'file:/m/web.yaml', text: WEB };

/** Loads `web` through a cache opened on `dir` the way apply does, saves it, and tells whether it knew the text. */
function applyOnce(dir: string, build: string | undefined, input = web, policy = OPEN_POLICY): boolean {
  const cache = openManifestCache(dir, build, policy);
  const known = cache.get(input) !== undefined;
  loadManifestSet([input], policy, cache);
  cache.save();
  return known;
}

describe("apply's cache of known manifests", () => {
  it('knows a text the same build loaded before under the same policy', () => {
    const dir = stateDir();
    expect(applyOnce(dir, 'b1')).toBe(false);
    expect(applyOnce(dir, 'b1')).toBe(true);
  });

  it('does not know it from another build, another policy, another byte, name or source', () => {
    const dir = stateDir();
    applyOnce(dir, 'b1');
    expect(applyOnce(dir, 'b2')).toBe(false);
    const other = stateDir();
    applyOnce(other, 'b1');
    expect(applyOnce(other, 'b1', web, { ...OPEN_POLICY, allowPrivileged: false })).toBe(false);
    for (const changed of [
      { ...web, text: `${WEB}\n` },
      { ...web, file: 'web2.yaml' },
      { ...web, source: 'file:/n/web.yaml' },
    ]) {
      const d = stateDir();
      applyOnce(d, 'b1');
      expect(applyOnce(d, 'b1', changed)).toBe(false);
    }
  });

  it('knows nothing and writes nothing when run from source (no build stamp)', () => {
    const dir = stateDir();
    expect(applyOnce(dir, undefined)).toBe(false);
    expect(applyOnce(dir, undefined)).toBe(false);
    expect(() => statSync(join(dir, 'manifest-cache.json'))).toThrow();
  });

  it('does not write the file again when every text was known', () => {
    const dir = stateDir();
    applyOnce(dir, 'b1');
    const before = statSync(join(dir, 'manifest-cache.json'));
    applyOnce(dir, 'b1');
    const after = statSync(join(dir, 'manifest-cache.json'));
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
  });

  it.each([
    ['damaged', '{"v":1,"made":'],
    ['not an object', '[]'],
  ])('ignores a %s file and makes it anew', (_what, content) => {
    const dir = stateDir();
    writeFileSync(join(dir, 'manifest-cache.json'), content);
    expect(applyOnce(dir, 'b1')).toBe(false);
    expect(applyOnce(dir, 'b1')).toBe(true);
  });

  it.each([
    ['pods that are not a list', (e: Record<string, unknown>) => (e.pods = 1)],
    ['a pod with no name', (e: Record<string, unknown>) => (e.pods = [{ pod: { metadata: {} }, line: 1 }])],
    ['no issues', (e: Record<string, unknown>) => delete e.issues],
  ])('loads the text again when its entry holds %s', (_what, damage) => {
    const dir = stateDir();
    applyOnce(dir, 'b1');
    const path = join(dir, 'manifest-cache.json');
    const file = JSON.parse(readFileSync(path, 'utf8')) as { entries: Record<string, string> };
    for (const [k, text] of Object.entries(file.entries)) {
      const e = JSON.parse(text) as Record<string, unknown>;
      damage(e);
      file.entries[k] = JSON.stringify(e);
    }
    writeFileSync(path, JSON.stringify(file));
    expect(applyOnce(dir, 'b1')).toBe(false);
    expect(applyOnce(dir, 'b1')).toBe(true);
  });

  it('does not read a file larger than any it writes (16 MiB), even a valid one', () => {
    const dir = stateDir();
    applyOnce(dir, 'b1');
    const path = join(dir, 'manifest-cache.json');
    const file = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    writeFileSync(path, JSON.stringify({ ...file, pad: 'x'.repeat(16 * 1024 * 1024) }));
    expect(applyOnce(dir, 'b1')).toBe(false);
  });

  it('keeps what was loaded, whatever the apply then does with the pods it was given', () => {
    const dir = stateDir();
    const first = openManifestCache(dir, 'b1', OPEN_POLICY);
    const loaded = loadManifestSet([web], OPEN_POLICY, first);
    // The apply goes on with its pods (the cache is saved at its end).
    loaded.pods[0]!.pod.spec.containers[0]!.image = 'changed-after-put:1';
    first.save();
    const second = openManifestCache(dir, 'b1', OPEN_POLICY);
    const known = second.get(web);
    expect(known?.pods[0]?.pod.spec.containers[0]?.image).not.toBe('changed-after-put:1');
    known!.pods[0]!.pod.spec.containers[0]!.image = 'changed-after-get:1';
    second.put({ ...web, file: 'other.yaml' }, { pods: [], issues: [] });
    second.save();
    expect(openManifestCache(dir, 'b1', OPEN_POLICY).get(web)?.pods[0]?.pod.spec.containers[0]?.image).toBe(
      loadManifestSet([web], OPEN_POLICY).pods[0]!.pod.spec.containers[0]!.image,
    );
  });

  it('keeps at most 256 texts, the latest apply first', () => {
    const dir = stateDir();
    const texts = Array.from({ length: 300 }, (_, i): ManifestText => ({ ...web, file: `w${i}.yaml`, source: `file:/m/w${i}.yaml` }));
    for (const t of texts) applyOnce(dir, 'b1', t);
    const kept = Object.keys((JSON.parse(readFileSync(join(dir, 'manifest-cache.json'), 'utf8')) as { entries: object }).entries);
    expect(kept).toHaveLength(256);
    expect(applyOnce(dir, 'b1', texts[299])).toBe(true);
    expect(applyOnce(dir, 'b1', texts[0])).toBe(false);
  });
});
