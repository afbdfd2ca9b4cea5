import { containerHash, sandboxHash } from '../manifest/hash.js';
import type { Container, DesiredPod, Pod } from '../manifest/types.js';
import { isActive, latestByName, type ObservedContainer, type ObservedPod } from '../runtime/observed.js';

// The decision half of a pod sync, after the kubelet's computePodActions: given what the manifest
// wants and what the engine has, what must be killed and what started. Pure: no I/O, no clock.

export interface ContainerToStart {
  name: string;
  type: 'init' | 'app';
  /** Restart count the new instance carries (previous instance + 1, or 0). */
  restartCount: number;
  reason: string;
}

export interface ContainerToKill {
  id: string;
  name: string;
  reason: string;
}

export interface PodActions {
  /** Stop every container and sandbox of the pod (sandbox change or pod no longer desired). */
  killPod: boolean;
  createSandbox: boolean;
  /** Attempt number of the sandbox to create. */
  sandboxAttempt: number;
  containersToKill: ContainerToKill[];
  containersToStart: ContainerToStart[];
  /** Why the pod needs a new sandbox, for the plan printout. */
  reason?: string;
  /** A non-retried init container failed under restartPolicy Never: the pod has failed. */
  podFailed?: boolean;
}

export function hasActions(a: PodActions): boolean {
  return a.killPod || a.createSandbox || a.containersToKill.length > 0 || a.containersToStart.length > 0;
}

const NONE: PodActions = { killPod: false, createSandbox: false, sandboxAttempt: 0, containersToKill: [], containersToStart: [] };

/** Whether a container that is not running should run again, by the pod's restartPolicy. */
export function shouldRestart(pod: Pod, c: ObservedContainer): boolean {
  switch (pod.spec.restartPolicy ?? 'Always') {
    case 'Never':
      return false;
    case 'OnFailure':
      return c.exitCode !== 0;
    default:
      return true;
  }
}

function isSidecar(c: Container): boolean {
  return c.restartPolicy === 'Always';
}

function nextCount(prev: ObservedContainer | undefined): number {
  return prev ? prev.restartCount + 1 : 0;
}

/** Actions for a pod that is not desired any more: stop and remove all of it. */
export function removalActions(): PodActions {
  return { ...NONE, killPod: true, reason: 'no longer desired' };
}

function sandboxProblem(desired: DesiredPod, observed: ObservedPod | undefined): string | undefined {
  const sandbox = observed?.sandboxes[0];
  if (!sandbox) return 'no sandbox';
  if (sandbox.state !== 'running') return 'sandbox is not running';
  if (observed.sandboxes.filter(isActive).length > 1) return 'more than one sandbox is running';
  if (sandbox.hash !== sandboxHash(desired.pod)) return 'pod-level spec changed (network, ports, hostname, DNS or namespaces)';
  // Init containers ran for the old spec; a new one means the pod starts over.
  const latest = latestByName(observed);
  for (const c of desired.pod.spec.initContainers ?? []) {
    const prev = latest.get(c.name);
    if (!isSidecar(c) && prev && prev.hash !== containerHash(desired.pod, c)) return `init container ${c.name} changed`;
  }
  return undefined;
}

