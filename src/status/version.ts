import { readPackageFile } from '../base/package-file.js';

let cached: string | undefined;

/** podrun's version, from its package.json. */
export function podrunVersion(): string {
  cached ??= (JSON.parse(readPackageFile('package.json')) as { version: string }).version;
  return cached;
}

/** Which commit a build was made from and when (the commit's time, so two builds agree). */
export interface BuildInfo {
  commit: string;
  date: string;
}

/**
 * The record scripts/build-info.mjs writes into dist/ at every build. A tree run without one
 * (tests run from src/ before any build) says so rather than guessing.
 */
export function buildInfo(): BuildInfo {
  try {
    const b = JSON.parse(readPackageFile('dist/build-info.json')) as Partial<BuildInfo>;
    return { commit: typeof b.commit === 'string' ? b.commit : 'unknown', date: typeof b.date === 'string' ? b.date : 'unknown' };
  } catch {
    return { commit: 'unknown', date: 'unknown' };
  }
}

/** `podrun version`'s first line: the version, the commit and the build date. */
export function versionLine(): string {
  const b = buildInfo();
  return `podrun ${podrunVersion()} (commit ${b.commit}, built ${b.date})`;
}
