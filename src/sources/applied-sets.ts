import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { DesiredPod, Pod } from '../manifest/types.js';
import { writeFileAtomic } from './atomic-file.js';
import { DirectorySource, type DirectorySourceOptions } from './dir-source.js';

// What `podrun apply` applied is kept as one PodList file per set in <state-dir>/applied, so an
// agent on the same state directory takes it as one more source and supervises those pods.

export const APPLY_PREFIX = 'apply:';

export function appliedDir(stateDir: string): string {
  return join(stateDir, 'applied');
}

function setPath(stateDir: string, setId: string): string {
  return join(appliedDir(stateDir), `${setId}.json`);
}

function readSet(path: string): Pod[] {
  try {
    const list = JSON.parse(readFileSync(path, 'utf8')) as { items?: Pod[] };
    return list.items ?? [];
  } catch {
    return [];
  }
}

function writeSet(path: string, pods: Pod[]): void {
  if (pods.length === 0) {
    rmSync(path, { force: true });
    return;
  }
  writeFileAtomic(path, `${JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: pods }, null, 2)}\n`);
}

const keyOf = (p: Pod): string => `${p.metadata.namespace ?? 'default'}/${p.metadata.name}`;

/**
 * Records an apply: the set's pods become these. Without prune, pods an earlier apply of the set
 * recorded stay (they are still wanted); with prune they go.
 */
export function recordAppliedSet(stateDir: string, setId: string, pods: DesiredPod[], prune: boolean): void {
  const path = setPath(stateDir, setId);
  const next = new Map<string, Pod>();
  if (!prune) for (const p of readSet(path)) next.set(keyOf(p), p);
  for (const d of pods) next.set(d.key, d.pod);
  writeSet(path, [...next.values()]);
}

/** Forgets deleted pods in every applied set, so an agent does not bring them back. */
export function forgetApplied(stateDir: string, keys: Set<string>): void {
  let names: string[];
  try {
    names = readdirSync(appliedDir(stateDir)).filter((n) => n.endsWith('.json'));
  } catch {
    return;
  }
  for (const n of names) {
    const path = join(appliedDir(stateDir), n);
    const pods = readSet(path);
    const kept = pods.filter((p) => !keys.has(keyOf(p)));
    if (kept.length !== pods.length) writeSet(path, kept);
  }
}

export function appliedSource(stateDir: string, o: Omit<DirectorySourceOptions, 'origin'> = {}): DirectorySource {
  return new DirectorySource(appliedDir(stateDir), {
    ...o,
    // Written atomically by podrun itself: no editor dance to wait for.
    removeGraceMs: 0,
    origin: { of: (path) => `${APPLY_PREFIX}${basename(path, '.json')}`, prefix: APPLY_PREFIX },
  });
}
