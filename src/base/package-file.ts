import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
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

/**
 * Which build of podrun is running, as its file system knows it: every build writes
 * dist/build-info.json anew (a new inode and time), and an upgrade replaces it or the executable.
 * Undefined when run from source (tests, a checkout's src/), where what runs changes with no build.
 */
export function buildStamp(): string | undefined {
  try {
    const s = isSea()
      ? statSync(process.execPath)
      : /[\\/]dist[\\/]/.test(fileURLToPath(import.meta.url))
        ? statSync(new URL('../../dist/build-info.json', import.meta.url))
        : undefined;
    return s && `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return undefined;
  }
}
