import { localeOrder } from '../base/locale-order.js';
import type { DesiredPod } from '../manifest/types.js';

/** The pods one origin (a file, a URL, an applied set) currently contributes: its last good set. */
export interface OriginPods {
  origin: string;
  pods: DesiredPod[];
}

export interface Conflict {
  key: string;
  /** The origin whose pod is kept. */
  kept: string;
  /** Every origin that declares the key, kept one first. */
  origins: string[];
}

export interface MergeResult {
  pods: Map<string, DesiredPod>;
  conflicts: Conflict[];
}

/** Pods are never changed once read: each one's digest is made once, not at every merge. */
const digests = new WeakMap<object, string>();

/** A declaration is told apart by its pod alone: where it came from is not what runs. */
export function podDigest(d: DesiredPod): string {
  let s = digests.get(d.pod);
  if (s === undefined) {
    s = JSON.stringify(d.pod);
    digests.set(d.pod, s);
  }
  return s;
}

/**
 * Merges every origin into one desired set keyed by namespace/name. Origins that declare the
 * same pod alike declare one pod: no conflict (a watched file applied by hand as well). When
 * they differ, a declaration that `takesOver` (the caller's word: one that changed since the
 * last merge, where an apply is involved, as kubectl's apply is the last update by name) takes
 * the pod; else the one already in the desired set keeps it (nothing flips back and forth, and a
 * stray copy of a watched file does not replace the pod that runs); a new key goes to the first
 * origin in name order, deterministically. Differing declarations are reported as a conflict.
 * Pure: `previous` maps key → the origin that held it.
 */
export function mergeOrigins(
  origins: OriginPods[],
  previous: ReadonlyMap<string, string>,
  takesOver: (origin: string, d: DesiredPod, holder: string | undefined) => boolean = () => false,
): MergeResult {
  const byKey = new Map<string, { origin: string; pod: DesiredPod }[]>();
  for (const o of [...origins].sort((a, b) => localeOrder(a.origin, b.origin))) {
    for (const pod of o.pods) {
      const list = byKey.get(pod.key) ?? [];
      list.push({ origin: o.origin, pod });
      byKey.set(pod.key, list);
    }
  }
  const pods = new Map<string, DesiredPod>();
  const conflicts: Conflict[] = [];
  for (const [key, list] of byKey) {
    const holder = previous.get(key);
    const held = list.find((x) => x.origin === holder);
    const differs = list.some((x) => podDigest(x.pod) !== podDigest(list[0]!.pod));
    const newer = differs && held ? list.find((x) => x !== held && takesOver(x.origin, x.pod, held.origin)) : undefined;
    const chosen = newer ?? held ?? list[0];
    if (!chosen) continue;
    pods.set(key, chosen.pod);
    if (differs) {
      conflicts.push({ key, kept: chosen.origin, origins: [chosen.origin, ...list.filter((x) => x !== chosen).map((x) => x.origin)] });
    }
  }
  return { pods, conflicts };
}
