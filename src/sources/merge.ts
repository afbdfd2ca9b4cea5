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

/**
 * Merges every origin into one desired set keyed by namespace/name. When two origins declare the
 * same pod, the one already in the desired set keeps it (nothing flips back and forth) and the
 * conflict is reported; a new key goes to the first origin in name order, deterministically.
 * Pure: `previous` maps key → the origin that held it.
 */
export function mergeOrigins(origins: OriginPods[], previous: ReadonlyMap<string, string>): MergeResult {
  const byKey = new Map<string, { origin: string; pod: DesiredPod }[]>();
  for (const o of [...origins].sort((a, b) => a.origin.localeCompare(b.origin))) {
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
    const chosen = list.find((x) => x.origin === holder) ?? list[0];
    if (!chosen) continue;
    pods.set(key, chosen.pod);
    if (list.length > 1) {
      conflicts.push({ key, kept: chosen.origin, origins: [chosen.origin, ...list.filter((x) => x !== chosen).map((x) => x.origin)] });
    }
  }
  return { pods, conflicts };
}
