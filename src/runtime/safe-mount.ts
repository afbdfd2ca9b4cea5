import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, realpathSync, rmSync, unlinkSync, type Stats } from 'node:fs';
import { join, posix } from 'node:path';
import { promisify } from 'node:util';
import { at, errCode, fdPath, O_PATH, openNoSymlinks, readLinkAt, removeTreeNoFollow, reopen, SymlinkOnPath } from './dir-fd.js';

// A container that can write a volume can plant a symlink in it, and the engine follows symlinks
// in a bind mount's source: `subPath: escape` with `escape -> /` would mount the host's root
// (CVE-2017-1002101). As the kubelet's safe subpath code does (pkg/volume/util/subpath), the path
// is opened once, the object the descriptor holds is checked against the volume (or the node's
// allowed host paths), and that very object is bind-mounted to a staging path the container
// cannot reach, through /proc/<pid>/fd/<n>: swapping a symlink in after the check changes nothing.

/** execFile as a promise; Node's process spawning is loaded by the first mount, not by every command. */
async function run(file: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  const { execFile } = await import('node:child_process');
  return promisify(execFile)(file, args);
}

export class MountRefused extends Error {
  /** `missing`: refused because the path is not there (said by value; the message is for people). */
  constructor(
    message: string,
    readonly missing = false,
  ) {
    super(message);
    this.name = 'MountRefused';
  }
}

