import type { Container, Pod } from '../../manifest/types.js';
import type { RuntimeOptions, VolumeBacking } from '../runtime-types.js';
import { pinMount } from '../safe-mount.js';
import { prepareTerminationLog, stagingPath, terminationLogPath, writeHostNetworkHosts } from '../volumes.js';
import { mountsToPin, type ContainerConfigOptions } from './container-config.js';

// The host files a container's config names, made before the config is (the kubelet's makeMounts):
// its checked and pinned subPath and allow-listed hostPath mounts, its termination log, and the
// host network's hosts file. Either engine makes them the same way.

export type ContainerFiles = Pick<ContainerConfigOptions, 'pinned' | 'terminationLog' | 'hostsFile'>;

export async function prepareContainerFiles(
  o: Pick<RuntimeOptions, 'stateDir' | 'allowedHostPaths'>,
  pod: Pod,
  c: Container,
  volumes: ReadonlyMap<string, VolumeBacking>,
  restartCount: number,
): Promise<ContainerFiles> {
  const uid = pod.metadata.uid ?? '';
  const terminationLog = terminationLogPath(o.stateDir, uid, c.name, restartCount);
  prepareTerminationLog(terminationLog);
  const pinned = new Map<number, string>();
  const allowed = o.allowedHostPaths;
  for (const { index, mount: m, backing: b } of mountsToPin(c, volumes, allowed !== undefined)) {
    const staging = stagingPath(o.stateDir, uid, m.name, c.name, index);
    await pinMount(
      { base: b.path, ...(m.subPath ? { subPath: m.subPath } : {}), ...(b.hostPath && allowed ? { allowed } : {}), what: `volume "${m.name}"` },
      staging,
    );
    pinned.set(index, staging);
  }
  const hostsFile = pod.spec.hostNetwork && pod.spec.hostAliases?.length ? writeHostNetworkHosts(o.stateDir, pod) : undefined;
  return { pinned, terminationLog, ...(hostsFile ? { hostsFile } : {}) };
}
