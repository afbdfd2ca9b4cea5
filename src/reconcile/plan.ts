import { containerHash, sandboxHash } from '../manifest/hash.js';
import { allContainers, type Container, type DesiredPod, type Pod } from '../manifest/types.js';
import { deletionPlan, type DeletionPlan } from './deletion-plan.js';
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
  /** The probe that failed, for a probe kill (said by value: nothing reads it back from `reason`). */
  probe?: 'liveness' | 'startup';
  /** A probe's own terminationGracePeriodSeconds, for a probe kill. */
  graceSeconds?: number;
}

export interface PodActions {
  /** Stop every container and sandbox of the pod (sandbox change, nothing left to run, or pod no longer desired). */
  killPod: boolean;
  /** The pod is no longer declared: everything of it stopped and removed, its directory last (the kubelet's SyncTerminatingPod, then SyncTerminatedPod). */
  removePod?: boolean;
  /** How: the order of the stops, each container's grace, what to wait for (with removePod). */
  deletion?: DeletionPlan;
  createSandbox: boolean;
  /** Attempt number of the sandbox to create. */
  sandboxAttempt: number;
  containersToKill: ContainerToKill[];
  containersToStart: ContainerToStart[];
  /** Why the pod is killed (and maybe re-created), for the plan printout and events. */
  reason?: string;
  /** A non-retried init container failed under restartPolicy Never: the pod has failed. */
  podFailed?: boolean;
  /**
   * Containers whose images are had before anything running is killed: an update replaces a
   * running version only once the registry has served the new one (a registry that is down leaves
   * the old version up; the kubelet would kill first and then fail the pull).
   */
  imagesFirst?: string[];
}

