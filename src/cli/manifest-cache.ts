import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../base/atomic-file.js';
import type { LoadedText, ManifestText, TextCache } from '../manifest/load.js';
import type { PodPolicy } from '../manifest/policy.js';
import { isNamed } from '../manifest/identity.js';

/**
 * The manifests `apply` loaded before, in the state directory: a file applied again unchanged (the
 * usual apply: one file of twenty edited, or none) is not parsed and validated again. What a text
 * loads to depends on its bytes, its name and source, the policy and podrun's own code, and nothing
 * else (src/manifest/ is pure), so those are the key: another build of podrun, another policy, or one
 * changed byte is a miss. The file is a cache: unreadable, damaged or from another build, it is
 * ignored and made anew; it is never fsynced. Each entry is kept as its JSON text, parsed when
 * asked: what an apply does with the pods it was given can never reach the file.
 */
const FILE = 'manifest-cache.json';
const VERSION = 2;
/** Entries kept: this apply's, then the most recent others, up to this many (a pod is 1-2 KB of JSON). */
const KEEP = 256;
/** A larger file is not read: no cache podrun writes grows to it. */
const MAX_BYTES = 16 * 1024 * 1024;

interface CacheFile {
  v: number;
  /** The build and policy the entries were made by. */
  made: string;
  /** Each text's LoadedText, as JSON text. */
  entries: Record<string, string>;
}

export interface ManifestCache extends TextCache {
  /** Writes what this apply added, if anything; a failure costs only the next apply's speed. */
  save(): void;
}

function keyOf(input: ManifestText): string {
  return createHash('sha256').update(`${input.file}\0${input.source}\0`).update(input.text).digest('hex');
}

/** An entry a damaged file could hold in place of one podrun wrote: not used (the text is loaded again). */
function wellFormed(e: unknown): e is LoadedText {
  const x = e as Partial<LoadedText> | null;
  return (
    typeof x === 'object' &&
    x !== null &&
    Array.isArray(x.issues) &&
    Array.isArray(x.pods) &&
    x.pods.every((p) => typeof p === 'object' && p !== null && typeof p.line === 'number' && isNamed(p.pod))
  );
}

function readEntries(path: string, made: string): Map<string, string> {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    if (fstatSync(fd).size > MAX_BYTES) return new Map();
    const file = JSON.parse(readFileSync(fd, 'utf8')) as Partial<CacheFile>;
    if (file.v !== VERSION || file.made !== made || typeof file.entries !== 'object' || file.entries === null) return new Map();
    return new Map(Object.entries(file.entries).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return new Map();
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** An entry's text made a LoadedText again; undefined for one a damaged file holds. */
function parsed(text: string): LoadedText | undefined {
  try {
    const e: unknown = JSON.parse(text);
    return wellFormed(e) ? e : undefined;
  } catch {
    return undefined;
  }
}

/** `build`: buildStamp() of the running podrun; undefined (run from source) makes a cache that knows nothing and keeps nothing. */
export function openManifestCache(stateDir: string, build: string | undefined, policy: PodPolicy): ManifestCache {
  if (build === undefined) return { get: () => undefined, put: () => undefined, save: () => undefined };
  const path = join(stateDir, FILE);
  const made = JSON.stringify([build, policy]);
  const old = readEntries(path, made);
  const used = new Map<string, string>();
  let added = false;
  return {
    get(input) {
      const key = keyOf(input);
      const text = old.get(key);
      const e = text === undefined ? undefined : parsed(text);
      if (text !== undefined && e) used.set(key, text);
      else old.delete(key);
      return e;
    },
    put(input, loaded) {
      used.set(keyOf(input), JSON.stringify(loaded));
      added = true;
    },
    save() {
      if (!added) return;
      const entries: Record<string, string> = {};
      let n = 0;
      for (const [k, e] of [...used, ...old]) {
        if (n >= KEEP) break;
        if (k in entries) continue;
        entries[k] = e;
        n++;
      }
      try {
        writeFileAtomic(path, JSON.stringify({ v: VERSION, made, entries } satisfies CacheFile), { durable: false });
      } catch {
        // A state dir that cannot take it: the next apply loads the files again, as without a cache.
      }
    },
  };
}
