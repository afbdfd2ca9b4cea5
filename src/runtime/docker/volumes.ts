import type Docker from 'dockerode';
import { parseQuantity } from '../../manifest/quantity.js';
import type { Volume } from '../../manifest/types.js';
import { LABEL, MANAGED_BY } from '../labels.js';
import { removeTree } from '../safe-mount.js';
import { podDir } from '../volumes.js';

// A pod's `medium: Memory` emptyDirs on the Docker API: tmpfs volumes of the engine's, labelled
// with the pod and instance so they go with the pod (the rest of a pod's volumes are host
// directories, volumes.ts).

export function memoryVolumeName(instance: string, uid: string, volume: string): string {
  return `podrun_${instance.slice(0, 8)}_${uid.replace(/-/g, '').slice(0, 12)}_${volume}`;
}

export async function ensureMemoryVolume(docker: Docker, uid: string, v: Volume, instance: string): Promise<string> {
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

/** Removes the pod's directory (its pinned mounts are detached first) and memory volumes. */
export async function removePodVolumes(docker: Docker, stateDir: string, uid: string, instance: string): Promise<void> {
  // The directory and the engine's volumes together: each is a wait on a loaded node.
  const engineVolumes = async (): Promise<void> => {
    const vols = await docker.listVolumes({ filters: JSON.stringify({ label: [`${LABEL.podUid}=${uid}`, `${LABEL.instance}=${instance}`] }) });
    await Promise.all(
      (vols.Volumes ?? []).map((v) =>
        docker
          .getVolume(v.Name)
          .remove()
          .catch(() => undefined),
      ),
    );
  };
  await Promise.all([removeTree(podDir(stateDir, uid)), engineVolumes()]);
}
