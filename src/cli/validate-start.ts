import { OPEN_POLICY } from '../manifest/policy.js';
import { processIo, type Io } from './process-io.js';
import { endWith, guardProcessStreams } from './process-start.js';
import { validateCommand } from './validate.js';

// `podrun validate PATH...` without the program: bin/podrun runs this file (dist/bundle/validate.cjs,
// with its own code cache) instead of podrun's whole bundle when the words are plainly `validate`
// and paths. Reading the bundle and its cache, and commander building the program and parsing the
// words, were a fifth of what a validate of 20 files cost beyond Node's own start. Anything else (an
// option anywhere, which may set the policy the pods are checked against, --help, no path, a
// PODRUN_* variable, which may name a --config file or a policy flag) is the program's, which
// answers the same words with the same lines (test/cli/validate-start.test.ts holds the two together).

/**
 * The paths of a plain `podrun validate PATH...`, when this file may answer it; undefined: the
 * program's. `-` (standard input) is a path; any other word that starts with `-` is an option.
 */
export function plainValidate(argv: readonly string[], env: NodeJS.ProcessEnv): string[] | undefined {
  const [verb, ...paths] = argv.slice(2);
  if (verb !== 'validate' || paths.length === 0) return undefined;
  if (paths.some((p) => p.startsWith('-') && p !== '-')) return undefined;
  if (Object.keys(env).some((name) => name.startsWith('PODRUN_'))) return undefined;
  return paths;
}

/**
 * What the program's `podrun validate PATH...` does with no option given: the policy is the one
 * its flags default to (every pod allowed, test/cli/validate-start.test.ts checks they agree).
 */
export function validatePlain(paths: string[], io: Io): Promise<number> {
  return validateCommand(paths, io, OPEN_POLICY);
}

/** bin/podrun's: answers `podrun validate PATH...` and returns true, or returns false for the program to run. */
export function start(): boolean {
  const paths = plainValidate(process.argv, process.env);
  if (!paths) return false;
  guardProcessStreams();
  endWith(validatePlain(paths, processIo));
  return true;
}
