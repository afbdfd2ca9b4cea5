import type { Pod } from '../manifest/types.js';
import { isActive, type ObservedContainer, type ObservedPod } from '../runtime/observed.js';

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

/** What only an inspect tells about a container. */
export interface ContainerDetails {
  startedAt?: string;
  finishedAt?: string;
  exitCode?: number;
  oomKilled?: boolean;
  error?: string;
  /** What the container left at its terminationMessagePath (or its log's tail, on error, if asked). */
  message?: string;
  /** Restarts the engine made in place under its own restart policy (`apply` without an agent). */
  engineRestarts?: number;
  /** The engine is waiting to restart it in place: its exit code is the run that just ended (else, running, 0). */
  restarting?: boolean;
}

export interface TerminatedState {
  exitCode: number;
  reason: string;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  containerID: string;
}

export interface ContainerStatusSummary {
  name: string;
  type: 'init' | 'app';
  state: 'waiting' | 'running' | 'terminated';
  reason?: string;
  message?: string;
  exitCode?: number;
  startedAt?: string;
  finishedAt?: string;
  restartCount: number;
  containerID?: string;
  image: string;
  ready: boolean;
  started: boolean;
  lastTerminated?: TerminatedState;
}

export interface PodStatusSummary {
  phase: PodPhase;
  /** Why the pod is not Running yet, when it is not. */
  reason?: string;
  initialized: boolean;
  containersReady: boolean;
  ready: boolean;
  containers: ContainerStatusSummary[];
  initContainers: ContainerStatusSummary[];
}

/** What the agent (or apply's own prober) knows beyond the engine's list. */
export interface StatusInputs {
  /** The engine's runtime type, the scheme of each container ID (`<type>://<id>`); absent: the bare ID. */
  runtimeName?: string;
  details?: (containerId: string) => ContainerDetails | undefined;
  /**
   * Probe results; without a prober, a running container counts as started and ready. A prober
   * that has no result for a container yet answers undefined: its initial results then apply.
   */
  probes?: (containerId: string) => { started: boolean; ready: boolean } | undefined;
  /** A waiting reason the syncer imposes (CrashLoopBackOff, ErrImagePull, ImagePullBackOff). */
  waiting?: (container: string) => { reason: string; message: string } | undefined;
  /** A running container whose postStart hook has not returned: not Running yet, as the kubelet reports it. */
  postStarting?: (containerId: string) => boolean;
}

function terminatedReason(c: ObservedContainer, d: ContainerDetails | undefined): string {
  if (d?.oomKilled) return 'OOMKilled';
  if (d?.error) return 'ContainerCannotRun';
  return (d?.exitCode ?? c.exitCode) === 0 ? 'Completed' : 'Error';
}

/** The kubelet's container ID: the runtime type and the engine's ID. */
function containerID(c: ObservedContainer, inputs: StatusInputs): string {
  return inputs.runtimeName ? `${inputs.runtimeName}://${c.id}` : c.id;
}

function terminated(c: ObservedContainer, d: ContainerDetails | undefined, inputs: StatusInputs): TerminatedState {
  return {
    exitCode: d?.exitCode ?? c.exitCode ?? -1,
    reason: terminatedReason(c, d),
    ...(d?.message || d?.error ? { message: d.message ?? d.error } : {}),
    ...(d?.startedAt ? { startedAt: d.startedAt } : {}),
    ...(d?.finishedAt ? { finishedAt: d.finishedAt } : {}),
    containerID: containerID(c, inputs),
  };
}

/** The kubelet's initial results (prober_manager.go): a startup probe not yet passed holds both, a readiness probe holds Ready. */
function initialProbeResults(spec: { readinessProbe?: unknown; startupProbe?: unknown }): { started: boolean; ready: boolean } {
  return { started: !spec.startupProbe, ready: !spec.readinessProbe && !spec.startupProbe };
}

