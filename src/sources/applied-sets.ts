import { readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DesiredPod, Pod } from '../manifest/types.js';
import { isNamed, keyOf } from '../manifest/identity.js';
import { stageFileAtomic, writeFileAtomic } from '../base/atomic-file.js';

// What `podrun apply` applied is kept as one PodList file per set in <state-dir>/applied, so an
// agent on the same state directory takes it as one more source and supervises those pods.
// A pod is in one set at a time, the one that applied it last: as kubectl's, an apply updates
// the pod by name wherever its manifest came from (a file, another file, standard input), so two
// applies of one pod are never two claims on it. Each pod keeps where it was applied from, as
// given (`file:/abs/path`, `url:…`, `stdin`), for people to read in place of a set's hash.

import { APPLY_PREFIX } from './origin-names.js';

export { APPLY_PREFIX };

export function appliedDir(stateDir: string): string {
  return join(stateDir, 'applied');
}

function setPath(stateDir: string, setId: string): string {
  return join(appliedDir(stateDir), `${setId}.json`);
}

interface SetFile {
  pods: Pod[];
  /** namespace/name → where it was applied from. */
  sources: Map<string, string>;
  /**
   * namespace/name → when it was applied, as a count above every stamp on disk then: of two sets
   * that hold a pod (a move caught between its two writes), the higher stamp is the latest word.
   * A set written before stamps has none: 0, older than any apply since.
   */
  stamps: Map<string, number>;
}

/** A stamp as written; anything else (hand-edited, absurd) counts as none. */
function stampOfValue(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : undefined;
}

function stampsOf(list: { stamps?: unknown }): Map<string, number> {
  const s = list.stamps;
  if (!s || typeof s !== 'object' || Array.isArray(s)) return new Map();
  return new Map(Object.entries(s).flatMap(([k, v]) => (stampOfValue(v) === undefined ? [] : [[k, v as number] as const])));
}

