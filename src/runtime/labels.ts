import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import type { Container, Pod } from '../manifest/types.js';

// Every engine object podrun makes carries these labels, so the whole view can be rebuilt from
// the engine alone (after a crash, an upgrade, or on another podrun process).

export const LABEL = {
  managedBy: 'podrun.io/managed-by',
  /** Which podrun (one per state directory) owns it: several can share an engine without touching each other's pods. */
  instance: 'podrun.io/instance',
  podName: 'podrun.io/pod-name',
  podNamespace: 'podrun.io/pod-namespace',
  podUid: 'podrun.io/pod-uid',
  containerName: 'podrun.io/container-name',
  containerType: 'podrun.io/container-type',
  hash: 'podrun.io/hash',
  restartCount: 'podrun.io/restart-count',
  source: 'podrun.io/source',
  applySet: 'podrun.io/apply-set',
  /** On the sandbox: the defaulted pod as JSON, so `get`, `delete` and adoption need no files. */
  podSpec: 'podrun.io/pod-spec',
  /**
   * On each container: its own defaulted spec and the pod's grace period when it was made, so
   * stopping it (preStop, grace) never depends on a pod spec that a later container-only update
   * left behind on the sandbox (the kubelet's kuberuntime/labels.go does the same).
   */
  containerSpec: 'podrun.io/container-spec',
  gracePeriod: 'podrun.io/termination-grace-period',
} as const;

export const MANAGED_BY = 'podrun';

/** The instance a state directory stands for: stable for its path, so a wiped state dir keeps its pods. */
export function instanceId(stateDir: string): string {
  return createHash('sha256').update(resolve(stateDir)).digest('hex').slice(0, 12);
}
export const SANDBOX_NAME = 'POD';

export type ContainerType = 'sandbox' | 'init' | 'app';

/**
 * Readable in `docker ps`: podrun_<pod>_<container>_<namespace>_<uid8>_<instance6>_<attempt>. Engine
 * names are global, and two instances (state dirs) may run the same namespace/name, so the
 * instance is part of the name.
 */
export function engineName(pod: { name: string; namespace: string; uid: string; instance?: string }, container: string, attempt: number): string {
  const inst = pod.instance ? `_${pod.instance.slice(0, 6)}` : '';
  return `podrun_${pod.name}_${container}_${pod.namespace}_${pod.uid.replace(/-/g, '').slice(0, 8)}${inst}_${attempt}`;
}

/** Who a pod is to the engine, as its labels and names say it. */
export interface PodIdentity {
  uid: string;
  name: string;
  namespace: string;
  source: string;
  applySet?: string;
  /** The podrun instance (state dir) making it: part of every engine name, so instances never collide. */
  instance?: string;
}

export function identityOf(pod: Pod, source: string, applySet?: string): PodIdentity {
  return { uid: pod.metadata.uid ?? '', name: pod.metadata.name, namespace: pod.metadata.namespace ?? 'default', source, ...(applySet ? { applySet } : {}) };
}

function baseLabels(id: PodIdentity, containerName: string, type: string, hash: string, restartCount: number): Record<string, string> {
  return {
    [LABEL.managedBy]: MANAGED_BY,
    [LABEL.podName]: id.name,
    [LABEL.podNamespace]: id.namespace,
    [LABEL.podUid]: id.uid,
    [LABEL.containerName]: containerName,
    [LABEL.containerType]: type,
    [LABEL.hash]: hash,
    [LABEL.restartCount]: String(restartCount),
    [LABEL.source]: id.source,
  };
}

/**
 * A sandbox's labels, whichever engine holds them (the engine adds `instance`). They are what
 * identifies it across upgrades: test/integration/upgrade.test.ts adopts a previous release's.
 */
export function sandboxLabels(pod: Pod, id: PodIdentity, attempt: number, hash: string): Record<string, string> {
  return {
    ...baseLabels(id, SANDBOX_NAME, 'sandbox', hash, attempt),
    [LABEL.podSpec]: JSON.stringify(pod),
    ...(id.applySet ? { [LABEL.applySet]: id.applySet } : {}),
  };
}

/** A container's labels, whichever engine holds them (the engine adds `instance`). */
export function containerLabels(pod: Pod, id: PodIdentity, c: Container, type: 'init' | 'app', restartCount: number, hash: string): Record<string, string> {
  return {
    ...baseLabels(id, c.name, type, hash, restartCount),
    [LABEL.containerSpec]: JSON.stringify(c),
    [LABEL.gracePeriod]: String(pod.spec.terminationGracePeriodSeconds ?? 30),
  };
}
