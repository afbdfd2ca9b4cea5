import { chmodSync, mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DirectorySource } from '../../src/sources/dir-source.js';

// The directory source on a real directory, with no engine: what it declares as files come, change
// and go, and what it keeps when a file is broken.

const POD = (name: string, image = 'busybox:1'): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  containers:
  - {name: c, image: ${image}}
`;

const dirs: string[] = [];
const sources: DirectorySource[] = [];
afterEach(async () => {
  for (const s of sources.splice(0)) await s.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function watched(files: Record<string, string>, removeGraceMs = 200): Promise<{ dir: string; source: DirectorySource; changes: () => number }> {
  const dir = mkdtempSync(join(tmpdir(), 'podrun-dir-'));
  dirs.push(dir);
  for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text, { mode: 0o600 });
  const source = new DirectorySource(dir, { resyncMs: 3_600_000, removeGraceMs });
  sources.push(source);
  let n = 0;
  await source.start(() => n++);
  return { dir, source, changes: () => n };
}

const declared = (s: DirectorySource): string[] =>
  s
    .snapshot()
    .flatMap((o) => o.pods.map((d) => `${d.pod.metadata.name}:${d.pod.spec.containers[0]!.image}`))
    .sort();
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe('DirectorySource', () => {
  it('declares the files it finds at start at once, and a new file once it has stayed as it is for 300 ms', async () => {
    const { dir, source } = await watched({ 'a.yaml': POD('a') });
    expect(source.ready).toBe(true);
    expect(declared(source)).toEqual(['a:busybox:1']);
    const t0 = Date.now();
    writeFileSync(join(dir, 'b.yaml'), POD('b'), { mode: 0o600 });
    await until('b', () => declared(source).includes('b:busybox:1'));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
  });

  it('applies nothing of a version that did not stay: rewritten back to the one in force within the settle time', async () => {
    const { dir, source, changes } = await watched({ 'a.yaml': POD('a') });
    const before = changes();
    writeFileSync(join(dir, 'a.yaml'), POD('a', 'busybox:2'), { mode: 0o600 });
    await sleep(100);
    writeFileSync(join(dir, 'a.yaml'), POD('a'), { mode: 0o600 });
    await sleep(700);
    expect(declared(source)).toEqual(['a:busybox:1']);
    expect(changes()).toBe(before);
    // The same change left in place is applied.
    writeFileSync(join(dir, 'a.yaml'), POD('a', 'busybox:2'), { mode: 0o600 });
    await until('busybox:2', () => declared(source).includes('a:busybox:2'));
  });

  it("keeps a file's pods through an editor's rename dance, and drops them once the file stays gone", async () => {
    const { dir, source, changes } = await watched({ 'a.yaml': POD('a') }, 300);
    const before = changes();
    unlinkSync(join(dir, 'a.yaml'));
    await sleep(50);
    writeFileSync(join(dir, '.a.yaml.tmp'), POD('a'), { mode: 0o600 });
    renameSync(join(dir, '.a.yaml.tmp'), join(dir, 'a.yaml'));
    await sleep(600);
    expect(declared(source)).toEqual(['a:busybox:1']);
    expect(changes()).toBe(before);
    unlinkSync(join(dir, 'a.yaml'));
    await until('a to go', () => declared(source).length === 0);
  });

  it('keeps the last good pods of a file made invalid or empty, and says why', async () => {
    const { dir, source } = await watched({ 'a.yaml': POD('a') });
    writeFileSync(join(dir, 'a.yaml'), `${POD('a')}  restartPolicy: Sometimes\n`, { mode: 0o600 });
    await until('the error', () => source.errors().length > 0);
    expect(source.errors()[0]).toMatchObject({ file: join(dir, 'a.yaml'), severity: 'error', field: expect.stringContaining('restartPolicy') });
    expect(declared(source)).toEqual(['a:busybox:1']);
    writeFileSync(join(dir, 'a.yaml'), '', { mode: 0o600 });
    await until('the warning', () => source.errors().some((e) => e.severity === 'warning'));
    expect(declared(source)).toEqual(['a:busybox:1']);
    expect(source.canForget(source.snapshot()[0]!.origin)).toBe(true);
  });
  it('keeps what it declared once the directory turns unsafe to read, or goes away: a failing source is no word that its pods are unwanted', async () => {
    const { dir, source } = await watched({ 'a.yaml': POD('a') });
    chmodSync(dir, 0o777);
    source.resync();
    expect(source.errors()[0]?.message).toContain('writable by everyone');
    expect(declared(source)).toEqual(['a:busybox:1']);
    chmodSync(dir, 0o700);
    source.resync();
    expect(source.errors()).toEqual([]);
    // Watched again, then removed whole (its files' unlink events come too).
    rmSync(dir, { recursive: true, force: true });
    // Past the removal grace a vanished file's pods would go: the directory's removal is not that.
    await sleep(400);
    source.resync();
    expect(source.ready).toBe(true);
    expect(declared(source)).toEqual(['a:busybox:1']);
  });
});

describe('readNow: files this process has just written itself', () => {
  it('are believed at once, changed and gone alike, with one change told for all', async () => {
    const { dir, source, changes } = await watched({ 'a.yaml': POD('a'), 'b.yaml': POD('b') }, 3_600_000);
    const before = changes();
    writeFileSync(join(dir, 'a.yaml'), POD('a', 'busybox:2'), { mode: 0o600 });
    unlinkSync(join(dir, 'b.yaml'));
    writeFileSync(join(dir, 'c.yaml'), POD('c'), { mode: 0o600 });
    // No settle wait for the new content, no removal grace (an hour here) for the file gone.
    source.readNow();
    expect(declared(source)).toEqual(['a:busybox:2', 'c:busybox:1']);
    expect(changes()).toBe(before + 1);
    // Nothing changed since: nothing to tell.
    source.readNow();
    expect(changes()).toBe(before + 1);
  });
});
