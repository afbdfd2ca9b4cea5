import { afterEach, describe, expect, it } from 'vitest';
import { sandboxHash } from '../../src/manifest/hash.js';
import { EngineUnavailableError } from '../../src/runtime/engine-errors.js';
import { ImageError } from '../../src/runtime/runtime-types.js';
import { criErrors } from '../fakes/fake-cri-runtime.js';
import { BUSYBOX, busyboxPod, criBed, identity, PAUSE, runPod, type CriBed } from './cri-fake-bed.js';

// The CRI engine's images (ImageService), the runtime's facts and a new sandbox's IP on the
// in-memory runtime: the pull policy's calls, what a refused pull becomes, the image GC's view.

let bed: CriBed;
afterEach(() => bed.dispose());

describe("the CRI engine's images on a fake runtime", () => {
  it('refuses to start from a missing image whose policy is Never, and pulls nothing', async () => {
    bed = criBed();
    bed.runtime.images.clear();
    const err = await bed.engine.ensureImage(BUSYBOX, 'Never').catch((e: unknown) => e);
    expect((err as ImageError).reason).toBe('ErrImageNeverPull');
    // Only looked at (the pull path asks the runtime itself again: an absence is never remembered).
    expect(new Set(bed.runtime.callNames())).toEqual(new Set(['ImageStatus']));
  });

  it('pulls an Always image however present, and asks nothing more for the next IfNotPresent start', async () => {
    bed = criBed();
    await bed.engine.ensureImage(BUSYBOX, 'Always');
    await bed.engine.ensureImage(BUSYBOX, 'IfNotPresent');
    expect(bed.runtime.callNames()).toEqual(['ImageStatus', 'PullImage']);
  });

  it("a pull the registry refuses is the image's ErrImagePull; the runtime gone is the engine unavailable", async () => {
    bed = criBed();
    bed.runtime.images.clear();
    bed.runtime.injectError('PullImage', criErrors.notFound('PullImage', 'manifest unknown'));
    const refused = await bed.engine.ensureImage(BUSYBOX, 'IfNotPresent').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ImageError);
    expect((refused as ImageError).reason).toBe('ErrImagePull');
    expect((refused as ImageError).message).toContain('manifest unknown');
    bed.runtime.injectError('PullImage', criErrors.unavailable());
    await expect(bed.engine.ensureImage(BUSYBOX, 'IfNotPresent')).rejects.toBeInstanceOf(EngineUnavailableError);
  });

  it("gives the image GC the runtime's images, those in use by any container, and the pinned ones", async () => {
    bed = criBed();
    const pause = bed.runtime.addImage(PAUSE, { pinned: true });
    const unused = bed.runtime.addImage('docker.io/library/unused:1');
    await runPod(bed, busyboxPod('web'));
    const busybox = [...bed.runtime.images.values()].find((i) => i.repoTags.includes(BUSYBOX));
    const inv = await bed.engine.imageInventory(PAUSE);
    expect(inv.rootDir).toBe('/var/lib/fake-runtime');
    expect(inv.images.map((i) => i.id).sort()).toEqual([busybox?.id, pause.id, unused.id].sort());
    expect([...inv.inUse]).toEqual([busybox?.id]);
    expect(inv.pinnedId).toBe(pause.id);
    expect([...(inv.enginePinned ?? [])]).toEqual([pause.id]);
  });

  it('removes an image by id, gone already is fine, and asks for it again at the next start', async () => {
    bed = criBed();
    const { containerId } = await runPod(bed, busyboxPod('one'));
    await bed.engine.stopContainer(containerId, 0);
    await bed.engine.removeContainer(containerId);
    const id = [...bed.runtime.images.keys()][0] ?? '';
    await bed.engine.removeImage(id);
    expect(bed.runtime.images.size).toBe(0);
    bed.runtime.injectError('RemoveImage', criErrors.notFound('RemoveImage'));
    await expect(bed.engine.removeImage(id)).resolves.toBeUndefined();
    bed.runtime.clearCalls();
    await runPod(bed, busyboxPod('two'));
    // Pulled before its create: no create is tried first on an image the engine removed.
    expect(bed.runtime.callNames().filter((n) => n !== 'ImageStatus')).toEqual(['RunPodSandbox', 'PullImage', 'CreateContainer', 'StartContainer']);
  });
});

describe("the CRI engine's facts and a new sandbox's IP on a fake runtime", () => {
  it("names the runtime as it names itself, and its root as ImageFsInfo's mountpoint", async () => {
    bed = criBed();
    await bed.engine.ping();
    expect(bed.engine.runtimeName).toBe('fakeRuntime');
    expect(await bed.engine.engineFacts()).toMatchObject({ version: '0.1.0', rootDir: '/var/lib/fake-runtime' });
  });

  it("a list first asks the runtime's Version, and its failure is the one told", async () => {
    bed = criBed();
    bed.runtime.injectError('Version', criErrors.unavailable());
    await expect(bed.engine.listPods()).rejects.toBeInstanceOf(EngineUnavailableError);
    expect(bed.runtime.callNames().sort()).toEqual(['ListContainers', 'ListPodSandbox', 'Version']);
  });

  it('asks a new sandbox its IP at once only when a start needs it (status.podIP in the env)', async () => {
    bed = criBed();
    const plain = busyboxPod('plain');
    expect((await bed.engine.createSandbox(plain.pod, identity(plain), 0, sandboxHash(plain.pod), false)).ip).toBe('');
    const needs = busyboxPod(
      'needs',
      `      env:
        - name: MY_IP
          valueFrom: { fieldRef: { fieldPath: status.podIP } }`,
    );
    bed.runtime.clearCalls();
    const sandbox = await bed.engine.createSandbox(needs.pod, identity(needs), 0, sandboxHash(needs.pod), false);
    expect(sandbox.ip).toBe('10.88.0.3');
    expect(bed.runtime.callNames().filter((n) => n !== 'ImageStatus')).toEqual(['RunPodSandbox', 'PodSandboxStatus']);
    // Fixed for the sandbox's life: not asked again.
    bed.runtime.clearCalls();
    expect(await bed.engine.sandboxInfo(sandbox.id, needs.pod)).toEqual(sandbox);
    expect(bed.runtime.calls).toEqual([]);
  });
});
