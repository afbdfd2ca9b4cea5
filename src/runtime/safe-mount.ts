import { execFile } from 'node:child_process';
import { closeSync, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, readlinkSync, realpathSync, rmSync, unlinkSync, type Stats } from 'node:fs';
import { join, posix } from 'node:path';
import { promisify } from 'node:util';

// A container that can write a volume can plant a symlink in it, and the engine follows symlinks
// in a bind mount's source: `subPath: escape` with `escape -> /` would mount the host's root
// (CVE-2017-1002101). As the kubelet's safe subpath code does (pkg/volume/util/subpath), the path
// is opened once, the object the descriptor holds is checked against the volume (or the node's
// allowed host paths), and that very object is bind-mounted to a staging path the container
// cannot reach, through /proc/<pid>/fd/<n>: swapping a symlink in after the check changes nothing.

const run = promisify(execFile);

/** Opens a path for its identity only: no read, never blocks on a FIFO (Linux O_PATH). */
const O_PATH = 0o10000000;

export class MountRefused extends Error {
  constructor(message: string) {
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

/**
 * Makes `subPath` exist below `base` as the kubelet does (a directory), one component at a time,
 * never creating anything outside: a component that is a symlink must resolve inside the volume.
 */
function makeSubPath(baseReal: string, subPath: string, what: string): void {
  let cur = baseReal;
  const parts = subPath.split('/').filter((p) => p !== '' && p !== '.');
  for (const [i, part] of parts.entries()) {
    if (part === '..') throw new MountRefused(`${what}: subPath may not contain '..'`);
    const next = join(cur, part);
    let st = lstatOrUndefined(next);
    if (!st) {
      try {
        mkdirSync(next, { mode: 0o755 });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      st = lstatSync(next);
    }
    if (st.isSymbolicLink()) {
      const real = realOrUndefined(next);
      if (real === undefined) throw new MountRefused(`${what}: ${posix.join(...parts.slice(0, i + 1))} is a symlink that leads nowhere`);
      if (!inside(real, baseReal)) throw new MountRefused(`${what}: ${posix.join(...parts.slice(0, i + 1))} is a symlink to ${real}, outside the volume`);
      cur = real;
    } else {
      cur = next;
    }
  }
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
  rmSync(dir, { recursive: true, force: true });
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
  if (baseReal === undefined) throw new MountRefused(`${req.what}: ${req.base} does not exist`);
  const roots = req.allowed ? allowedRoots(req.allowed) : undefined;
  const allowedText = req.allowed ? ` (--allowed-host-paths=${req.allowed.join(',')})` : '';
  if (roots && !roots.some((r) => inside(baseReal, r))) {
    throw new MountRefused(`${req.what}: ${req.base} resolves to ${baseReal}, which is not under an allowed host path${allowedText}`);
  }
  if (req.subPath) makeSubPath(baseReal, req.subPath, req.what);
  const source = req.subPath ? join(baseReal, req.subPath) : baseReal;
  let fd: number;
  try {
    fd = openSync(source, O_PATH); // libuv adds O_CLOEXEC
  } catch (err) {
    throw new MountRefused(`${req.what}: cannot open ${source}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    // What the descriptor holds, whatever the path says by now: the only judgement that counts.
    const real = readlinkSync(`/proc/self/fd/${fd}`);
    if (!real.startsWith('/') || real.endsWith(' (deleted)')) throw new MountRefused(`${req.what}: ${source} went away while it was opened`);
    if (req.subPath && !inside(real, baseReal)) throw new MountRefused(`${req.what}: subPath ${JSON.stringify(req.subPath)} resolves to ${real}, outside the volume`);
    if (roots && !roots.some((r) => inside(real, r))) throw new MountRefused(`${req.what}: ${source} resolves to ${real}, which is not under an allowed host path${allowedText}`);
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
