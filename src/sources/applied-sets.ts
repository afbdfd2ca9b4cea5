import { readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { DesiredPod, Pod } from '../manifest/types.js';
import { writeFileAtomic } from '../base/atomic-file.js';
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

/** The pods a set file records; missing is empty, unreadable or corrupt is undefined (never "empty"). */
function readSet(path: string): Pod[] | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? [] : undefined;
  }
  try {
    const list = JSON.parse(text) as { items?: unknown };
    return Array.isArray(list.items) ? (list.items as Pod[]) : undefined;
  } catch {
    return undefined;
  }
}

/** A corrupt set file is kept aside for a person to look at, never silently overwritten. */
function setAside(path: string): void {
  try {
    renameSync(path, `${path}.corrupt-${Date.now()}`);
  } catch {
    // gone meanwhile
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
  const previous = readSet(path);
  if (!previous) setAside(path);
  if (!prune) for (const p of previous ?? []) next.set(keyOf(p), p);
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
    if (!pods) continue;
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
