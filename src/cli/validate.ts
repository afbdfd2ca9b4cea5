import { ManifestError } from '../manifest/errors.js';
import { loadManifestSet, type TextCache } from '../manifest/load.js';
import type { PodPolicy } from '../manifest/policy.js';
import type { DesiredPod } from '../manifest/types.js';
import { readManifestInputs } from '../sources/read.js';
import { EXIT, type Io } from './context.js';
import { printIssues } from './print.js';

/**
 * Reads and checks the manifests a command was given, printing every issue; undefined when any is
 * an error (one bad file and the command does nothing). `cache`: the texts loaded before (apply's,
 * manifest-cache.ts).
 */
export async function loadManifestArgs(
  paths: string[],
  io: Io,
  policy?: PodPolicy,
  cache?: TextCache,
): Promise<{ pods: DesiredPod[]; files: number } | undefined> {
  const read = await readManifestInputs(paths);
  try {
    const loaded = loadManifestSet(read.texts, policy, cache);
    printIssues(io, [...read.issues, ...loaded.issues]);
    return read.issues.some((i) => i.severity === 'error') ? undefined : { pods: loaded.pods, files: read.texts.length };
  } catch (err) {
    if (!(err instanceof ManifestError)) throw err;
    printIssues(io, [...read.issues, ...err.issues]);
    return undefined;
  }
}

export async function validateCommand(paths: string[], io: Io, policy?: PodPolicy): Promise<number> {
  const loaded = await loadManifestArgs(paths, io, policy);
  if (!loaded) return EXIT.failed;
  io.out(`valid: ${loaded.pods.length} pod${loaded.pods.length === 1 ? '' : 's'} in ${loaded.files} file${loaded.files === 1 ? '' : 's'}`);
  return EXIT.ok;
}
