import { isAscii } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { getAsset, isSea } from 'node:sea';
import { Script } from 'node:vm';

// A CommonJS file run with V8's code cache beside it: the YAML parser and the Pod schema's
// validator are most of what `validate` and `apply` compile at every start, and Node 20 keeps no
// compile cache for modules. The bundle (scripts/bundle.mjs) writes NAME.cjs and, from a warm-up
// run, NAME.cache; a cache that V8 rejects (another Node, other flags) or that is missing only
// costs the compile it would have saved.
// In the single executable (scripts/package-sea.mjs) the files are its assets, under the same
// path as in the tree, and there is no cache: V8's caches differ from one build to the next, and
// the executable and its package must be the same bytes when built twice.

/** The wrapper, identical where the cache is made and where it is used (V8 checks the source). */
const wrap = (source: string): string => `(function (exports, require, module, __filename, __dirname) {${source}\n})`;

export interface CachedScript {
  exports: unknown;
  /** The compiled script, for making its cache after a warm-up. */
  script: Script;
  /** Whether V8 took the cache (undefined: there was none). */
  cacheRejected: boolean | undefined;
}

let nodeRequire: NodeJS.Require | undefined;

/** Where the build's warm-up (scripts/code-cache.mjs) collects the scripts a run compiled. */
const WARM_UP = Symbol.for('podrun.code-cache.warm-up');

/**
 * A file's text. UTF-8 decoding of podrun's bundle (640 KB) took about 2 ms of every start, Latin-1
 * about 0.8: for ASCII (every bundled file but a licence comment's name in undici) the two give the
 * same string, and the check is a hundredth of a millisecond.
 */
export function sourceText(bytes: Buffer): string {
  return bytes.toString(isAscii(bytes) ? 'latin1' : 'utf8');
}

export function runCachedScript(dir: string, name: string): CachedScript {
  const file = join(dir, `${name}.cjs`);
  const sea = isSea();
  let cachedData: Buffer | undefined;
  try {
    cachedData = sea ? undefined : readFileSync(join(dir, `${name}.cache`));
  } catch {
    cachedData = undefined;
  }
  const source = sourceText(sea ? Buffer.from(getAsset(`dist/bundle/${name}.cjs`)) : readFileSync(file));
  const script = new Script(wrap(source), { filename: file, ...(cachedData ? { cachedData } : {}) });
  const module = { exports: {} as unknown };
  // The files require only Node's own modules (their packages are bundled in): one require, made
  // on first use, serves them all.
  (script.runInThisContext() as (e: unknown, r: (id: string) => unknown, m: { exports: unknown }, f: string, d: string) => void)(
    module.exports,
    (id) => (nodeRequire ??= createRequire(file))(id),
    module,
    file,
    dir,
  );
  (globalThis as { [WARM_UP]?: Map<string, Script> })[WARM_UP]?.set(name, script);
  return { exports: module.exports, script, cacheRejected: cachedData ? script.cachedDataRejected === true : undefined };
}
