import type { Container } from '../../manifest/types.js';
import { credentialFiles, EveryCredentialRefused, pullWithEachCredential, type RegistryAuth } from '../auth.js';
import { ensureByPolicy, PullQueue, type PullListener } from '../pull-policy.js';
import { ImageError, type EngineImage, type ImageInventory, type RuntimeOptions } from '../runtime-types.js';
import { unlessAborted } from '../slots.js';
import type { CriRuntimeService } from './runtime-service.js';
import { CriError, CriNotFoundError, CriNotRuntimeError, CriRequestError, CriUnreachableError } from './errors.js';
import type { ImageInfo } from './messages.js';

// Images through the CRI ImageService, as the kubelet's image manager uses it
// (pkg/kubelet/images/image_manager.go): ImageStatus for presence, PullImage with the node's
// credentials as AuthConfig, ListImages and RemoveImage for the image GC.

export type { PullListener };

export class CriImages {
  private readonly queue: PullQueue<number>;

  constructor(
    private readonly client: CriRuntimeService,
    private readonly options: RuntimeOptions,
  ) {
    this.queue = new PullQueue(options.pullSlots ?? 1);
  }

  async status(image: string): Promise<ImageInfo | undefined> {
    return this.client.imageStatus(image);
  }

  async present(image: string): Promise<boolean> {
    return (await this.status(image)) !== undefined;
  }

  async ensureImage(image: string, policy: Container['imagePullPolicy'], onPull?: PullListener, signal?: AbortSignal): Promise<void> {
    await ensureByPolicy(image, policy, await this.present(image), async () => `in ${(await unlessAborted(this.pull(image), signal)).toFixed(1)}s`, onPull);
  }

  /** One pull per image at a time; the kubelet's serializeImagePulls bound over all of them. */
  pull(image: string): Promise<number> {
    return this.queue.run(image, () => this.pullNow(image));
  }

  private async pullNow(image: string): Promise<number> {
    const files = this.options.credentialFiles ?? credentialFiles({});
    const t0 = performance.now();
    const progress = { image, layers: 0, layersDone: 0, bytes: 0, totalBytes: 0 };
    let ok = false;
    let failure: string | undefined;
    // The CRI tells nothing of a pull until it ends: the progress is its start and its end.
    this.options.onPullProgress?.(progress);
    // The runtime being gone is not the image's fault: the caller retries when it is back.
    const refused = (err: unknown): boolean => err instanceof CriError && !(err instanceof CriUnreachableError) && !(err instanceof CriNotRuntimeError);
    try {
      await pullWithEachCredential(image, files, (found) => this.client.pullImage(image, authConfig(found)), refused);
      ok = true;
      return (performance.now() - t0) / 1000;
    } catch (err) {
      const each = err instanceof EveryCredentialRefused ? err.failures : [err];
      failure = each.map((f) => (f as Error).message).join('; ');
      if (!each.every(refused)) throw each.find((f) => !refused(f)) ?? err;
      throw new ImageError(`failed to pull image ${image}: ${each.map(pullRefusal).join('; ')}`, 'ErrImagePull');
    } finally {
      const seconds = (performance.now() - t0) / 1000;
      this.options.observer?.pull?.(seconds, ok);
      this.options.onPullProgress?.({ ...progress, end: { ok, seconds, ...(failure ? { error: failure } : {}) } });
    }
  }

  /** The image's USER as the runtime knows it (uid or name; '' for root by default). */
  async user(image: string): Promise<string> {
    const i = await this.status(image);
    if (!i) return '';
    return i.uid ? String(i.uid.value) : i.username;
  }

  /**
   * The image GC's view, as the kubelet's image GC takes it from the runtime: where the runtime
   * keeps images (ImageFsInfo's mountpoint, whose file system's usage meets the thresholds), its
   * images, which are in use (by any container the runtime holds, podrun's or not, running or
   * dead), and which are pinned: podrun's pause image, the runtime's own sandbox image (its
   * `sandbox_image`, which is what sandboxes run here) and what the runtime marks `pinned`.
   */
  async inventory(pinned: string): Promise<ImageInventory> {
    const [fs, list, containers, pause, sandboxImage] = await Promise.all([
      this.client.imageFsInfo(),
      this.client.listImages(),
      this.client.listContainers(),
      this.client.imageStatus(pinned).catch(() => undefined),
      this.sandboxImage(),
    ]);
    const mountpoint = fs.imageFilesystems[0]?.fsId?.mountpoint;
    if (!mountpoint) throw new Error('the runtime did not say where it keeps images (ImageFsInfo has no image file system): image GC cannot measure its disk');
    const ids = imageIds(list);
    const inUse = new Set<string>();
    // A container names its image by id, by digest or by the name it was made with, as runtimes differ.
    for (const c of containers) for (const ref of [c.imageRef, c.imageId, c.image?.image ?? '']) if (ref) inUse.add(ids.get(ref) ?? ref);
    const enginePinned = new Set(list.filter((i) => i.pinned).map((i) => i.id));
    const sandbox = sandboxImage ? ids.get(sandboxImage) : undefined;
    if (sandbox) enginePinned.add(sandbox);
    const images = list.map((i): EngineImage => ({ id: i.id, tags: i.repoTags, digests: i.repoDigests, sizeBytes: Number(i.size) }));
    return { rootDir: mountpoint, images, inUse, pinnedId: pause?.id ?? '', enginePinned };
  }

  /** The runtime's own sandbox image, where its Status says it (containerd's config); undefined otherwise. */
  private async sandboxImage(): Promise<string | undefined> {
    const info = await this.client.runtimeInfo().catch(() => undefined);
    try {
      const config = JSON.parse(info?.config ?? '{}') as { sandboxImage?: unknown };
      return typeof config.sandboxImage === 'string' && config.sandboxImage ? config.sandboxImage : undefined;
    } catch {
      return undefined;
    }
  }

  /** Removes an image by id: the runtime drops every tag of it. Gone already is fine. */
  async remove(id: string): Promise<void> {
    await this.client.removeImage(id);
  }
}

/**
 * Every name of each image (id, bare id, tags, digests, and Docker Hub's short names) to its id,
 * so a container's image reference, however the runtime spells it, finds the image it holds.
 */
function imageIds(list: readonly ImageInfo[]): Map<string, string> {
  const ids = new Map<string, string>();
  for (const i of list) {
    for (const ref of [i.id, i.id.replace(/^sha256:/, ''), ...i.repoTags, ...i.repoDigests]) {
      ids.set(ref, i.id);
      const short = ref.replace(/^docker\.io\/(library\/)?/, '');
      if (short !== ref) ids.set(short, i.id);
    }
  }
  return ids;
}

/** A node credential as the CRI's AuthConfig. */
function authConfig(found: RegistryAuth | undefined): { serverAddress: string; username?: string; password?: string; identityToken?: string } | undefined {
  if (!found) return undefined;
  return {
    serverAddress: found.serveraddress,
    ...(found.username ? { username: found.username } : {}),
    ...(found.password ? { password: found.password } : {}),
    ...(found.identitytoken ? { identityToken: found.identitytoken } : {}),
  };
}

/** The runtime's words for a refused pull, without the method's name. */
function pullRefusal(err: unknown): string {
  if (err instanceof CriNotFoundError) return `not found: ${err.detail}`;
  if (err instanceof CriRequestError) return err.detail;
  return (err as Error).message;
}