/** The kubelet's computePodActions, for one desired pod against what the engine holds. */
export function computePodActions(desired: DesiredPod, observed: ObservedPod | undefined): PodActions {
  const pod = desired.pod;
  const spec = pod.spec;
  const latest = observed ? latestByName(observed) : new Map<string, ObservedContainer>();
  const problem = sandboxProblem(desired, observed);

  if (problem) {
    const ranBefore = (observed?.containers.length ?? 0) > 0;
    // As the kubelet: a Never pod whose containers already ran does not get a new sandbox,
    // unless its spec changed (then it is a new pod for every practical purpose).
    const specChanged = observed?.sandboxes[0] !== undefined && observed.sandboxes[0].hash !== sandboxHash(pod);
    if (spec.restartPolicy === 'Never' && ranBefore && !specChanged && !problem.startsWith('init container')) return NONE;
    const starts: ContainerToStart[] = [];
    const firstInit = spec.initContainers?.[0];
    if (firstInit) {
      starts.push({ name: firstInit.name, type: 'init', restartCount: nextCount(latest.get(firstInit.name)), reason: 'pod (re)created' });
    } else {
      for (const c of spec.containers) {
        const prev = latest.get(c.name);
        // OnFailure: a container that already succeeded stays done across a sandbox recreation.
        if (spec.restartPolicy === 'OnFailure' && prev && prev.exitCode === 0 && prev.hash === containerHash(pod, c) && !problem.startsWith('pod-level')) continue;
        starts.push({ name: c.name, type: 'app', restartCount: nextCount(prev), reason: 'pod (re)created' });
      }
    }
    const hadAny = (observed?.sandboxes.length ?? 0) + (observed?.containers.length ?? 0) > 0;
    return {
      killPod: hadAny,
      createSandbox: true,
      sandboxAttempt: observed?.sandboxes[0] ? observed.sandboxes[0].restartCount + 1 : 0,
      containersToKill: [],
      containersToStart: starts,
      reason: problem,
    };
  }

  const kills: ContainerToKill[] = [];
  const starts: ContainerToStart[] = [];
  const wanted = new Set([...(spec.initContainers ?? []), ...spec.containers].map((c) => c.name));

  // Instances that should not be running: unknown names, and older duplicates of a name.
  if (observed) {
    const seen = new Set<string>();
    for (const c of observed.containers) {
      const first = !seen.has(c.name);
      seen.add(c.name);
      if (!isActive(c)) continue;
      if (!wanted.has(c.name)) kills.push({ id: c.id, name: c.name, reason: 'not in the pod spec any more' });
      else if (!first) kills.push({ id: c.id, name: c.name, reason: 'duplicate instance' });
    }
  }

  // Init containers, one at a time and in order; sidecars start and stay running.
  for (const c of spec.initContainers ?? []) {
    const prev = latest.get(c.name);
    const hash = containerHash(pod, c);
    if (isSidecar(c)) {
      if (prev && isActive(prev) && prev.hash === hash) continue;
      if (prev && isActive(prev)) kills.push({ id: prev.id, name: c.name, reason: 'sidecar spec changed' });
      starts.push({ name: c.name, type: 'init', restartCount: nextCount(prev), reason: prev ? 'sidecar restarted' : 'sidecar started' });
      return { ...NONE, containersToKill: kills, containersToStart: starts };
    }
    if (prev && prev.state === 'exited' && prev.exitCode === 0) continue;
    if (prev && isActive(prev)) return { ...NONE, containersToKill: kills };
    if (prev && prev.state === 'exited' && spec.restartPolicy === 'Never') {
      return { ...NONE, containersToKill: kills, podFailed: true };
    }
    if (prev && prev.state === 'created') kills.push({ id: prev.id, name: c.name, reason: 'never started' });
    starts.push({ name: c.name, type: 'init', restartCount: nextCount(prev), reason: prev ? 'init container failed; retrying' : 'init container' });
    return { ...NONE, containersToKill: kills, containersToStart: starts };
  }

  for (const c of spec.containers) {
    const prev = latest.get(c.name);
    const hash = containerHash(pod, c);
    if (!prev) {
      starts.push({ name: c.name, type: 'app', restartCount: 0, reason: 'new container' });
      continue;
    }
    if (isActive(prev)) {
      if (prev.hash === hash) continue;
      kills.push({ id: prev.id, name: c.name, reason: 'container spec changed' });
      starts.push({ name: c.name, type: 'app', restartCount: nextCount(prev), reason: 'container spec changed' });
      continue;
    }
    if (prev.state === 'created') {
      // Made but never started (a crash between create and start): replace it with the same count.
      kills.push({ id: prev.id, name: c.name, reason: 'never started' });
      starts.push({ name: c.name, type: 'app', restartCount: prev.restartCount, reason: 'never started' });
      continue;
    }
    if (shouldRestart(pod, prev)) {
      starts.push({ name: c.name, type: 'app', restartCount: nextCount(prev), reason: `exited with code ${prev.exitCode ?? '?'}` });
    }
  }
  return { ...NONE, containersToKill: kills, containersToStart: starts };
}

export type PodVerdict = 'created' | 'replaced' | 'updated' | 'unchanged' | 'deleted';

export interface PodPlan {
  key: string;
  uid: string;
  verdict: PodVerdict;
  actions: PodActions;
  desired?: DesiredPod;
  observed?: ObservedPod;
}

/**
 * The whole plan for one `apply`: every desired pod against the engine, plus (with prune) the
 * pods an earlier apply of the same set made that are gone from it now.
 */
export function planApply(desired: DesiredPod[], observed: ObservedPod[], prune?: { applySet: string }): PodPlan[] {
  const byUid = new Map(observed.map((o) => [o.uid, o]));
  const plans: PodPlan[] = desired.map((d) => {
    const o = byUid.get(d.uid);
    const actions = computePodActions(d, o);
    let verdict: PodVerdict = 'unchanged';
    if (!o || (o.sandboxes.length === 0 && o.containers.length === 0)) verdict = 'created';
    else if (actions.createSandbox) verdict = 'replaced';
    else if (hasActions(actions)) verdict = 'updated';
    return { key: d.key, uid: d.uid, verdict, actions, desired: d, ...(o ? { observed: o } : {}) };
  });
  if (prune) {
    const wanted = new Set(desired.map((d) => d.uid));
    for (const o of observed) {
      if (o.applySet === prune.applySet && !wanted.has(o.uid)) {
        plans.push({ key: `${o.namespace}/${o.name}`, uid: o.uid, verdict: 'deleted', actions: removalActions(), observed: o });
      }
    }
  }
  return plans;
}