/** `sources` of a set file's text: what each pod was applied from (a set written before it has none). */
export function appliedSources(text: string): Map<string, string> {
  try {
    const s = (JSON.parse(text) as { sources?: unknown }).sources;
    if (!s || typeof s !== 'object' || Array.isArray(s)) return new Map();
    return new Map(Object.entries(s).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return new Map();
  }
}

/** The pods a set file records; missing is empty, unreadable or corrupt is undefined (never "empty"). */
function readSet(path: string): SetFile | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? { pods: [], sources: new Map(), stamps: new Map() } : undefined;
  }
  try {
    const list = JSON.parse(text) as { items?: unknown; stamps?: unknown };
    // Hand-edited items that are no pods make the set unreadable, not the reader crash.
    if (!Array.isArray(list.items) || !list.items.every(isNamed)) return undefined;
    return { pods: list.items as Pod[], sources: appliedSources(text), stamps: stampsOf(list) };
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

/** A set file's text; undefined for a set of no pods, which has no file. */
function setText(set: SetFile): string | undefined {
  if (set.pods.length === 0) return undefined;
  const byKey = <T>(m: Map<string, T>): Record<string, T> =>
    Object.fromEntries(
      set.pods.flatMap((p) => {
        const v = m.get(keyOf(p));
        return v === undefined ? [] : [[keyOf(p), v]];
      }),
    );
  const sources = byKey(set.sources);
  const stamps = byKey(set.stamps);
  return `${JSON.stringify({ apiVersion: 'v1', kind: 'PodList', sources, stamps, items: set.pods }, null, 2)}\n`;
}

function writeSet(path: string, set: SetFile): void {
  const text = setText(set);
  if (text === undefined) rmSync(path, { force: true });
  else writeFileAtomic(path, text);
}

/** An apply's record made ready (stageAppliedSet): nothing on disk has changed yet. */
export interface StagedAppliedSet {
  /**
   * Records it: once this returns, the set is in place for every reader (an agent, a kill -9 after
   * it). The directory's fsync that makes it survive a power loss may still run: `durable` ends
   * with it (never rejects). Throws what a write that failed threw, having changed nothing.
   */
  commit(): Promise<{ durable: Promise<void> }>;
  /** Nothing is recorded (the apply stopped before the engine). */
  discard(): void;
}

/**
 * Records an apply: the set's pods become these, and leave every other set (the pod was
 * re-applied from elsewhere: it moves, it is not declared twice). Without prune, pods an earlier
 * apply of the set recorded stay (they are still wanted); with prune they go. In two steps, for
 * `apply`, which waits for the engine's list between them: the new set file is worked out and
 * written aside now, its fsync running in the thread pool while the list comes, so neither fsync
 * holds the engine's changes up. The sets on disk are read now.
 */
export function stageAppliedSet(stateDir: string, setId: string, pods: DesiredPod[], prune: boolean): StagedAppliedSet {
  const next = nextSet(stateDir, setId, pods, prune);
  const text = setText(next.set);
  const staged = text === undefined ? undefined : stageFileAtomic(next.path, text);
  const keys = new Set(pods.map((d) => d.key));
  return {
    async commit() {
      if (!next.previous) setAside(next.path);
      // Written first: between the two writes (or after a crash there) the pod is in both sets, and
      // the higher stamp says which is its set (applied-source.ts); it is never in neither.
      let durable: Promise<void> = Promise.resolve();
      if (staged) ({ durable } = await staged.commit());
      else rmSync(next.path, { force: true });
      forgetApplied(stateDir, keys, `${setId}.json`);
      return { durable };
    },
    discard: () => staged?.discard(),
  };
}

/** What an apply makes of the set's file: its pods, their sources and stamps. `previous` undefined: the file on disk is corrupt. */
function nextSet(stateDir: string, setId: string, pods: DesiredPod[], prune: boolean): { path: string; set: SetFile; previous: SetFile | undefined } {
  const path = setPath(stateDir, setId);
  const next = new Map<string, Pod>();
  const sources = new Map<string, string>();
  const stamps = new Map<string, number>();
  const previous = readSet(path);
  if (!prune) {
    for (const p of previous?.pods ?? []) next.set(keyOf(p), p);
    for (const [k, s] of previous?.sources ?? []) sources.set(k, s);
    for (const [k, s] of previous?.stamps ?? []) stamps.set(k, s);
  }
  const stamp = newestStamp(stateDir) + 1;
  for (const d of pods) {
    next.set(d.key, d.pod);
    sources.set(d.key, d.origin.source);
    stamps.set(d.key, stamp);
  }
  return { path, set: { pods: [...next.values()], sources, stamps }, previous };
}

/** The pods every set but `setId` records, by namespace/name: what a prune of `setId` must leave alone. */
export function appliedElsewhere(stateDir: string, setId: string): Set<string> {
  const keys = new Set<string>();
  for (const n of setNames(stateDir)) {
    if (n === `${setId}.json`) continue;
    for (const p of readSet(join(appliedDir(stateDir), n))?.pods ?? []) keys.add(keyOf(p));
  }
  return keys;
}

/** Every set on disk that can be read, by set id. */
function readSets(stateDir: string): Map<string, SetFile> {
  const sets = new Map<string, SetFile>();
  for (const n of setNames(stateDir)) {
    const set = readSet(join(appliedDir(stateDir), n));
    if (set) sets.set(n.slice(0, -'.json'.length), set);
  }
  return sets;
}

function newestStamp(stateDir: string): number {
  let newest = 0;
  for (const set of readSets(stateDir).values()) for (const s of set.stamps.values()) newest = Math.max(newest, s);
  return newest;
}

/** Which sets hold each pod on disk now, with its stamp there (0: written before stamps). */
export function appliedHolders(stateDir: string): Map<string, { setId: string; stamp: number }[]> {
  const holders = new Map<string, { setId: string; stamp: number }[]>();
  for (const [setId, set] of readSets(stateDir)) {
    for (const p of set.pods) {
      const k = keyOf(p);
      holders.set(k, [...(holders.get(k) ?? []), { setId, stamp: set.stamps.get(k) ?? 0 }]);
    }
  }
  return holders;
}

function setNames(stateDir: string): string[] {
  try {
    return readdirSync(appliedDir(stateDir)).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
}

/** Forgets deleted pods in every applied set (but `except`), so an agent does not bring them back. */
export function forgetApplied(stateDir: string, keys: Set<string>, except?: string): void {
  for (const n of setNames(stateDir)) {
    if (n === except) continue;
    const path = join(appliedDir(stateDir), n);
    const set = readSet(path);
    if (!set) continue;
    const kept = set.pods.filter((p) => !keys.has(keyOf(p)));
    if (kept.length !== set.pods.length) writeSet(path, { ...set, pods: kept });
  }
}
