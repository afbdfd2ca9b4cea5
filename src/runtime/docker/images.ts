import type Docker from 'dockerode';
import type { Container } from '../../manifest/types.js';
import { credentialFiles, EveryCredentialRefused, pullWithEachCredential } from '../auth.js';
import { engineError, EngineRequestError, isNotFound } from './engine.js';
import { ImageError, type EngineImage, type ImageInventory, type PullListener, type PullProgress } from '../runtime-types.js';
import type { EngineCalls } from './engine.js';
import { unlessAborted } from '../slots.js';
import { formatBytes } from '../../base/format-bytes.js';
import { ensureByPolicy, PullQueue } from '../pull-policy.js';

export type { PullListener, PullProgress };

/** What a pull cost, for the Pulled event and the CLI's last line. */
export interface PullResult {
  seconds: number;
  bytes: number;
  layers: number;
}

interface LayerEvent {
  id?: string;
  status?: string;
  error?: string;
  progressDetail?: { current?: number; total?: number };
}

/** Folds the engine's per-layer progress messages into one figure per image. */
export class PullTally {
  private readonly layers = new Map<string, { current: number; total: number; done: boolean }>();

  constructor(readonly image: string) {}

  add(e: LayerEvent): void {
    const status = e.status ?? '';
    // Image-level lines ("Pulling from x", "Digest: ...", "Status: ...") carry the tag or nothing as id.
    if (!e.id || !/^(Pulling fs layer|Waiting|Downloading|Verifying Checksum|Download complete|Extracting|Pull complete|Already exists|Retrying)/.test(status))
      return;
    const l = this.layers.get(e.id) ?? { current: 0, total: 0, done: false };
    if (status.startsWith('Downloading')) {
      l.current = e.progressDetail?.current ?? l.current;
      l.total = e.progressDetail?.total ?? l.total;
    } else if (status === 'Download complete' || status === 'Verifying Checksum') {
      l.current = Math.max(l.current, l.total);
    } else if (status === 'Pull complete' || status === 'Already exists') {
      l.current = Math.max(l.current, l.total);
      l.done = true;
    }
    this.layers.set(e.id, l);
  }

  get progress(): PullProgress {
    let bytes = 0;
    let totalBytes = 0;
    let layersDone = 0;
    for (const l of this.layers.values()) {
      bytes += l.current;
      totalBytes += l.total;
      if (l.done) layersDone++;
    }
    return { image: this.image, layers: this.layers.size, layersDone, bytes, totalBytes };
  }
}

/** Images (the images role): had before a container needs one (one pull per image at a time), listed and removed for the image GC. */
export class ImageStore {
  private readonly queue: PullQueue<PullResult>;

  constructor(private readonly e: EngineCalls) {
    // The kubelet's serializeImagePulls (1, its default) or maxParallelImagePulls; 0: no bound.
    this.queue = new PullQueue(e.options.pullSlots ?? 1);
  }

  async ensureImage(image: string, policy: Container['imagePullPolicy'], onPull?: PullListener, signal?: AbortSignal): Promise<void> {
    await ensureByPolicy(
      image,
      policy,
      await this.present(image),
      async () => {
        // A pod no longer wanted stops waiting; the pull goes on for whoever else needs the image.
        const r = await unlessAborted(this.pull(image), signal);
        return `in ${r.seconds.toFixed(1)}s${r.bytes ? ` (${formatBytes(r.bytes)}, ${r.layers} layer${r.layers === 1 ? '' : 's'})` : ''}`;
      },
      onPull,
    );
  }

  async present(image: string): Promise<boolean> {
    return this.e
      .call(`inspect image ${image}`, () => this.e.docker.getImage(image).inspect())
      .then(
        () => true,
        (err: unknown) => {
          if (isNotFound(err)) return false;
          throw err;
        },
      );
  }

  /** Pulls `image` now; one pull per image at a time, however many containers (or commands) want it. */
  pull(image: string): Promise<PullResult> {
    return this.queue.run(image, () => this.pullNow(image));
  }