function containerStatus(
  spec: { name: string; image: string; readinessProbe?: unknown; startupProbe?: unknown },
  type: 'init' | 'app',
  instances: ObservedContainer[],
  inputs: StatusInputs,
  notYet: string,
): ContainerStatusSummary {
  const [c, prev] = instances;
  const lastTerminated = prev && !isActive(prev) ? terminated(prev, inputs.details?.(prev.id), inputs) : undefined;
  const base = { name: spec.name, type, image: spec.image, ...(lastTerminated ? { lastTerminated } : {}) };
  const imposed = inputs.waiting?.(spec.name);
  if (!c) {
    return {
      ...base,
      state: 'waiting',
      reason: imposed?.reason ?? notYet,
      ...(imposed ? { message: imposed.message } : {}),
      restartCount: 0,
      ready: false,
      started: false,
    };
  }
  const d = inputs.details?.(c.id);
  // podrun's own restarts are new instances (the label); the engine's are in place (its count).
  const common = {
    ...base,
    restartCount: c.restartCount + (d?.engineRestarts ?? 0),
    containerID: containerID(c, inputs),
    ...(d?.startedAt ? { startedAt: d.startedAt } : {}),
  };
  if (c.engineRestarting) {
    // The engine restarts it (no agent): it is crash-looping as far as anyone can tell, and the
    // run that just ended (the engine keeps its exit code) is its last state, as the kubelet's.
    const ended = d?.restarting && d.exitCode !== undefined ? { lastTerminated: terminated(c, d, inputs) } : {};
    return { ...common, ...ended, state: 'waiting', reason: 'CrashLoopBackOff', ready: false, started: false };
  }
  // The kubelet's status of a container whose postStart has not returned is the one from before
  // it started (its worker is inside the start): waiting, with no container ID yet.
  if (isActive(c) && inputs.postStarting?.(c.id))
    return { ...base, restartCount: common.restartCount, state: 'waiting', reason: 'ContainerCreating', ready: false, started: false };
  if (isActive(c)) {
    // Without a prober (the CLI) nobody probes: as the engine has it. With one, a probed container
    // it has no result for yet has not passed, as the kubelet's initial probe results.
    const p = inputs.probes ? (inputs.probes(c.id) ?? initialProbeResults(spec)) : { started: true, ready: true };
    return { ...common, state: 'running', ready: p.ready, started: p.started };
  }
  if (c.state === 'created')
    return {
      ...common,
      state: 'waiting',
      reason: imposed?.reason ?? 'ContainerCreating',
      ...(imposed ? { message: imposed.message } : {}),
      ready: false,
      started: false,
    };
  const t = terminated(c, d, inputs);
  if (imposed) {
    // Waiting to run again: the instance that just ended becomes the last state.
    return { ...common, state: 'waiting', reason: imposed.reason, message: imposed.message, ready: false, started: false, lastTerminated: t };
  }
  return {
    ...common,
    state: 'terminated',
    reason: t.reason,
    exitCode: t.exitCode,
    ...(t.message ? { message: t.message } : {}),
    ...(t.finishedAt ? { finishedAt: t.finishedAt } : {}),
    ready: false,
    started: false,
  };
}

/** The pod's phase, conditions and container states from the engine's view, by the kubelet's rules. Pure. */
export function podStatus(pod: Pod, observed: ObservedPod | undefined, inputs: StatusInputs = {}): PodStatusSummary {
  const byName = (name: string): ObservedContainer[] => observed?.containers.filter((c) => c.name === name) ?? [];
  const specInits = pod.spec.initContainers ?? [];
  const inits = specInits.map((c) => containerStatus(c, 'init', byName(c.name), inputs, 'PodInitializing'));
  const sandbox = observed?.sandboxes[0];
  const policy = pod.spec.restartPolicy ?? 'Always';
  const initialized = specInits.every((c, i) => {
    const s = inits[i];
    return c.restartPolicy === 'Always' ? s?.state === 'running' && s.started : s?.state === 'terminated' && s.exitCode === 0;
  });
  const apps = pod.spec.containers.map((c) => containerStatus(c, 'app', byName(c.name), inputs, initialized ? 'ContainerCreating' : 'PodInitializing'));
  const gates = (pod.spec.readinessGates ?? []).every((g) => pod.metadata.annotations?.[`podrun.io/condition.${g.conditionType}`] === 'True');
  const containersReady = initialized && apps.every((c) => c.ready) && inits.every((c, i) => specInits[i]?.restartPolicy !== 'Always' || c.ready);
  const base = { initialized, containersReady, ready: containersReady && gates, containers: apps, initContainers: inits };

  const failedInit = specInits.some((c, i) => c.restartPolicy !== 'Always' && inits[i]?.state === 'terminated' && inits[i]?.exitCode !== 0);
  if (failedInit && policy === 'Never') return { ...base, phase: 'Failed', reason: 'Init container failed' };
  if (!sandbox) return { ...base, phase: 'Pending', reason: 'no sandbox' };
  if (!initialized) return { ...base, phase: 'Pending', reason: 'PodInitializing' };

  const running = apps.filter((c) => c.state === 'running').length;
  const neverRan = apps.filter((c) => c.state === 'waiting' && !c.containerID && !c.lastTerminated).length;
  const terminatedApps = apps.filter((c) => c.state === 'terminated');
  const failed = terminatedApps.filter((c) => c.exitCode !== 0).length;
  if (neverRan > 0) return { ...base, phase: 'Pending', reason: 'ContainerCreating' };
  if (running > 0 || apps.some((c) => c.state === 'waiting')) return { ...base, phase: 'Running' };
  if (policy === 'Always') return { ...base, phase: 'Running', reason: 'containers exited and will be restarted' };
  if (failed === 0) return { ...base, phase: 'Succeeded' };
  if (policy === 'Never') return { ...base, phase: 'Failed' };
  return { ...base, phase: 'Running', reason: 'containers failed and will be restarted' };
}
