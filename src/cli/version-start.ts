import { versionLine } from '../status/version.js';
import { EXIT, processIo, type Io } from './process-io.js';
import { dockerEngineLine } from './engine-version.js';
import { endWith, guardProcessStreams } from './process-start.js';

// `podrun version` without the program: bin/podrun runs this file (dist/bundle/version.cjs, a few
// KiB) instead of podrun's whole bundle when the words are plainly `version` or `version --client`.
// Reading and compiling the bundle, commander building the program and parsing the words were
// most of what `version` cost beyond Node's own start; and the engine's answer to GET /version is
// asked for first, so that it comes while podrun's own version line is read. Anything else (an
// option of podrun's before the verb, --help, any other word, a PODRUN_* variable, which may name a
// --config file or a CRI runtime) is the program's, which answers the same words with the same
// lines (view-commands.ts's addVersion: test/cli/version-start.test.ts holds the two together).

/** What `podrun version` the words ask for, when this file may answer them; undefined: the program's. */
export function plainVersion(argv: readonly string[], env: NodeJS.ProcessEnv): { client: boolean } | undefined {
  const words = argv.slice(2);
  if (words[0] !== 'version' || words.length > 2 || (words.length === 2 && words[1] !== '--client')) return undefined;
  if (Object.keys(env).some((name) => name.startsWith('PODRUN_'))) return undefined;
  return { client: words.length === 2 };
}

/** Prints what the program's `podrun version` (without options before the verb) prints. */
export async function printVersion(client: boolean, io: Io): Promise<number> {
  // Asked before anything else is read: the engine answers while the version line is made.
  const engine = client ? undefined : dockerEngineLine(undefined);
  io.out(versionLine());
  if (engine) io.out(await engine);
  return EXIT.ok;
}

/** bin/podrun's: answers `podrun version` and returns true, or returns false for the program to run. */
export function start(): boolean {
  const plain = plainVersion(process.argv, process.env);
  if (!plain) return false;
  guardProcessStreams();
  endWith(printVersion(plain.client, processIo));
  return true;
}
