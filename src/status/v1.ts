import type { Pod } from '../manifest/types.js';
import type { ObservedPod } from '../runtime/observed.js';
import type { ContainerStatusSummary, PodStatusSummary, TerminatedState } from './pod-status.js';

function v1Terminated(t: TerminatedState): Record<string, unknown> {
  return { terminated: { ...t } };
}

function v1ContainerStatus(c: ContainerStatusSummary): Record<string, unknown> {
  const state =
    c.state === 'running'
      ? { running: { ...(c.startedAt ? { startedAt: c.startedAt } : {}) } }
      : c.state === 'waiting'
        ? { waiting: { ...(c.reason ? { reason: c.reason } : {}), ...(c.message ? { message: c.message } : {}) } }
        : v1Terminated({
            exitCode: c.exitCode ?? -1,
            reason: c.reason ?? 'Error',
            ...(c.message ? { message: c.message } : {}),
            ...(c.startedAt ? { startedAt: c.startedAt } : {}),
            ...(c.finishedAt ? { finishedAt: c.finishedAt } : {}),
            containerID: c.containerID ?? '',
          });
  return {
    name: c.name,
    image: c.image,
    ready: c.ready,
    started: c.started,
    restartCount: c.restartCount,
    state,
    lastState: c.lastTerminated ? v1Terminated(c.lastTerminated) : {},
    ...(c.containerID ? { containerID: c.containerID } : {}),
  };
}

const cond = (type: string, ok: boolean): Record<string, string> => ({ type, status: ok ? 'True' : 'False' });

/** A v1 PodStatus from the summary. */
export function toV1Status(status: PodStatusSummary, ips: { podIP?: string; hostIP: string }): Record<string, unknown> {
  return {
    phase: status.phase,
    ...(status.reason && status.phase !== 'Running' ? { reason: status.reason } : {}),
    conditions: [
      cond('PodScheduled', true),
      cond('Initialized', status.initialized),
      cond('ContainersReady', status.containersReady),
      cond('Ready', status.ready),
    ],
    hostIP: ips.hostIP,
    hostIPs: [{ ip: ips.hostIP }],
    ...(ips.podIP ? { podIP: ips.podIP, podIPs: [{ ip: ips.podIP }] } : {}),
    ...(status.initContainers.length ? { initContainerStatuses: status.initContainers.map(v1ContainerStatus) } : {}),
    containerStatuses: status.containers.map(v1ContainerStatus),
  };
}

/** The pod as a v1 Pod with a status, for `get pods -o json|yaml` and the agent's /pods. */
export function toV1Pod(
  observed: ObservedPod,
  status: PodStatusSummary,
  ips: { podIP?: string; hostIP: string },
  deletion?: { deletionTimestamp: string; deletionGracePeriodSeconds: number },
): Record<string, unknown> {
  const spec: Pod | undefined = observed.spec;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...(spec?.metadata ?? {}),
      name: observed.name,
      namespace: observed.namespace,
      uid: observed.uid,
      annotations: { ...(spec?.metadata.annotations ?? {}), 'podrun.io/source': observed.source },
      // None when the engine gave no time for the sandbox (a zero time: one that failed to start),
      // as the API leaves a time it does not know unset; kubectl's AGE then says <unknown>.
      ...(observed.sandboxes[0]?.createdAt !== undefined ? { creationTimestamp: new Date(observed.sandboxes[0].createdAt * 1000).toISOString() } : {}),
      ...(deletion ?? {}),
    },
    spec: spec?.spec ?? {},
    status: toV1Status(status, ips),
  };
}

/** The few fields of a v1 Pod that readers of the status (CLI, apply) use. */
export interface V1Pod {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: Record<string, unknown> & {
    containers?: { name: string; image: string }[];
    initContainers?: { name: string; image: string }[];
    restartPolicy?: string;
    hostNetwork?: boolean;
  };
  status: {
    phase: string;
    reason?: string;
    message?: string;
    podIP?: string;
    hostIP?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    containerStatuses?: V1ContainerStatus[];
    initContainerStatuses?: V1ContainerStatus[];
  };
}

export interface V1ContainerStatus {
  name: string;
  image: string;
  ready: boolean;
  started?: boolean;
  restartCount: number;
  containerID?: string;
  state: {
    running?: { startedAt?: string };
    waiting?: { reason?: string; message?: string };
    terminated?: { exitCode: number; reason?: string; message?: string; startedAt?: string; finishedAt?: string };
  };
  lastState?: { terminated?: { exitCode: number; reason?: string; message?: string; startedAt?: string; finishedAt?: string; containerID?: string } };
}

/** On the view of a pod that runs its last Ready version: which version failed (for `apply` to know its own). */
export const ROLLED_BACK_VERSION = 'podrun.io/rolled-back-version';

/** Marks a v1 Pod view as rolled back: kubectl's STATUS column and describe show the reason. */
export function markRolledBack(pod: Record<string, unknown>, rb: { version: string; message: string }): void {
  const metadata = pod.metadata as { annotations?: Record<string, string> };
  metadata.annotations = { ...(metadata.annotations ?? {}), [ROLLED_BACK_VERSION]: rb.version };
  Object.assign(pod.status as Record<string, unknown>, { reason: 'RolledBack', message: rb.message });
}
