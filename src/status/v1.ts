import type { Pod } from '../manifest/types.js';
import type { ObservedPod } from '../runtime/observed.js';
import type { ContainerStatusSummary, PodStatusSummary } from './pod-status.js';

function v1ContainerStatus(c: ContainerStatusSummary): Record<string, unknown> {
  const state =
    c.state === 'running'
      ? { running: {} }
      : c.state === 'waiting'
        ? { waiting: { reason: c.reason } }
        : { terminated: { exitCode: c.exitCode, reason: c.reason } };
  return {
    name: c.name,
    image: c.image,
    ready: c.state === 'running',
    started: c.state === 'running',
    restartCount: c.restartCount,
    state,
    ...(c.containerID ? { containerID: c.containerID } : {}),
  };
}

/** The pod as a v1 Pod with a status, for `get pods -o json|yaml` and the HTTP API. */
export function toV1Pod(observed: ObservedPod, status: PodStatusSummary, ips: { podIP?: string; hostIP: string }): Record<string, unknown> {
  const spec: Pod | undefined = observed.spec;
  const ready = status.phase === 'Running' && status.containers.every((c) => c.state === 'running');
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...(spec?.metadata ?? {}),
      name: observed.name,
      namespace: observed.namespace,
      uid: observed.uid,
      annotations: { ...(spec?.metadata.annotations ?? {}), 'podrun.io/source': observed.source },
    },
    spec: spec?.spec ?? {},
    status: {
      phase: status.phase,
      ...(status.reason ? { reason: status.reason } : {}),
      conditions: [
        { type: 'Initialized', status: status.reason === 'PodInitializing' ? 'False' : 'True' },
        { type: 'ContainersReady', status: ready ? 'True' : 'False' },
        { type: 'Ready', status: ready ? 'True' : 'False' },
      ],
      hostIP: ips.hostIP,
      ...(ips.podIP ? { podIP: ips.podIP, podIPs: [{ ip: ips.podIP }] } : {}),
      initContainerStatuses: status.initContainers.map(v1ContainerStatus),
      containerStatuses: status.containers.map(v1ContainerStatus),
    },
  };
}
