import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Script } from 'node:vm';

// A CommonJS file run with V8's code cache beside it: the YAML parser and the Pod schema's
// validator are most of what `validate` and `apply` compile at every start, and Node 20 keeps no
// compile cache for modules. The bundle (scripts/bundle.mjs) writes NAME.cjs and, from a warm-up
// run, NAME.cache; a cache that V8 rejects (another Node, other flags) or that is missing only
// costs the compile it would have saved.

/** The wrapper, identical where the cache is made and where it is used (V8 checks the source). */
const wrap = (source: string): string => `(function (exports, require, module) {${source}\n})`;

export interface CachedScript {
  exports: unknown;
  /** The compiled script, for making its cache after a warm-up. */
  script: Script;
  /** Whether V8 took the cache (undefined: there was none). */
  cacheRejected: boolean | undefined;
}

export function runCachedScript(dir: string, name: string): CachedScript {
  const file = join(dir, `${name}.cjs`);
  let cachedData: Buffer | undefined;
  try {
    cachedData = readFileSync(join(dir, `${name}.cache`));
  } catch {
    cachedData = undefined;
  }
  const script = new Script(wrap(readFileSync(file, 'utf8')), { filename: file, ...(cachedData ? { cachedData } : {}) });
  const module = { exports: {} as unknown };
  (script.runInThisContext() as (e: unknown, r: NodeJS.Require, m: { exports: unknown }) => void)(module.exports, createRequire(file), module);
  return { exports: module.exports, script, cacheRejected: cachedData ? script.cachedDataRejected === true : undefined };
}
