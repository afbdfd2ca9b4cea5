import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ReadFile } from '../../src/runtime/cgroup-stats.js';

// The cgroup trees recorded from real kernels (test/fixtures/cgroup), as the readers see them.

export const tree =
  (files: Record<string, string>): ReadFile =>
  (p) =>
    files[p];

/** A recorded tree, `== path` then the file; the placeholders in its paths become these ids. */
export function recorded(name: string, ids: Record<string, string>): Record<string, string> {
  const text = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../fixtures/cgroup', name), 'utf8');
  const out: Record<string, string> = {};
  for (const part of text.split(/^== /m).filter(Boolean)) {
    const nl = part.indexOf('\n');
    const path = part.slice(0, nl).replace(/SANDBOXID|APPID|\bID\b/g, (k) => ids[k]!);
    out[`/sys/fs/cgroup/${path}`] = part.slice(nl + 1);
  }
  return out;
}
