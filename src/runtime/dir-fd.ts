import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, rmdirSync, unlinkSync, type Dirent } from 'node:fs';

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
      if (i < parts.length - 1 && !st.isDirectory())
        throw Object.assign(new Error(`/${parts.slice(0, i + 1).join('/')} is not a directory`), { code: 'ENOTDIR' });
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

/** Steps one removal may take before it gives up on a tree a writer keeps growing. */
const MAX_STEPS = 10_000_000;

/**
 * Removes `dir` and everything below it without ever following a symlink or leaving its
 * filesystem: each directory is opened (O_NOFOLLOW) and its entries are removed through that
 * descriptor, so a container that swaps a directory for a symlink to the host mid-way makes
 * podrun unlink the symlink, never what it points to (the rm -rf race that `rmSync`, which walks
 * by path, loses). One descriptor is held at a time besides the root, going back up by `..`, so
 * a tree of any depth is removed (rmSync ran out of stack at a few thousand levels).
 */
export function removeTreeNoFollow(dir: string): void {
  const st = lstatSync(dir);
  if (!st.isDirectory()) {
    unlinkSync(dir);
    return;
  }
  const root = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    clearTree(root, fstatSync(root).dev, dir);
  } finally {
    closeSync(root);
  }
  rmdirSync(dir);
}

/** Empties the directory `root` holds, depth first; `shown` names it in errors. */
function clearTree(root: number, dev: number, shown: string): void {
  let cur = root;
  // The names from the root down to `cur`, each with what is left to remove at its level.
  const stack: { name: string; pending: Dirent[] }[] = [{ name: '', pending: [] }];
  try {
    for (let steps = 0; ; steps++) {
      if (steps > MAX_STEPS) throw new Error(`cannot remove ${shown}: it keeps changing`);
      const level = stack[stack.length - 1]!;
      // Read again once a level's list is done: what a writer added meanwhile is seen too.
      if (level.pending.length === 0) level.pending = readdirSync(`/proc/self/fd/${cur}`, { withFileTypes: true });
      const entry = level.pending.pop();
      if (entry) {
        const sub = removeOrOpen(cur, entry, dev, shown);
        if (sub !== undefined) {
          if (cur !== root) closeSync(cur);
          cur = sub;
          stack.push({ name: entry.name, pending: [] });
        }
        continue;
      }
      // `cur` is empty: up one level, and it goes. Its `..` is wherever it is now, inside the
      // tree (a container can move directories only within what it can write).
      if (stack.length === 1) return;
      const { name } = stack.pop()!;
      const parent = stack.length === 1 ? root : openSync(at(cur, '..'), constants.O_RDONLY | constants.O_DIRECTORY);
      closeSync(cur);
      cur = parent;
      try {
        rmdirSync(at(cur, name));
      } catch (err) {
        // Moved, swapped for a symlink or written again: the next reading of this level says.
        if (!['ENOENT', 'ENOTEMPTY', 'EEXIST', 'ENOTDIR'].includes(errCode(err) ?? '')) throw err;
      }
    }
  } finally {
    if (cur !== root) closeSync(cur);
  }
}

/** Removes a non-directory entry by its name (never its target); opens a directory one to descend into. */
function removeOrOpen(dir: number, entry: Dirent, dev: number, shown: string): number | undefined {
  const path = at(dir, entry.name);
  if (!entry.isDirectory()) {
    try {
      unlinkSync(path);
      return undefined;
    } catch (err) {
      if (errCode(err) === 'ENOENT') return undefined;
      if (errCode(err) !== 'EISDIR') throw err;
      // A directory by now: descend into it below.
    }
  }
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (err) {
    const code = errCode(err);
    if (code === 'ENOENT') return undefined;
    if (code !== 'ENOTDIR' && code !== 'ELOOP') throw err;
    // Swapped for a symlink (or a file): the name goes; a directory again is seen at the next reading.
    try {
      unlinkSync(path);
    } catch (e) {
      if (errCode(e) !== 'ENOENT' && errCode(e) !== 'EISDIR') throw e;
    }
    return undefined;
  }
  if (fstatSync(fd).dev !== dev) {
    closeSync(fd);
    throw new Error(`${shown}: ${entry.name} is another filesystem (a mount left in place); not removed through`);
  }
  return fd;
}
