import { readFileSync, realpathSync, statfsSync, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { ReadFile } from '../cgroup-stats.js';
import type { SignalHandle } from './exit-signals.js';

// A container's end as the kernel tells it: cgroup v2's `cgroup.events` says `populated 0` once
// the last process of the cgroup (and those below it) has exited, and the kernel notifies a
// change of that file to inotify (fs.watch), with no polling. The runtime's cgroup for a
// container is found as the stats find it (readings.ts: the verbose status's pid, then the `0::`
// line of /proc/<pid>/cgroup), which holds for any cgroup parent and either cgroup driver.
// Tried here: a cgroup v1 host in hybrid mode (v1 controllers, v2 mounted at
// /sys/fs/cgroup/unified): runc places each container in the v2 tree too, so the signal works
// there as on a pure v2 host. v1 alone has no such file (its release_agent is one per hierarchy,
// for the whole machine): no signal then, the relist alone.

/** CGROUP2_SUPER_MAGIC (linux/magic.h): the only filesystem whose `cgroup.events` is the kernel's. */
const CGROUP2_MAGIC = 0x63677270;

/**
 * The cgroup v2 tree's root: /sys/fs/cgroup itself on a v2 host, /sys/fs/cgroup/unified on a
 * hybrid one; undefined where there is none (v1 alone, or no cgroupfs visible).
 */
export function unifiedRoot(root = '/sys/fs/cgroup', typeOf: (p: string) => number | undefined = fsType): string | undefined {
  for (const dir of [root, join(root, 'unified')]) if (typeOf(dir) === CGROUP2_MAGIC) return dir;
  return undefined;
}

function fsType(path: string): number | undefined {
  try {
    return statfsSync(path).type;
  } catch {
    return undefined;
  }
}

/**
 * The `cgroup.events` file of container `id`, given its cgroup `rel` (relative to the v2 root), or
 * undefined when it is not one to trust: the cgroup's last part must name the container (every
 * runtime's does: `<parent>/<id>`, `cri-containerd-<id>.scope`, `crio-<id>.scope`), which a pid
 * reused by another process between the status and the /proc read would not; and the file must
 * resolve to itself, under the root (no symlink followed out of /sys/fs/cgroup, no `..`).
 */
export function cgroupEventsPath(v2root: string, rel: string, id: string, real: (p: string) => string = realpathSync): string | undefined {
  const parts = rel.split('/').filter(Boolean);
  if (!parts.length || parts.includes('..') || parts.includes('.') || !parts[parts.length - 1]!.includes(id) || id.length < 8) return undefined;
  const path = join(v2root, ...parts, 'cgroup.events');
  try {
    const root = real(v2root);
    const resolved = real(path);
    return resolved === join(root, ...parts, 'cgroup.events') && resolved.startsWith(`${root}/`) ? resolved : undefined;
  } catch {
    return undefined; // gone already (the container ended before it was looked at) or never there
  }
}

/** Whether a `cgroup.events` text says the cgroup is empty; a file that cannot be read is a cgroup removed: ended too. */
export function eventsSayEnded(text: string | undefined): boolean {
  if (text === undefined) return true;
  const m = /^populated (\d)$/m.exec(text);
  return m ? m[1] === '0' : false;
}

const readEvents: ReadFile = (p) => {
  try {
    // A few dozen bytes from cgroupfs; read whole, never more than the kernel writes.
    return readFileSync(p, 'utf8').slice(0, 4096);
  } catch {
    return undefined;
  }
};

/** The signal of one container: an inotify watch on its `cgroup.events`; any change, or the watch's failure, fires. */
export function openCgroupSignal(path: string, fire: () => void, read: ReadFile = readEvents): SignalHandle | undefined {
  let w: FSWatcher;
  try {
    w = watch(path, { persistent: false }, () => fire());
  } catch {
    return undefined;
  }
  // The cgroup removed under the watch (the runtime cleaned up): an error, or no more changes; either way a look.
  w.on('error', () => fire());
  return {
    ended: () => eventsSayEnded(read(path)),
    close: () => w.close(),
  };
}
