import type { Logger } from '../log/logger.js';
import { readdirSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { mapLimit } from '../reconcile/converge.js';
import type { ObservedPod } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import { removeTree } from '../runtime/safe-mount.js';
import { podDir } from '../runtime/volumes.js';
import {
  DEFAULT_CONTAINER_GC,
  DEFAULT_IMAGE_GC,
  planContainerGc,
  planImageGc,
  type ContainerGcPolicy,
  type ImageGcPolicy,
  type ImageInfo,
  type Removal,
} from './plan.js';

export interface GcOptions {
  stateDir: string;
  pauseImage: string;
  containers?: ContainerGcPolicy;
  images?: ImageGcPolicy;
  log?: Logger;
  /** Image references the declared pods use: never collected, even while no container of theirs exists. */
  neededImages?: () => Iterable<string>;
}

/** A reference as the engine lists it in RepoTags (Docker Hub's prefixes dropped, :latest added). */
export function normalizeRef(ref: string): string {
  let r = ref.replace(/^(docker\.io|index\.docker\.io)\/(library\/)?/, '');
  if (!r.includes('@') && !/:[^/]+$/.test(r)) r = `${r}:latest`;
  return r;
}

export interface ContainerGcResult {
  removals: Removal[];
  podsGone: string[];
  removed: number;
  failed: number;
}

export interface ImageGcResult {
  usagePercent: number;
  candidates: { id: string; tags: string[]; size: number }[];
  removed: number;
  freedBytes: number;
}

/** Counts of what went, for /metrics. */
export interface GcCounters {
  containersRemoved: number;
  podsRemoved: number;
  imagesRemoved: number;
  imageBytesFreed: number;
  runs: number;
}

/** Carries out the GC plans against the engine; only podrun's own containers (its instance) are touched. */
export class GarbageCollector {
  readonly counters: GcCounters = { containersRemoved: 0, podsRemoved: 0, imagesRemoved: 0, imageBytesFreed: 0, runs: 0 };
  private readonly firstSeen = new Map<string, number>();
  private readonly lastUsed = new Map<string, number>();

  constructor(
    private readonly rt: PodEngine,
    private readonly o: GcOptions,
  ) {}

  /** Images whose first sighting and last use are kept: at most the engine's images. */
  stateSize(): Record<string, number> {
    return { gcFirstSeen: this.firstSeen.size, gcLastUsed: this.lastUsed.size };
  }

  async collectContainers(pods: ObservedPod[], desired: ReadonlySet<string> | undefined, dryRun: boolean): Promise<ContainerGcResult> {
    const plan = planContainerGc(pods, desired, this.o.containers ?? DEFAULT_CONTAINER_GC);
    if (dryRun) return { ...plan, removed: 0, failed: 0 };
    let removed = 0;
    let failed = 0;
    // The engine removes in parallel well; more than a handful at once only queues in dockerd.
    await mapLimit(plan.removals, 8, async (r) => {
      try {
        await (r.sandbox ? this.rt.removeSandbox(r.id) : this.rt.removeContainer(r.id));
        removed++;
      } catch {
        failed++;
      }
    });
    for (const uid of plan.podsGone) await this.rt.removePodVolumes(uid).catch(() => undefined);
    if (desired) await this.removeOrphanDirs(pods, desired);
    this.counters.containersRemoved += removed;
    this.counters.podsRemoved += plan.podsGone.length;
    this.counters.runs++;
    if (removed || failed)
      this.o.log?.info(
        `gc: removed ${removed} dead container(s)${failed ? `, ${failed} failed` : ''}${plan.podsGone.length ? `, ${plan.podsGone.length} pod(s) gone` : ''}`,
      );
    return { ...plan, removed, failed };
  }

  /** emptyDir directories of pods that neither exist nor are wanted. */
  private async removeOrphanDirs(pods: ObservedPod[], desired: ReadonlySet<string>): Promise<void> {
    const known = new Set([...pods.map((p) => p.uid), ...desired]);
    let uids: string[];
    try {
      uids = readdirSync(join(this.o.stateDir, 'pods'));
    } catch {
      return;
    }
    for (const uid of uids) if (!known.has(uid)) await removeTree(podDir(this.o.stateDir, uid)).catch(() => undefined);
  }

  async imageCandidates(): Promise<{ images: ImageInfo[]; usage: { capacity: number; used: number } }> {
    const now = Date.now();
    const inv = await this.rt.imageInventory(this.o.pauseImage);
    const st = statfsSync(inv.rootDir);
    const usage = { capacity: st.blocks * st.bsize, used: (st.blocks - st.bfree) * st.bsize };
    const { inUse, pinnedId: pause } = inv;
    const needed = new Set([...(this.o.neededImages?.() ?? [])].map(normalizeRef));
    const isNeeded = (i: (typeof inv.images)[number]): boolean => [...i.tags, ...i.digests].some((t) => needed.has(normalizeRef(t)));
    // An image the engine no longer has (collected, or removed by anyone) is forgotten: 1,000
    // images pulled and collected over a year must not leave 1,000 times behind.
    const present = new Set(inv.images.map((i) => i.id));
    for (const seen of [this.firstSeen, this.lastUsed]) for (const id of seen.keys()) if (!present.has(id)) seen.delete(id);
    const images = inv.images.map((i): ImageInfo => {
      if (!this.firstSeen.has(i.id)) this.firstSeen.set(i.id, now);
      if (inUse.has(i.id)) this.lastUsed.set(i.id, now);
      return {
        id: i.id,
        tags: i.tags,
        size: i.sizeBytes,
        inUse: inUse.has(i.id),
        pinned: i.id === pause || inv.enginePinned?.has(i.id) === true || isNeeded(i),
        firstSeen: this.firstSeen.get(i.id) ?? now,
        lastUsed: this.lastUsed.get(i.id) ?? this.firstSeen.get(i.id) ?? now,
      };
    });
    return { images, usage };
  }

  async collectImages(dryRun: boolean): Promise<ImageGcResult> {
    const { images, usage } = await this.imageCandidates();
    const doomed = planImageGc(images, usage, Date.now(), this.o.images ?? DEFAULT_IMAGE_GC);
    const usagePercent = usage.capacity ? (usage.used / usage.capacity) * 100 : 0;
    const candidates = doomed.map((i) => ({ id: i.id, tags: i.tags, size: i.size }));
    if (dryRun) return { usagePercent, candidates, removed: 0, freedBytes: 0 };
    let removed = 0;
    let freedBytes = 0;
    for (const i of doomed) {
      try {
        await this.rt.removeImage(i.id, i.tags);
        this.firstSeen.delete(i.id);
        this.lastUsed.delete(i.id);
        removed++;
        freedBytes += i.size;
      } catch {
        // In use after all, or removed meanwhile: it simply stays.
      }
    }
    this.counters.imagesRemoved += removed;
    this.counters.imageBytesFreed += freedBytes;
    if (removed) this.o.log?.info(`image gc: disk at ${usagePercent.toFixed(1)}%, removed ${removed} image(s), ${(freedBytes / 1e6).toFixed(1)} MB`);
    return { usagePercent, candidates, removed, freedBytes };
  }
}