/** Whether `path` is `root` or below it; both are real paths. */
export function inside(path: string, root: string): boolean {
  return root === '/' || path === root || path.startsWith(`${root}/`);
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function realOrUndefined(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Where a path leads now: its deepest existing part resolved (symlinks, `..`), the rest as
 * written. A path that does not exist yet is judged by where it would be created.
 */
export function resolveLoose(path: string): string {
  const rest: string[] = [];
  for (let p = posix.resolve(path); ; p = posix.dirname(p)) {
    const real = realOrUndefined(p);
    if (real !== undefined) return posix.join(real, ...rest.reverse());
    if (p === '/') return posix.join('/', ...rest.reverse());
    rest.push(posix.basename(p));
  }
}

/** The allowed host paths as they resolve now (one that does not exist yet, where it would be). */
export function allowedRoots(allowed: readonly string[]): string[] {
  return allowed.map(resolveLoose);
}

/** Symlinks followed in one subPath at most, as the kernel's own limit (ELOOP). */
const MAX_LINKS = 40;

interface Step {
  name: string;
  /** Whether a missing component is made (the subPath as written) or refused (a symlink's target). */
  make: boolean;
  /** Reached through a symlink's text: missing, the symlink leads nowhere. */
  viaLink: boolean;
  /** The subPath as written up to the component that led here: what messages name. */
  shown: string;
}

/**
 * Opens (O_PATH) what `subPath` names below the volume `baseReal`, making missing directories
 * on the way as the kubelet's doSafeMakeDir does: each component is looked up, made and opened
 * relative to its parent's descriptor and never followed, so swapping an ancestor for a symlink
 * mid-way cannot move the work outside (a path would be followed again at every step). A
 * component that is a symlink is resolved by its text against the volume, as the kubelet's
 * EvalSymlinks does, and must stay inside; its target is then walked the same way from the
 * volume's root. The kernel never follows a link here, so /proc/<pid>/root and its like lead nowhere.
 * With `make` false nothing is made: a missing component is refused.
 */
export function openSubPath(baseReal: string, subPath: string, what: string, make = true): number {
  const parts = subPath.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw new MountRefused(`${what}: subPath may not contain '..'`);
  const base = openBase(baseReal, what);
  let fd = reopen(base);
  try {
    if (!fstatSync(base).isDirectory()) throw new MountRefused(`${what}: ${baseReal} is not a directory`);
    const todo: Step[] = parts.map((name, i) => ({ name, make, viaLink: false, shown: parts.slice(0, i + 1).join('/') }));
    let walked: string[] = [];
    let links = 0;
    for (let step = todo.shift(); step; step = todo.shift()) {
      const next = stepInto(fd, step, todo.length === 0, what);
      if (typeof next === 'number') {
        closeSync(fd);
        fd = next;
        walked.push(step.name);
        continue;
      }
      // A symlink: where its text leads, judged against the volume, then walked from the root.
      const target = posix.isAbsolute(next.link) ? posix.normalize(next.link) : posix.join(baseReal, ...walked, next.link);
      if (!inside(target, baseReal)) throw new MountRefused(`${what}: ${step.shown} is a symlink to ${target}, outside the volume`);
      if (++links > MAX_LINKS) throw new MountRefused(`${what}: ${step.shown}: too many levels of symbolic links`);
      const rel = posix
        .relative(baseReal, target)
        .split('/')
        .filter((p) => p !== '');
      todo.unshift(...rel.map((name) => ({ name, make: false, viaLink: true, shown: step.shown })));
      closeSync(fd);
      fd = reopen(base);
      walked = [];
    }
    return fd;
  } catch (err) {
    closeSync(fd);
    throw err;
  } finally {
    closeSync(base);
  }
}

/** The volume's root, opened without following anything on its resolved path. */
function openBase(baseReal: string, what: string): number {
  try {
    return openNoSymlinks(baseReal);
  } catch (err) {
    if (err instanceof SymlinkOnPath) throw new MountRefused(`${what}: ${err.path} became a symlink after ${baseReal} was resolved`);
    throw new MountRefused(`${what}: cannot open ${baseReal}: ${errCode(err) ?? (err as Error).message}`);
  }
}

/**
 * One component below the directory `dir` holds: its descriptor (made first if missing and
 * allowed), or the text of the symlink found there.
 */
function stepInto(dir: number, step: Step, last: boolean, what: string): number | { link: string } {
  for (let tries = 0; tries < 10; tries++) {
    let fd: number;
    try {
      fd = openSync(at(dir, step.name), O_PATH | constants.O_NOFOLLOW);
    } catch (err) {
      if (errCode(err) !== 'ENOENT') throw new MountRefused(`${what}: cannot open ${step.shown}: ${errCode(err) ?? (err as Error).message}`);
      if (!step.make) throw new MountRefused(`${what}: ${step.shown} ${step.viaLink ? 'is a symlink that leads nowhere' : 'does not exist'}`, !step.viaLink);
      try {
        mkdirSync(at(dir, step.name), { mode: 0o755 });
      } catch (e) {
        if (errCode(e) !== 'EEXIST') throw new MountRefused(`${what}: cannot make ${step.shown}: ${errCode(e) ?? (e as Error).message}`);
      }
      continue;
    }
    const st = fstatSync(fd);
    if (st.isDirectory() || (last && !st.isSymbolicLink())) return fd;
    closeSync(fd);
    if (!st.isSymbolicLink()) throw new MountRefused(`${what}: ${step.shown} is not a directory`);
    const link = readLinkAt(dir, step.name);
    if (link !== undefined) return { link };
    // No longer a symlink by the time it was read: look again.
  }
  throw new MountRefused(`${what}: ${step.shown} keeps changing`);
}

/** Mount points at or below `dir`, deepest first, from the kernel's own table. */
export function mountsUnder(dir: string): string[] {
  const table = readFileSync('/proc/self/mountinfo', 'utf8');
  const out: string[] = [];
  for (const line of table.split('\n')) {
    const field = line.split(' ')[4];
    if (field === undefined) continue;
    const point = field.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    if (point === dir || point.startsWith(`${dir}/`)) out.push(point);
  }
  return out.sort((a, b) => b.length - a.length);
}

/** Detaches every mount at or below `dir`; throws when one stays, so nothing below is ever removed through it. */
export async function unmountAll(dir: string): Promise<void> {
  for (const point of mountsUnder(dir)) await run('umount', ['--lazy', point]).catch(() => undefined);
  const left = mountsUnder(dir);
  if (left.length) throw new Error(`cannot unmount ${left.join(', ')}; leaving ${dir} in place`);
}

/** Removes a directory that may hold staged mounts: unmounted first, never followed into. */
export async function removeTree(dir: string): Promise<void> {
  if (lstatOrUndefined(dir) === undefined) return;
  await unmountAll(dir);
  try {
    removeTreeNoFollow(dir);
  } catch (err) {
    if (errCode(err) !== 'ENOENT') throw err;
  }
}

export interface PinRequest {
  /** The volume's root on the host (an emptyDir directory, or a hostPath as written). */
  base: string;
  subPath?: string;
  /** For a hostPath: the node's allowed host paths (`--allowed-host-paths`), judged after resolving. */
  allowed?: readonly string[];
  /** Names the mount in messages: `volume "data" of container app`. */
  what: string;
}

/**
 * Resolves the mount's source once, checks where it really is, and bind-mounts that object at
 * `staging`. The engine is then given `staging`, which nothing in a pod can change.
 */
export async function pinMount(req: PinRequest, staging: string): Promise<void> {
  const baseReal = realOrUndefined(req.base);
  if (baseReal === undefined) throw new MountRefused(`${req.what}: ${req.base} does not exist`, true);
  const roots = req.allowed ? allowedRoots(req.allowed) : undefined;
  const allowedText = req.allowed ? ` (--allowed-host-paths=${req.allowed.join(',')})` : '';
  if (roots && !roots.some((r) => inside(baseReal, r))) {
    throw new MountRefused(`${req.what}: ${req.base} resolves to ${baseReal}, which is not under an allowed host path${allowedText}`);
  }
  const source = req.subPath ? join(baseReal, req.subPath) : baseReal;
  // Opened by descriptors from the resolved root down, never by the path again: what is
  // mounted is what was walked.
  const fd = req.subPath ? openSubPath(baseReal, req.subPath, req.what) : openBase(baseReal, req.what);
  try {
    // What the descriptor holds, whatever the path says by now: the only judgement that counts.
    const real = fdPath(fd);
    if (!real.startsWith('/') || real.endsWith(' (deleted)')) throw new MountRefused(`${req.what}: ${source} went away while it was opened`);
    if (req.subPath && !inside(real, baseReal))
      throw new MountRefused(`${req.what}: subPath ${JSON.stringify(req.subPath)} resolves to ${real}, outside the volume`);
    if (roots && !roots.some((r) => inside(real, r)))
      throw new MountRefused(`${req.what}: ${source} resolves to ${real}, which is not under an allowed host path${allowedText}`);
    const isDir = fstatSync(fd).isDirectory();
    await prepareStaging(staging, isDir);
    await run('mount', ['--no-canonicalize', '--bind', `/proc/${process.pid}/fd/${fd}`, staging]).catch((err: { stderr?: string; message: string }) => {
      // Typically the object was removed between the open and the mount (ENOENT): retried later.
      const why = (err.stderr ?? err.message).split('\n')[0]?.replace(/^mount: [^:]*: /, '') ?? err.message;
      throw new MountRefused(`${req.what}: cannot mount ${source}: ${why}`);
    });
  } finally {
    closeSync(fd);
  }
}

/** An empty directory or file at `staging`, of the source's kind, with nothing mounted on it. */
async function prepareStaging(staging: string, isDir: boolean): Promise<void> {
  if (mountsUnder(staging).length) await unmountAll(staging);
  mkdirSync(posix.dirname(staging), { recursive: true, mode: 0o700 });
  const st = lstatOrUndefined(staging);
  if (st && st.isDirectory() !== isDir) {
    if (st.isDirectory()) rmSync(staging, { recursive: true, force: true });
    else unlinkSync(staging);
  }
  if (isDir) mkdirSync(staging, { recursive: true, mode: 0o700 });
  else closeSync(openSync(staging, 'a', 0o600));
}
