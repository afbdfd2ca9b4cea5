import { promisify } from 'node:util';
import { parseQuantity } from '../../manifest/quantity.js';
import type { Volume } from '../../manifest/types.js';
import { mountsUnder } from '../safe-mount.js';

// A `medium: Memory` emptyDir on CRI: a runtime has no volumes of its own, so, as the kubelet's
// emptyDir plugin (pkg/volume/emptydir/empty_dir.go setupTmpfs), podrun mounts a tmpfs on the
// volume's host directory and the containers bind-mount that. Its size is podrun's rule on Docker:
// sizeLimit when given (a write past it fails with ENOSPC), else the kernel's default. The pod's
// directory removal (removeTree) unmounts it first.

/** The tmpfs mount options of a memory volume. */
export function tmpfsOptions(v: Volume): string {
  const size = v.emptyDir?.sizeLimit !== undefined ? `,size=${Math.floor(parseQuantity(v.emptyDir.sizeLimit))}` : '';
  // World-writable as every emptyDir (containers run as any user); no device files or setuid
  // binaries: a container's file there is seen by the pod's others.
  return `mode=0777,nosuid,nodev${size}`;
}

/** Mounts the tmpfs at `dir` unless one is there already (an adopted pod keeps what it wrote). */
export async function mountMemoryVolume(dir: string, v: Volume): Promise<void> {
  if (mountsUnder(dir).includes(dir)) return;
  try {
    // Node's process spawning loaded only for such a volume: not by every command on a CRI runtime.
    const { execFile } = await import('node:child_process');
    await promisify(execFile)('mount', ['-t', 'tmpfs', '-o', tmpfsOptions(v), 'tmpfs', dir]);
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`cannot mount a tmpfs for the medium: Memory emptyDir ${v.name}: ${(e.stderr ?? '').trim() || e.message}`);
  }
}
