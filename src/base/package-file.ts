import { readFileSync } from 'node:fs';
import { getAsset, isSea } from 'node:sea';

/**
 * A file podrun ships beside its code (a schema, package.json, the build's record), by its path
 * from the package root. Read from the checkout or the installed tree (every module that calls
 * this is two levels below the root: src/base, dist/bundle), or from the single executable's own
 * assets, where there is no tree at all (scripts/package-sea.mjs embeds these same paths).
 */
export function readPackageFile(path: string): string {
  if (isSea()) return getAsset(path, 'utf8');
  return readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
}
