import { chmodSync, closeSync, constants, mkdirSync, openSync, readFileSync, renameSync, statSync, writeFileSync, type Stats } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import type { HostPathType, Pod, Volume } from '../manifest/types.js';
import { downwardFileContent } from './env.js';
import { at, errCode } from './dir-fd.js';
import { allowedRoots, inside, MountRefused, openSubPath, resolveLoose } from './safe-mount.js';
import type { VolumeBacking } from './runtime-types.js';

/** State directories whose `pods/` is known to be there, root's alone. */
const podsRootsMade = new Set<string>();

/**
 * `<state-dir>/pods/<uid>`. `pods/` itself is made 0700 (and an older, looser one tightened): it
 * holds every pod's volumes, downward API files included, for root's eyes only, as the state
 * directory around it; a bind mount does not need its parents open to the container.
 */
export function podDir(stateDir: string, uid: string): string {
  const root = join(stateDir, 'pods');
  if (!podsRootsMade.has(root)) {
    try {
      mkdirSync(root, { recursive: true, mode: 0o700 });
      chmodSync(root, 0o700);
      podsRootsMade.add(root);
    } catch {
      // A state directory that cannot take it fails where the pod's files are written, with a message.
    }
  }
  return join(root, uid);
}

function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/**
 * The kubelet's hostPath type rules: create what `*OrCreate` asks for, check the rest. With an
 * allow-list, nothing is created unless the part that exists already resolves to an allowed path.
 */
export function prepareHostPath(volume: string, path: string, type: HostPathType, allowed?: readonly string[]): void {
  const st = statOrUndefined(path);
  const fail = (what: string): never => {
    throw new Error(`hostPath volume "${volume}": ${path} ${what}`);
  };
  if (!st && allowed && (type === '' || type === 'DirectoryOrCreate' || type === 'FileOrCreate')) {
    const target = resolveLoose(path);
    const root = allowedRoots(allowed).find((r) => inside(target, r));
    if (root === undefined) {
      throw new MountRefused(
        `hostPath volume "${volume}": ${path} would be created at ${target}, which is not under an allowed host path (--allowed-host-paths=${allowed.join(',')})`,
      );
    }
    // Pods may write under an allowed path: what is made there is made through descriptors from
    // the allowed root down, never by a path a planted or swapped symlink could lead elsewhere.
    createUnder(root, posix.relative(root, target), type === 'FileOrCreate', `hostPath volume "${volume}"`, path);
    return;
  }
  switch (type) {
    case '':
      // No checks asked for; a missing path becomes a directory, as `docker run -v` and dockershim did.
      if (!st) mkdirSync(path, { recursive: true, mode: 0o755 });
      return;
    case 'DirectoryOrCreate':
      if (!st) mkdirSync(path, { recursive: true, mode: 0o755 });
      else if (!st.isDirectory()) fail('exists and is not a directory');
      return;
    case 'Directory':
      if (!st?.isDirectory()) fail(st ? 'is not a directory' : 'does not exist (type Directory)');
      return;
    case 'FileOrCreate':
      if (!st) {
        if (!statOrUndefined(dirname(path))?.isDirectory()) fail('cannot be created: its parent directory does not exist');
        closeSync(openSync(path, 'a', 0o644));
      } else if (!st.isFile()) fail('exists and is not a file');
      return;
    case 'File':
      if (!st?.isFile()) fail(st ? 'is not a file' : 'does not exist (type File)');
      return;
    case 'Socket':
      if (!st?.isSocket()) fail('is not a socket');
      return;
    case 'CharDevice':
      if (!st?.isCharacterDevice()) fail('is not a character device');
      return;
    case 'BlockDevice':
      if (!st?.isBlockDevice()) fail('is not a block device');
      return;
  }
}

/** Makes `rel` below the allowed root `root` (a directory, or a file whose directory exists); `shown` is the path as written. */
function createUnder(root: string, rel: string, file: boolean, what: string, shown: string): void {
  // The root itself is the node's own setting, not a pod's: made by path when missing.
  if (file && rel === '') {
    closeSync(openSync(root, 'a', 0o644));
    return;
  }
  mkdirSync(root, { recursive: true, mode: 0o755 });
  if (!file) {
    closeSync(openSubPath(root, rel, what));
    return;
  }
  let dir: number;
  try {
    dir = openSubPath(root, posix.dirname(rel) === '.' ? '' : posix.dirname(rel), what, false);
  } catch (err) {
    throw err instanceof MountRefused && err.missing ? new MountRefused(`${what}: ${shown} cannot be created: its parent directory does not exist`) : err;
  }
  try {
    // O_NOFOLLOW: a symlink planted at the name is refused (ELOOP), never created through.
    closeSync(openSync(at(dir, posix.basename(rel)), constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW, 0o644));
  } catch (err) {
    throw new MountRefused(`${what}: cannot create ${shown}: ${errCode(err) === 'ELOOP' ? 'it is a symlink' : (errCode(err) ?? (err as Error).message)}`);
  } finally {
    closeSync(dir);
  }
}

