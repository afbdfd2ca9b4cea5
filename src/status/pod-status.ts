import type { DesiredPod, Pod } from '../manifest/types.js';
import { isActive, latestByName, type ObservedContainer, type ObservedPod } from '../runtime/observed.js';
import { computePodActions, hasActions } from '../reconcile/plan.js';

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

export interface ContainerStatusSummary {
  name: string;
  type: 'init' | 'app';
  state: 'waiting' | 'running' | 'terminated';
  reason?: string;
  exitCode?: number;
  restartCount: number;
  containerID?: string;
  image: string;
}

export interface PodStatusSummary {
  phase: PodPhase;
  /** Why the pod is not Running yet, when it is not. */
  reason?: string;
  containers: ContainerStatusSummary[];
  initContainers: ContainerStatusSummary[];
}

function containerStatus(name: string, type: 'init' | 'app', image: string, c: ObservedContainer | undefined): ContainerStatusSummary {
  if (!c) return { name, type, state: 'waiting', reason: 'ContainerCreating', restartCount: 0, image };
  const base = { name, type, restartCount: c.restartCount, containerID: `docker://${c.id}`, image };
  if (isActive(c)) return { ...base, state: 'running' };
  if (c.state === 'created') return { ...base, state: 'waiting', reason: 'ContainerCreating' };
  return {
    ...base,
    state: 'terminated',
    reason: c.exitCode === 0 ? 'Completed' : 'Error',
    ...(c.exitCode !== undefined ? { exitCode: c.exitCode } : {}),
  };
}

/** The pod's phase from the engine's view, by the kubelet's rules (getPhase). Pure. */
export function podStatus(pod: Pod, observed: ObservedPod | undefined): PodStatusSummary {
  const latest = observed ? latestByName(observed) : new Map<string, ObservedContainer>();
  const inits = (pod.spec.initContainers ?? []).map((c) => containerStatus(c.name, 'init', c.image, latest.get(c.name)));
  const apps = pod.spec.containers.map((c) => containerStatus(c.name, 'app', c.image, latest.get(c.name)));
  const sandbox = observed?.sandboxes[0];
  const policy = pod.spec.restartPolicy ?? 'Always';

  const failedInit = (pod.spec.initContainers ?? []).some((c, i) => c.restartPolicy !== 'Always' && inits[i]?.state === 'terminated' && inits[i]?.exitCode !== 0);
  if (failedInit && policy === 'Never') return { phase: 'Failed', reason: 'Init container failed', containers: apps, initContainers: inits };
  const initDone = (pod.spec.initContainers ?? []).every((c, i) => (c.restartPolicy === 'Always' ? inits[i]?.state === 'running' : inits[i]?.state === 'terminated' && inits[i]?.exitCode === 0));
  if (!sandbox) return { phase: 'Pending', reason: 'no sandbox', containers: apps, initContainers: inits };
  if (!initDone) return { phase: 'Pending', reason: 'PodInitializing', containers: apps, initContainers: inits };

  const running = apps.filter((c) => c.state === 'running').length;
  const waiting = apps.filter((c) => c.state === 'waiting').length;
  const terminated = apps.filter((c) => c.state === 'terminated');
  const failed = terminated.filter((c) => c.exitCode !== 0).length;
  if (waiting > 0) return { phase: 'Pending', reason: 'ContainerCreating', containers: apps, initContainers: inits };
  if (running > 0) return { phase: 'Running', containers: apps, initContainers: inits };
  // Everything has terminated.
  if (policy === 'Always') return { phase: 'Running', reason: 'containers exited and will be restarted', containers: apps, initContainers: inits };
  if (failed === 0) return { phase: 'Succeeded', containers: apps, initContainers: inits };
  if (policy === 'Never') return { phase: 'Failed', containers: apps, initContainers: inits };
  return { phase: 'Running', reason: 'containers failed and will be restarted', containers: apps, initContainers: inits };
}

/** Whether `apply` may stop waiting for this pod, and whether it ended badly. */
export function settled(d: DesiredPod, observed: ObservedPod | undefined): { done: boolean; failed: boolean; status: PodStatusSummary } {
  const status = podStatus(d.pod, observed);
  if (status.phase === 'Failed') return { done: true, failed: true, status };
  if (status.phase === 'Succeeded') return { done: true, failed: false, status };
  const allRunning = status.phase === 'Running' && status.containers.every((c) => c.state === 'running');
  // Running, and running what the manifest says now (an agent may not have caught up yet).
  const nothingToDo = !hasActions(computePodActions(d, observed));
  return { done: allRunning && nothingToDo, failed: false, status };
}
