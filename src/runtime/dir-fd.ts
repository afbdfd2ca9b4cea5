import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, rmdirSync, unlinkSync } from 'node:fs';

// Descriptor-relative file operations for directories a container can write. Node has no
// openat/mkdirat/unlinkat, but on Linux /proc/self/fd/<fd> is a magic link to the very object the
// descriptor holds: `/proc/self/fd/<dir>/<name>` looks `name` up in that directory whatever its
// path says by now, so a parent fixed by a descriptor cannot be swapped for a symlink between a
// check and a use. Only the final name is looked up by the kernel, and it is never followed here
// (O_NOFOLLOW, lstat, unlink, rmdir and mkdir never follow a final symlink).

/** Opens for identity only: no read, never blocks on a FIFO (Linux O_PATH). */
export const O_PATH = 0o10000000;

/** `name` inside the directory `dir` holds (a descriptor), as a path the kernel resolves from the descriptor. */
export function at(dir: number, name: string): string {
  return `/proc/self/fd/${dir}/${name}`;
}

/** Where the object a descriptor holds is now, as the kernel names it. */
export function fdPath(fd: number): string {
  return readlinkSync(`/proc/self/fd/${fd}`);
}

export function errCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

/** A second descriptor for what `fd` holds (O_PATH; dup(2) through /proc). */
export function reopen(fd: number): number {
  return openSync(`/proc/self/fd/${fd}`, O_PATH | constants.O_DIRECTORY);
}

/**
 * Opens (O_PATH) an absolute path that has no symlinks in it, one component at a time from `/`,
 * following none: a component that is a symlink by now (swapped in after the path was resolved)
 * is refused with `SymlinkOnPath`, not followed. The last component may be any kind of file.
 */
export function openNoSymlinks(real: string): number {
  const parts = real.split('/').filter((p) => p !== '');
  let fd = openSync('/', O_PATH | constants.O_DIRECTORY);
  try {
    for (const [i, part] of parts.entries()) {
      const child = openSync(at(fd, part), O_PATH | constants.O_NOFOLLOW);
      closeSync(fd);
      fd = child;
      const st = fstatSync(fd);
      if (st.isSymbolicLink()) throw new SymlinkOnPath(`/${parts.slice(0, i + 1).join('/')}`);
      if (i < parts.length - 1 && !st.isDirectory()) throw Object.assign(new Error(`/${parts.slice(0, i + 1).join('/')} is not a directory`), { code: 'ENOTDIR' });
    }
    return fd;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

export class SymlinkOnPath extends Error {
  constructor(readonly path: string) {
    super(`${path} is a symlink`);
    this.name = 'SymlinkOnPath';
  }
}

/** A directory's own text of a symlink named `name` in it, or undefined when it is no symlink by now. */
export function readLinkAt(dir: number, name: string): string | undefined {
  try {
    return readlinkSync(at(dir, name));
  } catch (err) {
    if (errCode(err) === 'EINVAL' || errCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/** How many times one entry is retried when a writer keeps changing its kind under the remover. */
const ENTRY_TRIES = 20;

/**
 * Removes `dir` and everything below it without ever following a symlink or leaving its
 * filesystem: each directory is held by a descriptor and its entries are removed through it, so
 * a container that swaps a directory for a symlink to the host mid-way makes podrun unlink the
 * symlink, never what it points to (the rm -rf race `rmSync`, which walks by path, loses).
 */
export function removeTreeNoFollow(dir: string): void {
  const st = lstatSync(dir);
  if (!st.isDirectory()) {
    unlinkSync(dir);
    return;
  }
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    clearDir(fd, fstatSync(fd).dev, dir);
  } finally {
    closeSync(fd);
  }
  rmdirSync(dir);
}

/** Empties the directory `fd` holds; `shown` names it in errors. */
function clearDir(fd: number, dev: number, shown: string): void {
  // A writer may add entries while this runs; a few passes, then the final rmdir says ENOTEMPTY.
  for (let pass = 0; pass < 3; pass++) {
    const names = readdirSync(`/proc/self/fd/${fd}`);
    if (names.length === 0) return;
    for (const name of names) removeEntry(fd, name, dev, `${shown}/${name}`);
  }
}

function removeEntry(parent: number, name: string, dev: number, shown: string): void {
  const path = at(parent, name);
  for (let tries = 0; tries < ENTRY_TRIES; tries++) {
    let child: number;
    try {
      child = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    } catch (err) {
      const code = errCode(err);
      if (code === 'ENOENT') return;
      if (code !== 'ENOTDIR' && code !== 'ELOOP') throw err;
      // Not a directory (a symlink, a file, a FIFO...): the name itself goes, never its target.
      try {
        unlinkSync(path);
        return;
      } catch (e) {
        if (errCode(e) === 'ENOENT') return;
        if (errCode(e) !== 'EISDIR' && errCode(e) !== 'EPERM') throw e;
        continue; // it became a directory meanwhile
      }
    }
    try {
      if (fstatSync(child).dev !== dev) throw new Error(`${shown} is another filesystem (a mount left in place); not removed through`);
      clearDir(child, dev, shown);
    } finally {
      closeSync(child);
    }
    try {
      rmdirSync(path);
      return;
    } catch (e) {
      const code = errCode(e);
      if (code === 'ENOENT') return;
      if (code !== 'ENOTDIR' && code !== 'ENOTEMPTY' && code !== 'EEXIST') throw e;
      // Swapped for a symlink after it was emptied, or written again: once more by the name.
    }
  }
  throw new Error(`cannot remove ${shown}: it keeps changing`);
}
