import type Docker from 'dockerode';
import type { Container } from '../manifest/types.js';
import { authFor } from './auth.js';
import { engineError, EngineRequestError, isNotFound } from './engine.js';
import { ImageError, type EngineCalls } from './runtime-types.js';

/** Images (the images role): had before a container needs one (one pull per image at a time), listed and removed for the image GC. */
export class ImageStore {
  private readonly pulls = new Map<string, Promise<void>>();

  constructor(private readonly e: EngineCalls) {}

  async ensureImage(image: string, policy: Container['imagePullPolicy'], onPull?: (phase: 'pulling' | 'pulled', message?: string) => void): Promise<void> {
    const present = await this.e.call(`inspect image ${image}`, () => this.e.docker.getImage(image).inspect()).then(
      () => true,
      (err: unknown) => {
        if (isNotFound(err)) return false;
        throw err;
      },
    );
    if (policy === 'Never') {
      if (!present) throw new ImageError(`image ${image} is not present and its imagePullPolicy is Never`, 'ErrImageNeverPull');
      return;
    }
    if (present && policy !== 'Always') return;
    // One pull per image at a time, however many containers want it.
    let pending = this.pulls.get(image);
    if (!pending) {
      pending = this.pull(image).finally(() => this.pulls.delete(image));
      this.pulls.set(image, pending);
    }
    onPull?.('pulling');
    const started = Date.now();
    await pending;
    onPull?.('pulled', `in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  }

  private async pull(image: string): Promise<void> {
    const auth = authFor(image);
    const t0 = performance.now();
    let ok = false;
    try {
      const stream = await this.e.docker.pull(image, auth ? { authconfig: auth } : {});
      await new Promise<void>((resolve, reject) => {
        this.e.docker.modem.followProgress(
          stream,
          (err: Error | null) => (err ? reject(err) : resolve()),
          (event: { status?: string; progress?: string; id?: string; error?: string }) => {
            if (event.error) return;
            const line = [event.id, event.status, event.progress].filter(Boolean).join(' ');
            this.e.options.onPullProgress?.(image, line);
          },
        );
      });
      ok = true;
    } catch (err) {
      const e = engineError(err, `pull ${image}`, this.e.endpoint);
      if (e instanceof EngineRequestError) throw new ImageError(`failed to pull image ${image}: ${e.message.replace(/^pull [^:]+: /, '')}`, 'ErrImagePull');
      throw e;
    } finally {
      this.e.options.observer?.pull?.((performance.now() - t0) / 1000, ok);
    }
  }

  /** The image's configured USER ('' for root by default). */
  async imageUser(image: string): Promise<string> {
    const info = await this.e.call(`inspect image ${image}`, () => this.e.docker.getImage(image).inspect());
    return info.Config?.User ?? '';
  }

  /** What image GC needs to know of the engine: where it keeps its data, its images, which are in use. */
  async inventory(pinned: string): Promise<{ rootDir: string; images: Docker.ImageInfo[]; inUse: Set<string>; pinnedId: string }> {
    const info = await this.e.call('engine info', () => this.e.docker.info());
    const inUse = new Set((await this.e.call('list containers', () => this.e.docker.listContainers({ all: true }))).map((c) => c.ImageID));
    const pinnedId = await this.e.call(`inspect image ${pinned}`, () => this.e.docker.getImage(pinned).inspect()).then((i) => i.Id, () => '');
    const images = await this.e.call('list images', () => this.e.docker.listImages());
    return { rootDir: String(info.DockerRootDir ?? '/var/lib/docker'), images, inUse, pinnedId };
  }

  /**
   * Removes an unused image. An image with several tags cannot be removed by id without force
   * (which would also take it from under stopped containers): each tag goes first, then the image.
   */
  async remove(id: string, tags: readonly string[]): Promise<void> {
    for (const tag of tags) {
      await this.e.call(`untag image ${tag}`, () => this.e.docker.getImage(tag).remove({ force: false, noprune: false })).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
    }
    await this.e.call(`remove image ${id}`, () => this.e.docker.getImage(id).remove({ force: false })).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
  }
}
