import { SANDBOX_NAME } from '../runtime/labels.js';
import { isActive, type ObservedContainer, type ObservedPod, type ObservedSandbox } from '../runtime/observed.js';

// Garbage collection decisions, pure: what to remove given what the engine holds. The I/O that
// carries them out lives in gc/collector.ts.

export interface ContainerGcPolicy {
  /** Dead instances kept per pod container (for `logs --previous`); the kubelet's default is 1. */
  maxPerPodContainer: number;
  /** Cap on dead containers across all pods; undefined = no cap. */
  maxContainers?: number;
}

export const DEFAULT_CONTAINER_GC: ContainerGcPolicy = { maxPerPodContainer: 1 };

export interface Removal {
  id: string;
  /** A pod sandbox (the engine removes those by their own call), not a container. */
  sandbox?: true;
  pod: string;
  container: string;
  reason: string;
}

export interface ContainerGcPlan {
  removals: Removal[];
  /** Pods to delete whole (not desired, nothing running): their emptyDirs go too. */
  podsGone: string[];
}

function isDead(c: ObservedContainer): boolean {
  return !isActive(c) && c.state !== 'created';
}

/** A sandbox not ready and not being restarted by the engine: nothing of the pod runs in it. */
function isDeadSandbox(s: ObservedSandbox): boolean {
  return !isActive(s);
}

/**
 * The kubelet's container GC: per pod container, dead instances beyond the newest N; sandboxes that
 * are dead and not the newest; every container of a pod that is not desired and has nothing
 * running; then, over a global cap, the oldest dead containers first. `desired` is undefined when
 * the caller cannot know what is wanted (no agent): then no pod is removed whole.
 */
export function planContainerGc(
  pods: ObservedPod[],
  desired: ReadonlySet<string> | undefined,
  policy: ContainerGcPolicy = DEFAULT_CONTAINER_GC,
): ContainerGcPlan {
  const removals: Removal[] = [];
  const podsGone: string[] = [];
  const survivors: ObservedContainer[] = [];
  for (const p of pods) {
    const key = `${p.namespace}/${p.name}`;
    if (desired && !desired.has(p.uid) && !p.sandboxes.some(isActive) && !p.containers.some(isActive)) {
      for (const s of p.sandboxes) removals.push({ id: s.id, sandbox: true, pod: key, container: SANDBOX_NAME, reason: 'pod no longer desired' });
      for (const c of p.containers) removals.push({ id: c.id, pod: key, container: c.name, reason: 'pod no longer desired' });
      podsGone.push(p.uid);
      continue;
    }
    p.sandboxes.forEach((s, i) => {
      if (i > 0 && isDeadSandbox(s))
        removals.push({ id: s.id, sandbox: true, pod: key, container: SANDBOX_NAME, reason: 'dead sandbox of an earlier attempt' });
    });
    const seen = new Map<string, number>();
    for (const c of p.containers) {
      if (!isDead(c)) continue;
      const n = (seen.get(c.name) ?? 0) + 1;
      seen.set(c.name, n);
      if (n > policy.maxPerPodContainer)
        removals.push({ id: c.id, pod: key, container: c.name, reason: `more than ${policy.maxPerPodContainer} dead instance(s)` });
      else survivors.push(c);
    }
  }
  if (policy.maxContainers !== undefined && survivors.length > policy.maxContainers) {
    const oldest = [...survivors].sort((a, b) => (a.created ?? 0) - (b.created ?? 0)).slice(0, survivors.length - policy.maxContainers);
    const owner = new Map(pods.flatMap((p) => p.containers.map((c) => [c.id, `${p.namespace}/${p.name}`] as const)));
    for (const c of oldest)
      removals.push({ id: c.id, pod: owner.get(c.id) ?? '', container: c.name, reason: `over the global cap of ${policy.maxContainers} dead containers` });
  }
  return { removals, podsGone };
}

export interface ImageGcPolicy {
  highPercent: number;
  lowPercent: number;
  /** Images first seen more recently than this are never removed. */
  minAgeMs: number;
}

export const DEFAULT_IMAGE_GC: ImageGcPolicy = { highPercent: 85, lowPercent: 80, minAgeMs: 2 * 60_000 };

export interface ImageInfo {
  id: string;
  tags: string[];
  size: number;
  inUse: boolean;
  pinned: boolean;
  firstSeen: number;
  lastUsed: number;
}

export interface DiskUsage {
  capacity: number;
  used: number;
}

/**
 * The kubelet's image GC: above the high threshold, remove unused images, least recently used
 * first, until usage is below the low threshold (by the images' sizes); never an image in use,
 * pinned (the sandbox image), or first seen less than minAge ago.
 */
export function planImageGc(images: ImageInfo[], disk: DiskUsage, now: number, policy: ImageGcPolicy = DEFAULT_IMAGE_GC): ImageInfo[] {
  if (disk.capacity <= 0) return [];
  const percent = (disk.used / disk.capacity) * 100;
  if (percent < policy.highPercent) return [];
  let toFree = disk.used - (disk.capacity * policy.lowPercent) / 100;
  const candidates = images
    .filter((i) => !i.inUse && !i.pinned && now - i.firstSeen >= policy.minAgeMs)
    .sort((a, b) => a.lastUsed - b.lastUsed || b.size - a.size);
  const out: ImageInfo[] = [];
  for (const i of candidates) {
    if (toFree <= 0) break;
    out.push(i);
    toFree -= i.size;
  }
  return out;
}
