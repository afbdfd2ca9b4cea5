import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GarbageCollector, normalizeRef } from '../../src/gc/collector.js';
import type { PodEngine } from '../../src/runtime/roles.js';
import type { EngineImage, ImageInventory } from '../../src/runtime/runtime-types.js';

// Image GC against an inventory as the engine lists it: nothing here is in use by a container, so
// only the declared pods' references can keep an image.

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const image = (id: string, tags: string[], digests: string[] = []): EngineImage => ({ id, tags, digests, sizeBytes: 100e6 });

function collector(needed: string[]): GarbageCollector {
  const stateDir = mkdtempSync(join(tmpdir(), 'podrun-gc-'));
  dirs.push(stateDir);
  const inventory: ImageInventory = {
    rootDir: stateDir,
    inUse: new Set<string>(),
    pinnedId: 'sha256:pause',
    images: [
      image('sha256:pause', ['registry.k8s.io/pause:3.10']),
      image('sha256:etcd', ['registry.k8s.io/etcd:3.5.15-0']),
      image('sha256:busybox', ['busybox:1.36']),
      image('sha256:latest', ['127.0.0.1:5000/team/app:latest']),
      image('sha256:digest', [], ['127.0.0.1:5000/team/db@sha256:abc']),
      image('sha256:unused', ['127.0.0.1:5000/team/old:1']),
    ],
  };
  const rt = { imageInventory: async () => inventory } as unknown as PodEngine;
  // High 0 / low 0 and no minimum age: everything not kept is a candidate.
  return new GarbageCollector(rt, {
    stateDir,
    pauseImage: 'registry.k8s.io/pause:3.10',
    images: { highPercent: 0, lowPercent: 0, minAgeMs: 0 },
    neededImages: () => needed,
  });
}

describe('image GC and the declared pods', () => {
  it('never offers an image a declared pod names, however it is spelt, even with no container of it', async () => {
    const gc = collector(['registry.k8s.io/etcd:3.5.15-0', 'docker.io/library/busybox:1.36', '127.0.0.1:5000/team/app', '127.0.0.1:5000/team/db@sha256:abc']);
    const r = await gc.collectImages(true);
    expect(r.candidates.map((c) => c.id)).toEqual(['sha256:unused']);
  });

  it('offers them all once no pod declares them (the sandbox image excepted)', async () => {
    const r = await collector([]).collectImages(true);
    expect(r.candidates.map((c) => c.id).sort()).toEqual(['sha256:busybox', 'sha256:digest', 'sha256:etcd', 'sha256:latest', 'sha256:unused']);
  });

  it('spells references as the engine lists them', () => {
    expect(normalizeRef('busybox')).toBe('busybox:latest');
    expect(normalizeRef('docker.io/library/busybox:1.36')).toBe('busybox:1.36');
    expect(normalizeRef('docker.io/bitnami/etcd')).toBe('bitnami/etcd:latest');
    expect(normalizeRef('localhost:5000/app')).toBe('localhost:5000/app:latest');
    expect(normalizeRef('localhost:5000/app@sha256:abc')).toBe('localhost:5000/app@sha256:abc');
  });
});