  private async pullNow(image: string): Promise<PullResult> {
    const files = this.e.options.credentialFiles ?? credentialFiles({});
    const t0 = performance.now();
    const tally = new PullTally(image);
    let ok = false;
    let failure: string | undefined;
    this.e.options.onPullProgress?.(tally.progress);
    const refused = (err: unknown): boolean => engineError(err, `pull ${image}`, this.e.endpoint, this.e.engineName) instanceof EngineRequestError;
    try {
      await pullWithEachCredential(
        image,
        files,
        async (auth) => {
          const stream = await this.e.docker.pull(image, auth ? { authconfig: auth } : {});
          // A failure may come in the stream after a 200: Podman answers every pull so, and Docker
          // one that fails midway. Its first error is the pull's, not a pull that went well.
          let streamed: string | undefined;
          await new Promise<void>((resolve, reject) => {
            this.e.docker.modem.followProgress(
              stream,
              (err: Error | null) => (err ? reject(err) : streamed !== undefined ? reject(new Error(streamed)) : resolve()),
              (event: LayerEvent) => {
                if (event.error) {
                  streamed ??= event.error;
                  return;
                }
                tally.add(event);
                this.e.options.onPullProgress?.(tally.progress);
              },
            );
          });
        },
        refused,
      );
      ok = true;
      const p = tally.progress;
      return { seconds: (performance.now() - t0) / 1000, bytes: p.totalBytes, layers: p.layers };
    } catch (err) {
      // Each credential refused: the registry's reason for each, as the kubelet aggregates them.
      const each = err instanceof EveryCredentialRefused ? err.failures : [err];
      const errors = each.map((f) => engineError(f, `pull ${image}`, this.e.endpoint, this.e.engineName));
      failure = errors.map((e) => e.message).join('; ');
      if (errors.every((e) => e instanceof EngineRequestError))
        throw new ImageError(`failed to pull image ${image}: ${errors.map((e) => (e as EngineRequestError).detail).join('; ')}`, 'ErrImagePull');
      throw errors[0];
    } finally {
      const seconds = (performance.now() - t0) / 1000;
      this.e.options.observer?.pull?.(seconds, ok);
      this.e.options.onPullProgress?.({ ...tally.progress, end: { ok, seconds, ...(failure ? { error: failure } : {}) } });
    }
  }

  /** The image's configured USER ('' for root by default). */
  async imageUser(image: string): Promise<string> {
    const info = await this.e.call(`inspect image ${image}`, () => this.e.docker.getImage(image).inspect());
    return info.Config?.User ?? '';
  }

  /** What image GC needs to know of the engine: where it keeps its data, its images, which are in use. */
  async inventory(pinned: string): Promise<ImageInventory> {
    const info = await this.e.call('engine info', () => this.e.docker.info());
    const inUse = new Set((await this.e.call('list containers', () => this.e.docker.listContainers({ all: true }))).map((c) => c.ImageID));
    const pinnedId = await this.e
      .call(`inspect image ${pinned}`, () => this.e.docker.getImage(pinned).inspect())
      .then(
        (i) => i.Id,
        () => '',
      );
    const images = await this.e.call('list images', () => this.e.docker.listImages());
    return { rootDir: String(info.DockerRootDir ?? '/var/lib/docker'), images: images.map(imageFromDocker), inUse, pinnedId };
  }

  /**
   * Removes an unused image. An image with several tags cannot be removed by id without force
   * (which would also take it from under stopped containers): each tag goes first, then the image.
   */
  async remove(id: string, tags: readonly string[]): Promise<void> {
    for (const tag of tags) {
      await this.e
        .call(`untag image ${tag}`, () => this.e.docker.getImage(tag).remove({ force: false, noprune: false }))
        .catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        });
    }
    await this.e
      .call(`remove image ${id}`, () => this.e.docker.getImage(id).remove({ force: false }))
      .catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
  }
}

/** A list entry as podrun's image: Docker writes an untagged image's tag and digest as `<none>`. */
function imageFromDocker(i: Docker.ImageInfo): EngineImage {
  return {
    id: i.Id,
    tags: (i.RepoTags ?? []).filter((t) => t !== '<none>:<none>'),
    digests: (i.RepoDigests ?? []).filter((d) => d !== '<none>@<none>'),
    sizeBytes: i.Size,
  };
}
