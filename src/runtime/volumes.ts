import { chmodSync, closeSync, mkdirSync, openSync, rmSync, statSync, type Stats } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import type Docker from 'dockerode';
import { parseQuantity } from '../manifest/quantity.js';
import type { HostPathType, Pod, Volume } from '../manifest/types.js';
import { LABEL, MANAGED_BY } from './labels.js';
import type { VolumeBacking } from './spec.js';

export function podDir(stateDir: string, uid: string): string {
  return join(stateDir, 'pods', uid);
}

function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/** The kubelet's hostPath type rules: create what `*OrCreate` asks for, check the rest. */
export function prepareHostPath(volume: string, path: string, type: HostPathType): void {
  const st = statOrUndefined(path);
  const fail = (what: string): never => {
    throw new Error(`hostPath volume "${volume}": ${path} ${what}`);
  };
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

export function memoryVolumeName(instance: string, uid: string, volume: string): string {
  return `podrun_${instance.slice(0, 8)}_${uid.replace(/-/g, '').slice(0, 12)}_${volume}`;
}

async function ensureMemoryVolume(docker: Docker, uid: string, v: Volume, instance: string): Promise<string> {
  const name = memoryVolumeName(instance, uid, v.name);
  const size = v.emptyDir?.sizeLimit !== undefined ? `size=${Math.floor(parseQuantity(v.emptyDir.sizeLimit))}` : '';
  await docker.createVolume({
    Name: name,
    Driver: 'local',
    DriverOpts: { type: 'tmpfs', device: 'tmpfs', ...(size ? { o: size } : {}) },
    Labels: { [LABEL.managedBy]: MANAGED_BY, [LABEL.instance]: instance, [LABEL.podUid]: uid, [LABEL.containerName]: v.name },
  });
  return name;
}

/**
 * Makes every volume of the pod exist on the host and says where it lives. emptyDir on disk is a
 * directory under the state dir (so it survives container restarts and goes with the pod);
 * `medium: Memory` is an engine tmpfs volume that all the pod's containers share.
 */
export async function prepareVolumes(docker: Docker, stateDir: string, pod: Pod, instance: string): Promise<Map<string, VolumeBacking>> {
  const uid = pod.metadata.uid ?? '';
  const out = new Map<string, VolumeBacking>();
  for (const v of pod.spec.volumes ?? []) {
    if (v.hostPath) {
      prepareHostPath(v.name, v.hostPath.path, v.hostPath.type ?? '');
      out.set(v.name, { kind: 'bind', path: v.hostPath.path });
    } else if (v.emptyDir?.medium === 'Memory') {
      out.set(v.name, { kind: 'volume', name: await ensureMemoryVolume(docker, uid, v, instance) });
    } else {
      const dir = join(podDir(stateDir, uid), 'volumes', 'empty-dir', v.name);
      mkdirSync(dir, { recursive: true });
      // The kubelet's emptyDir is 0777 (pkg/volume/emptydir): any uid in the pod can write. The
      // process umask trims the mode mkdir is given, so set it outright.
      chmodSync(dir, 0o777);
      out.set(v.name, { kind: 'bind', path: dir });
    }
  }
  // A subPath that does not exist yet is created as a directory, as the kubelet does.
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    for (const m of c.volumeMounts ?? []) {
      const b = out.get(m.name);
      if (!m.subPath || b?.kind !== 'bind') continue;
      const target = posix.join(b.path, m.subPath);
      if (!statOrUndefined(target)) mkdirSync(target, { recursive: true, mode: 0o755 });
    }
  }
  return out;
}

/** Removes the pod's emptyDir directories and memory volumes. */
export async function removePodVolumes(docker: Docker, stateDir: string, uid: string, instance: string): Promise<void> {
  rmSync(podDir(stateDir, uid), { recursive: true, force: true });
  const vols = await docker.listVolumes({ filters: JSON.stringify({ label: [`${LABEL.podUid}=${uid}`, `${LABEL.instance}=${instance}`] }) });
  await Promise.all((vols.Volumes ?? []).map((v) => docker.getVolume(v.Name).remove().catch(() => undefined)));
}
