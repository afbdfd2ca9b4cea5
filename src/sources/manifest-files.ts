import { basename, extname } from 'node:path';

const EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

/**
 * Whether a directory entry is a manifest. Unlike the kubelet (which reads every non-dot file, so
 * a `.bak` copy silently overrides the real manifest: kubernetes #136962, #83708), only YAML and
 * JSON files count, and editor swap/backup/probe files never do.
 */
export function isManifestFileName(path: string): boolean {
  const name = basename(path);
  if (name.startsWith('.') || name.startsWith('#')) return false;
  if (name.endsWith('~') || name === '4913') return false;
  return EXTENSIONS.has(extname(name).toLowerCase());
}

/** Manifests are read whole into memory; bigger than this is a mistake, as for the kubelet. */
export const MAX_MANIFEST_BYTES = 10 * 1024 * 1024;
