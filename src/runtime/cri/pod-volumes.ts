import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Pod } from '../../manifest/types.js';
import { removeTree } from '../safe-mount.js';
import type { RuntimeOptions, VolumeBacking } from '../runtime-types.js';
import { podDir, prepareHostPath, writeDownwardApiVolume } from '../volumes.js';
import { mountMemoryVolume } from './memory-volumes.js';

// A pod's volumes on a CRI runtime: host directories podrun makes, as the kubelet's volume manager does.

/**
 * The pod's volumes as host directories (the kubelet's own layout under its root). A `medium:
 * Memory` emptyDir is a tmpfs mounted on its directory (memory-volumes.ts): a CRI runtime has no
 * volumes of its own.
 */
export async function prepareCriVolumes(o: RuntimeOptions, pod: Pod): Promise<Map<string, VolumeBacking>> {
  const uid = pod.metadata.uid ?? '';
  const out = new Map<string, VolumeBacking>();
  for (const v of pod.spec.volumes ?? []) {
    if (v.hostPath) {
      prepareHostPath(v.name, v.hostPath.path, v.hostPath.type ?? '', o.allowedHostPaths);
      out.set(v.name, { kind: 'bind', path: v.hostPath.path, hostPath: true });
    } else if (v.downwardAPI || v.projected) {
      out.set(v.name, { kind: 'bind', path: writeDownwardApiVolume(o.stateDir, pod, v), readOnly: true });
    } else {
      const dir = join(podDir(o.stateDir, uid), 'volumes', 'empty-dir', v.name);
      mkdirSync(dir, { recursive: true });
      chmodSync(dir, 0o777);
      if (v.emptyDir?.medium === 'Memory') await mountMemoryVolume(dir, v);
      out.set(v.name, { kind: 'bind', path: dir });
    }
  }
  return out;
}

export async function removeCriPodVolumes(stateDir: string, uid: string): Promise<void> {
  await removeTree(podDir(stateDir, uid));
}
