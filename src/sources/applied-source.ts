import { basename } from 'node:path';
import { DirectorySource, type DirectorySourceOptions } from './dir-source.js';
import { appliedDir, appliedSources } from './applied-sets.js';
import { APPLY_PREFIX } from './origin-names.js';

// The applied sets as the agent's source. Apart from applied-sets.ts so that `podrun apply`, which
// only records sets, does not load the directory watcher (chokidar) at every start.

export function appliedSource(stateDir: string, o: Omit<DirectorySourceOptions, 'origin'> = {}): DirectorySource {
  return new DirectorySource(appliedDir(stateDir), {
    ...o,
    // Written atomically by podrun itself: no editor dance to wait for.
    removeGraceMs: 0,
    origin: { of: (path) => `${APPLY_PREFIX}${basename(path, '.json')}`, prefix: APPLY_PREFIX, shown: appliedSources },
  });
}
