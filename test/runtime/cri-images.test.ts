import { describe, expect, it } from 'vitest';
import type { CriClient } from '../../src/runtime/cri/client.js';
import { CriImages } from '../../src/runtime/cri/images.js';
import { codec, StatusResponse, type ContainerItem, type ImageInfo, type Labels } from '../../src/runtime/cri/messages.js';

const image = (id: string, tags: string[], digests: string[] = [], pinned = false): ImageInfo => ({
  id,
  repoTags: tags,
  repoDigests: digests,
  size: 1000n,
  uid: undefined,
  username: '',
  pinned,
});
const container = (imageRef: string, spec = '', imageId = ''): ContainerItem => ({
  id: `c-${imageRef}`,
  podSandboxId: 's',
  metadata: { name: 'c', attempt: 0 },
  image: spec ? { image: spec } : undefined,
  imageRef,
  state: 2,
  createdAt: 0n,
  labels: {},
  annotations: {},
  imageId,
});

/** The ImageService and Status answers a runtime gives, as a client would return them. */
function runtime(o: { images: ImageInfo[]; containers: ContainerItem[]; info?: Labels | Error; mountpoint?: string }): CriClient {
  const stub = {
    imageFsInfo: async () => ({
      imageFilesystems:
        o.mountpoint === undefined ? [] : [{ timestamp: 1n, fsId: { mountpoint: o.mountpoint }, usedBytes: { value: 1n }, inodesUsed: undefined }],
      containerFilesystems: [],
    }),
    listImages: async () => o.images,
    listContainers: async () => o.containers,
    imageStatus: async (ref: string) => o.images.find((i) => i.repoTags.includes(ref) || i.id === ref),
    runtimeInfo: async () => {
      if (o.info instanceof Error) throw o.info;
      return o.info ?? {};
    },
  };
  // A stub of the calls inventory() makes, not a whole client.
  return stub as unknown as CriClient;
}

describe("the image GC's view of a CRI runtime", () => {
  it("finds a container's image however the runtime names it: id, bare id, digest, tag or Docker Hub short name", async () => {
    const images = [
      image('sha256:aaa', ['docker.io/library/app:1']),
      image('sha256:bbb', [], ['quay.io/x/b@sha256:1111']),
      image('sha256:ccc', ['registry.local:5000/c:1']),
      image('sha256:ddd', ['docker.io/library/d:1']),
      image('sha256:eee', ['docker.io/library/unused:1']),
      image('sha256:fff', ['docker.io/library/f:1']),
    ];
    const containers = [
      container('sha256:aaa'),
      container('quay.io/x/b@sha256:1111'),
      container('', 'registry.local:5000/c:1'),
      container('ddd'),
      container('', 'f:1'),
      container('', 'unknown:9'),
    ];
    const inv = await new CriImages(runtime({ images, containers, mountpoint: '/var/lib/containerd/snap' }), {
      stateDir: '/x',
      pauseImage: 'absent:1',
    }).inventory('absent:1');
    expect([...inv.inUse].filter((r) => r.startsWith('sha256:')).sort()).toEqual(['sha256:aaa', 'sha256:bbb', 'sha256:ccc', 'sha256:ddd', 'sha256:fff']);
    expect(inv.rootDir).toBe('/var/lib/containerd/snap');
    expect(inv.pinnedId).toBe('');
  });

  it("pins the runtime's own sandbox image (Status config) and what it marks pinned, besides podrun's pause image", async () => {
    const images = [
      image('sha256:pause', ['registry.k8s.io/pause:3.6']),
      image('sha256:pin', ['x/pinned:1'], [], true),
      image('sha256:ours', ['docker.io/podrun/pause:1']),
      image('sha256:free', ['x/free:1']),
    ];
    const info = { config: JSON.stringify({ sandboxImage: 'registry.k8s.io/pause:3.6', other: 1 }) };
    const inv = await new CriImages(runtime({ images, containers: [], info, mountpoint: '/m' }), {
      stateDir: '/x',
      pauseImage: 'docker.io/podrun/pause:1',
    }).inventory('docker.io/podrun/pause:1');
    expect([...(inv.enginePinned ?? [])].sort()).toEqual(['sha256:pause', 'sha256:pin']);
    expect(inv.pinnedId).toBe('sha256:ours');
  });

  it('a runtime whose Status says nothing usable (CRI-O, an error, bad JSON) pins only what it marks', async () => {
    const images = [image('sha256:pin', ['x/pinned:1'], [], true), image('sha256:free', ['x/free:1'])];
    const answers: (Labels | Error)[] = [new Error('unimplemented'), { config: 'not json' }, { config: JSON.stringify({ sandboxImage: 42 }) }, {}];
    for (const info of answers) {
      const inv = await new CriImages(runtime({ images, containers: [], info, mountpoint: '/m' }), { stateDir: '/x', pauseImage: 'p' }).inventory('p');
      expect([...(inv.enginePinned ?? [])]).toEqual(['sha256:pin']);
    }
  });

  it('without an image file system to measure, says so instead of measuring another disk', async () => {
    const inv = new CriImages(runtime({ images: [], containers: [] }), { stateDir: '/x', pauseImage: 'p' }).inventory('p');
    await expect(inv).rejects.toThrow(/ImageFsInfo has no image file system/);
  });

  it("Status's verbose info decodes from its published field number", () => {
    const c = codec<{ info: Labels }, { info: Labels }>(StatusResponse);
    expect(c.deserialize(c.serialize({ info: { config: '{"sandboxImage":"p:1"}' } })).info).toEqual({ config: '{"sandboxImage":"p:1"}' });
  });
});
