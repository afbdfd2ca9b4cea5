import { ManifestError } from '../manifest/errors.js';
import { loadManifestSet } from '../manifest/load.js';
import type { PodPolicy } from '../manifest/policy.js';
import { readManifestInputs } from '../sources/read.js';
import { EXIT, type Io } from './context.js';
import { printIssues } from './print.js';

export async function validateCommand(paths: string[], io: Io, policy?: PodPolicy): Promise<number> {
  const read = await readManifestInputs(paths);
  try {
    const loaded = loadManifestSet(read.texts, policy);
    printIssues(io, [...read.issues, ...loaded.issues]);
    if (read.issues.some((i) => i.severity === 'error')) return EXIT.failed;
    io.out(`valid: ${loaded.pods.length} pod${loaded.pods.length === 1 ? '' : 's'} in ${read.texts.length} file${read.texts.length === 1 ? '' : 's'}`);
    return EXIT.ok;
  } catch (err) {
    if (!(err instanceof ManifestError)) throw err;
    printIssues(io, [...read.issues, ...err.issues]);
    return EXIT.failed;
  }
}