/** The host file a container instance writes its termination message to (terminationMessagePath). */
export function terminationLogPath(stateDir: string, uid: string, container: string, restartCount: number): string {
  return join(podDir(stateDir, uid), 'containers', container, String(restartCount), 'termination-log');
}

/** Makes the instance's termination-log file, writable by whatever user the container runs as. */
export function prepareTerminationLog(path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  closeSync(openSync(path, 'w', 0o666));
  chmodSync(path, 0o666);
}

/**
 * Makes every volume of the pod exist on the host and says where it lives. emptyDir on disk is a
 * directory under the state dir (so it survives container restarts and goes with the pod);
 * `medium: Memory` is an engine tmpfs volume that all the pod's containers share.
 */
export async function prepareVolumes(
  stateDir: string,
  pod: Pod,
  memoryVolume: (v: Volume) => Promise<string>,
  allowedHostPaths?: readonly string[],
): Promise<Map<string, VolumeBacking>> {
  const uid = pod.metadata.uid ?? '';
  const out = new Map<string, VolumeBacking>();
  // `medium: Memory` is the engine's (a Docker tmpfs volume): `memoryVolume` makes it and names it.
  for (const v of pod.spec.volumes ?? []) {
    if (v.hostPath) {
      prepareHostPath(v.name, v.hostPath.path, v.hostPath.type ?? '', allowedHostPaths);
      out.set(v.name, { kind: 'bind', path: v.hostPath.path, hostPath: true });
    } else if (v.downwardAPI || v.projected) {
      out.set(v.name, { kind: 'bind', path: writeDownwardApiVolume(stateDir, pod, v), readOnly: true });
    } else if (v.emptyDir?.medium === 'Memory') {
      out.set(v.name, { kind: 'volume', name: await memoryVolume(v) });
    } else {
      const dir = join(podDir(stateDir, uid), 'volumes', 'empty-dir', v.name);
      mkdirSync(dir, { recursive: true });
      // The kubelet's emptyDir is 0777 (pkg/volume/emptydir): any uid in the pod can write. The
      // process umask trims the mode mkdir is given, so set it outright.
      chmodSync(dir, 0o777);
      out.set(v.name, { kind: 'bind', path: dir });
    }
  }
  return out;
}

/**
 * Where a container's mount is pinned when its source had to be checked (a subPath, or a hostPath
 * under an allow-list): the kubelet's `volume-subpaths/<volume>/<container>/<index>`.
 */
export function stagingPath(stateDir: string, uid: string, volume: string, container: string, index: number): string {
  return join(podDir(stateDir, uid), 'volume-subpaths', volume, container, String(index));
}

/**
 * A downwardAPI volume (or a projection of downwardAPI items): one file per item, written whole
 * and renamed into place so a reader never sees half a file; the containers mount it read-only.
 */
export function writeDownwardApiVolume(stateDir: string, pod: Pod, v: Volume): string {
  const dir = join(podDir(stateDir, pod.metadata.uid ?? ''), 'volumes', 'downward-api', v.name);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  chmodSync(dir, 0o755);
  const sets = v.downwardAPI
    ? [{ items: v.downwardAPI.items ?? [], mode: v.downwardAPI.defaultMode }]
    : (v.projected?.sources ?? []).map((src) => ({ items: src.downwardAPI?.items ?? [], mode: v.projected?.defaultMode }));
  for (const set of sets) {
    for (const item of set.items) {
      const file = join(dir, item.path);
      // Validation refuses '..' and absolute paths; this keeps a mistake there from writing elsewhere.
      if (!file.startsWith(`${dir}/`)) throw new Error(`downwardAPI volume "${v.name}": ${item.path} is outside the volume`);
      mkdirSync(dirname(file), { recursive: true, mode: 0o755 });
      const tmp = `${file}.podrun-tmp`;
      writeFileSync(tmp, downwardFileContent(pod, item), { mode: 0o600 });
      chmodSync(tmp, item.mode ?? set.mode ?? 0o644);
      renameSync(tmp, file);
    }
  }
  return dir;
}

/**
 * The hosts file of a hostNetwork pod with hostAliases: the node's own file, then the aliases, as
 * the kubelet writes it (kubelet_pods.go nodeHostsFileContent), so the node's names still resolve.
 */
export function writeHostNetworkHosts(stateDir: string, pod: Pod, nodeHosts = '/etc/hosts'): string {
  let node = '';
  try {
    node = readFileSync(nodeHosts, 'utf8');
  } catch {
    // No node file: the aliases alone.
  }
  const aliases = (pod.spec.hostAliases ?? []).map((a) => `${a.ip}\t${(a.hostnames ?? []).join('\t')}\n`).join('');
  const path = join(podDir(stateDir, pod.metadata.uid ?? ''), 'etc-hosts');
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(
    path,
    `# Kubernetes-managed hosts file (host network).\n${node}${node.endsWith('\n') || node === '' ? '' : '\n'}\n# Entries added by HostAliases.\n${aliases}`,
    { mode: 0o644 },
  );
  return path;
}