/** What the plan needs beyond the spec and the engine: the prober's verdicts. */
export interface PlanInputs {
  /** A running container whose liveness or startup probe failed, with the probe's own grace period. */
  probeFailure?: (containerId: string) => { kind: 'liveness' | 'startup'; graceSeconds?: number } | undefined;
  /** Whether a running container passed its startup probe (a sidecar must, before the next init container). */
  started?: (containerId: string) => boolean;
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

/**
 * The plan for a pod that is not desired any more (the agent's deletion turn, `apply --prune`):
 * stop and remove all of it, as its deletion plan orders, `override` replacing every grace period.
 */
export function removalActions(observed: ObservedPod, override?: number): PodActions {
  return { ...NONE, killPod: true, removePod: true, deletion: deletionPlan(observed, override), reason: 'no longer desired' };
}

/** Why the pod needs a new sandbox: what the plan decides by (`kind`), and what it prints. */
interface SandboxProblem {
  kind: 'missing' | 'stopped' | 'several' | 'pod-spec-changed' | 'init-changed';
  message: string;
}

function sandboxProblem(desired: DesiredPod, observed: ObservedPod | undefined): SandboxProblem | undefined {
  const sandbox = observed?.sandboxes[0];
  if (!sandbox) return { kind: 'missing', message: 'no sandbox' };
  // The kubelet's podSandboxChanged: a sandbox not READY is replaced (attempt + 1).
  if (sandbox.state !== 'ready') return { kind: 'stopped', message: 'sandbox is not running' };
  if (observed.sandboxes.filter(isActive).length > 1) return { kind: 'several', message: 'more than one sandbox is running' };
  if (sandbox.hash !== sandboxHash(desired.pod))
    return { kind: 'pod-spec-changed', message: 'pod-level spec changed (network, ports, hostname, DNS or namespaces)' };
  // Init containers ran for the old spec; a new one means the pod starts over.
  const latest = latestByName(observed);
  for (const c of desired.pod.spec.initContainers ?? []) {
    const prev = latest.get(c.name);
    if (!isSidecar(c) && prev && prev.hash !== containerHash(desired.pod, c)) return { kind: 'init-changed', message: `init container ${c.name} changed` };
  }
  return undefined;
}

/**
 * Whether the pod is initialized: one of its regular containers was made in this sandbox, or its
 * last init container completed in it. Then its init containers are done, even if their dead instances were
 * garbage-collected since, and never run again; sidecars restart on their own (the kubelet's
 * computeInitContainerActions).
 */
function initialized(pod: Pod, current: (name: string) => ObservedContainer | undefined): boolean {
  // Any app container made in this sandbox, exited ones included: the kubelet counts only created
  // or running ones, since it cannot tell an old sandbox's containers apart; podrun can (by creation
  // time), so a dead app container behind a sidecar in back-off is still restarted.
  const appRan = pod.spec.containers.some((c) => current(c.name) !== undefined);
  if (appRan) return true;
  // Or the last init container, a regular one, has completed (the app may all have exited since).
  const inits = pod.spec.initContainers ?? [];
  const last = inits[inits.length - 1];
  if (!last) return true;
  const lastPrev = current(last.name);
  return !isSidecar(last) && lastPrev?.state === 'exited' && lastPrev.exitCode === 0;
}

/**
 * The kubelet's computePodActions, for one desired pod against what the engine holds and what the
 * prober says: every decision of a sync (what to kill, what to start, whether the pod is done).
 * Pure: no I/O, no clock (back-off is applied by the caller to the starts it returns).
 */
export function computePodActions(desired: DesiredPod, observed: ObservedPod | undefined, inputs: PlanInputs = {}): PodActions {
  const a = podActions(desired, observed, inputs);
  const first = imagesFirst(desired.pod, observed, a);
  return first.length ? { ...a, imagesFirst: first } : a;
}

/** An update of something running: a running container killed for a new spec, or a running pod whose sandbox is re-made. */
function imagesFirst(pod: Pod, observed: ObservedPod | undefined, a: PodActions): string[] {
  if (!observed) return [];
  const all = allContainers(pod);
  const running = observed.containers.filter(isActive);
  if (a.killPod && a.createSandbox && running.length > 0) return all.map((c) => c.name);
  const replaced = a.containersToKill.flatMap((k) => {
    const c = running.find((x) => x.id === k.id);
    const spec = all.find((x) => x.name === k.name);
    return c && spec && c.hash !== containerHash(pod, spec) && a.containersToStart.some((s) => s.name === k.name) ? [k.name] : [];
  });
  return replaced;
}

function podActions(desired: DesiredPod, observed: ObservedPod | undefined, inputs: PlanInputs): PodActions {
  const pod = desired.pod;
  const spec = pod.spec;
  const latest = observed ? latestByName(observed) : new Map<string, ObservedContainer>();
  const problem = sandboxProblem(desired, observed);
  const restartOnFailure = (spec.restartPolicy ?? 'Always') !== 'Never';
  const anyActive = observed ? [...observed.sandboxes, ...observed.containers].some(isActive) : false;
  // An exited container whose spec was edited runs again whatever the policy: the kubelet sees an
  // edited static pod as a new pod.
  const edited = (c: Container): boolean => {
    const prev = latest.get(c.name);
    return prev !== undefined && !isActive(prev) && prev.hash !== containerHash(pod, c);
  };

  if (problem) {
    const ranBefore = (observed?.containers.length ?? 0) > 0;
    const specChanged = (observed?.sandboxes[0] !== undefined && observed.sandboxes[0].hash !== sandboxHash(pod)) || spec.containers.some(edited);
    // As the kubelet: a Never pod whose containers already ran gets no new sandbox (unless its
    // spec changed: then it is a new pod), and whatever of it still runs is stopped.
    if (!restartOnFailure && ranBefore && !specChanged && problem.kind !== 'init-changed') {
      return anyActive ? { ...NONE, killPod: true, reason: `${problem.message}; restartPolicy is Never` } : NONE;
    }
    const starts: ContainerToStart[] = [];
    const firstInit = spec.initContainers?.[0];
    if (firstInit) {
      starts.push({ name: firstInit.name, type: 'init', restartCount: nextCount(latest.get(firstInit.name)), reason: 'pod (re)created' });
    } else {
      for (const c of spec.containers) {
        const prev = latest.get(c.name);
        // OnFailure: a container that already succeeded stays done across a sandbox recreation.
        if (spec.restartPolicy === 'OnFailure' && prev && prev.exitCode === 0 && prev.hash === containerHash(pod, c) && problem.kind !== 'pod-spec-changed')
          continue;
        starts.push({ name: c.name, type: 'app', restartCount: nextCount(prev), reason: 'pod (re)created' });
      }
    }
    // Nothing left to run (OnFailure, every container succeeded): no sandbox for nothing.
    if (starts.length === 0) return anyActive ? { ...NONE, killPod: true, reason: 'all containers have completed' } : NONE;
    const hadAny = (observed?.sandboxes.length ?? 0) + (observed?.containers.length ?? 0) > 0;
    return {
      killPod: hadAny,
      createSandbox: true,
      sandboxAttempt: observed?.sandboxes[0] ? observed.sandboxes[0].attempt + 1 : 0,
      containersToKill: [],
      containersToStart: starts,
      reason: problem.message,
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

  const probeKill = (c: ObservedContainer): (ContainerToKill & { probe: 'liveness' | 'startup' }) | undefined => {
    const failed = inputs.probeFailure?.(c.id);
    if (!failed) return undefined;
    return {
      id: c.id,
      name: c.name,
      probe: failed.kind,
      reason: `failed ${failed.kind} probe, will be ${restartOnFailure ? 'restarted' : 'left stopped'}`,
      ...(failed.graceSeconds !== undefined ? { graceSeconds: failed.graceSeconds } : {}),
    };
  };
  /** Why a container killed by its probe starts again: the probe, said once, not cut out of the kill's words. */
  const probeRestart = (failed: { probe: 'liveness' | 'startup' }): string => `failed ${failed.probe} probe`;

  // Init containers, one at a time and in order, until the pod is initialized; sidecars start in
  // order and, once the pod is initialized, restart on their own without holding anything up.
  // Only instances made for the current sandbox count (the kubelet purges the others).
  // A time the engine did not give counts as the earliest, so an instance of unknown age is not
  // taken for one of a sandbox whose creation the engine did tell.
  const sandboxCreated = observed?.sandboxes[0]?.createdAt ?? 0;
  const current = (name: string): ObservedContainer | undefined => {
    const prev = latest.get(name);
    return prev && (prev.created ?? 0) >= sandboxCreated ? prev : undefined;
  };
  const done = initialized(pod, current);
  let pending = false;
  for (const c of spec.initContainers ?? []) {
    const last = latest.get(c.name);
    const prev = current(c.name);
    const hash = containerHash(pod, c);
    if (isSidecar(c)) {
      if (prev && isActive(prev)) {
        const failed = probeKill(prev);
        if (prev.hash !== hash || failed) {
          kills.push(failed ?? { id: prev.id, name: c.name, reason: 'sidecar spec changed' });
          starts.push({ name: c.name, type: 'init', restartCount: nextCount(last), reason: failed ? probeRestart(failed) : 'sidecar spec changed' });
          if (!done) pending = true;
        } else if (!done && inputs.started?.(prev.id) === false) {
          pending = true;
        }
      } else {
        if (prev?.state === 'created') kills.push({ id: prev.id, name: c.name, reason: 'never started' });
        starts.push({
          name: c.name,
          type: 'init',
          restartCount: prev?.state === 'created' ? prev.restartCount : nextCount(last),
          reason: prev ? 'sidecar restarted' : 'sidecar started',
        });
        if (!done) pending = true;
      }
      if (pending) break;
      continue;
    }
    if (done) continue;
    if (prev && prev.state === 'exited' && prev.exitCode === 0) continue;
    if (prev && isActive(prev)) {
      pending = true;
      break;
    }
    if (prev && prev.state === 'exited' && !restartOnFailure) {
      return { ...NONE, killPod: anyActive, containersToKill: kills, podFailed: true, reason: `init container ${c.name} failed` };
    }
    if (prev && prev.state === 'created') kills.push({ id: prev.id, name: c.name, reason: 'never started' });
    starts.push({
      name: c.name,
      type: 'init',
      restartCount: prev?.state === 'created' ? prev.restartCount : nextCount(last),
      reason: prev ? 'init container failed; retrying' : 'init container',
    });
    pending = true;
    break;
  }
  if (pending) return { ...NONE, containersToKill: kills, containersToStart: starts };

  let keep = 0;
  for (const c of spec.containers) {
    const prev = latest.get(c.name);
    const hash = containerHash(pod, c);
    if (!prev) {
      starts.push({ name: c.name, type: 'app', restartCount: 0, reason: 'new container' });
      continue;
    }
    if (isActive(prev)) {
      if (prev.hash !== hash) {
        kills.push({ id: prev.id, name: c.name, reason: 'container spec changed' });
        starts.push({ name: c.name, type: 'app', restartCount: nextCount(prev), reason: 'container spec changed' });
        continue;
      }
      const failed = probeKill(prev);
      if (failed) {
        // A probe kill restarts the container unless the policy is Never, whatever its exit code.
        kills.push(failed);
        if (restartOnFailure) starts.push({ name: c.name, type: 'app', restartCount: nextCount(prev), reason: probeRestart(failed) });
        continue;
      }
      keep++;
      continue;
    }
    if (prev.state === 'created') {
      // Made but never started (a crash between create and start): replace it with the same count.
      kills.push({ id: prev.id, name: c.name, reason: 'never started' });
      starts.push({ name: c.name, type: 'app', restartCount: prev.restartCount, reason: 'never started' });
      continue;
    }
    if (edited(c)) {
      starts.push({ name: c.name, type: 'app', restartCount: nextCount(prev), reason: 'container spec changed' });
      continue;
    }
    if (shouldRestart(pod, prev)) {
      starts.push({ name: c.name, type: 'app', restartCount: nextCount(prev), reason: `exited with code ${prev.exitCode ?? '?'}` });
    }
  }
  // Nothing runs and nothing will (Never, or OnFailure after success): stop the sandbox and the
  // sidecars, freeing the pod's ports (the kubelet's KillPod when keepCount is 0).
  if (keep === 0 && !starts.some((s) => s.type === 'app')) {
    return anyActive ? { ...NONE, killPod: true, reason: 'all containers have terminated' } : NONE;
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
export function planApply(
  desired: DesiredPod[],
  observed: ObservedPod[],
  prune?: { applySet: string; keep?: ReadonlySet<string> },
  decided?: ReadonlyMap<string, PodActions>,
): PodPlan[] {
  const byUid = new Map(observed.map((o) => [o.uid, o]));
  const plans: PodPlan[] = desired.map((d) => {
    const o = byUid.get(d.uid);
    // The pod worker's own decision when it made one (`apply` without an agent), so the plan printed is the one carried out.
    const actions = decided?.get(d.uid) ?? computePodActions(d, o);
    let verdict: PodVerdict = 'unchanged';
    if (!o || (o.sandboxes.length === 0 && o.containers.length === 0)) verdict = 'created';
    else if (actions.createSandbox) verdict = 'replaced';
    else if (hasActions(actions)) verdict = 'updated';
    return { key: d.key, uid: d.uid, verdict, actions, desired: d, ...(o ? { observed: o } : {}) };
  });
  if (prune) {
    const wanted = new Set(desired.map((d) => d.uid));
    for (const o of observed) {
      // A pod applied again from elsewhere since (its label still names this set) is that apply's now.
      if (o.applySet === prune.applySet && !wanted.has(o.uid) && !prune.keep?.has(`${o.namespace}/${o.name}`)) {
        plans.push({ key: `${o.namespace}/${o.name}`, uid: o.uid, verdict: 'deleted', actions: removalActions(o), observed: o });
      }
    }
  }
  return plans;
}
