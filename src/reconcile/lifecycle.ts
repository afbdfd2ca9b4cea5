import { timerDelay } from '../base/duration.js';
import type { ContainerStop, DeletionPlan } from './deletion-plan.js';
import { allContainers, type Container, type Pod } from '../manifest/types.js';
import { runHook } from '../probe/handlers.js';
import { isActive, type ObservedContainer, type ObservedPod } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import { LABEL } from '../runtime/labels.js';

/** Where events about a pod go (the agent's recorder; nowhere for one-shot commands). */
export type EventSink = (type: 'Normal' | 'Warning', reason: string, message: string, fieldPath?: string) => void;

/** The kubelet's minimumGracePeriodInSeconds: every stop gets at least this, unless a grace period was given outright. */
const MIN_GRACE_S = 2;

/** The grace period a pod on the engine was made with (its spec label), the kubelet's 30 s if unknown. */
export function graceOf(observed: ObservedPod): number {
  return observed.spec?.spec.terminationGracePeriodSeconds ?? 30;
}

export function specOf(pod: Pod | undefined, name: string): Container | undefined {
  return pod ? allContainers(pod).find((c) => c.name === name) : undefined;
}

export function fieldPathOf(pod: Pod | undefined, name: string): string | undefined {
  if (!pod) return undefined;
  const i = pod.spec.containers.findIndex((c) => c.name === name);
  if (i >= 0) return `spec.containers{${name}}`;
  return (pod.spec.initContainers ?? []).some((c) => c.name === name) ? `spec.initContainers{${name}}` : undefined;
}

/**
 * The address hooks and probes use when they name no host: the pod IP, which on the host network
 * is the node IP (`--node-ip`), as the kubelet probes it.
 */
export async function defaultHostOf(rt: PodEngine, pod: Pod | undefined, observed: ObservedPod | undefined): Promise<string> {
  if (!pod) return '127.0.0.1';
  if (pod.spec.hostNetwork) return rt.hostIP;
  const sandbox = observed?.sandboxes[0];
  if (!sandbox || !isActive(sandbox)) return '127.0.0.1';
  return (await rt.sandboxInfo(sandbox.id, pod)).ip || '127.0.0.1';
}

/**
 * Stops one container as the kubelet does (kuberuntime_container.go killContainer): its preStop
 * hook first when there is any grace period, then the stop signal, then SIGKILL when what is left
 * of the grace period runs out, never less than 2 s, unless the grace period was given outright
 * (`exact`, as `delete --grace-period` does: the kubelet's gracePeriodOverride). The spec and
 * grace period are the container's own (its labels) unless the caller knows better.
 */
export async function killContainer(
  rt: PodEngine,
  c: ObservedContainer,
  spec: Container | undefined,
  graceSeconds: number,
  o: { defaultHost: string; reason: string; events?: EventSink; fieldPath?: string; exact?: boolean },
): Promise<void> {
  if (!isActive(c)) return;
  o.events?.('Normal', 'Killing', `Stopping container ${c.name}${o.reason ? `: ${o.reason}` : ''}`, o.fieldPath);
  let grace = graceSeconds;
  const own = spec ?? c.spec;
  const preStop = own?.lifecycle?.preStop;
  if (own && preStop && c.state === 'running' && grace > 0) {
    const started = Date.now();
    const r = await runHook(preStop, {
      containerId: c.id,
      container: own,
      defaultHost: o.defaultHost,
      timeoutMs: timerDelay(Math.max(1, graceSeconds) * 1000),
      exec: (id, cmd, t) => rt.exec(id, cmd, t),
    }).catch((err: unknown) => ({ ok: false as const, message: (err as Error).message }));
    if (!r.ok) o.events?.('Warning', 'FailedPreStopHook', `PreStop hook for container ${c.name} failed: ${r.message}`, o.fieldPath);
    grace = graceSeconds - (Date.now() - started) / 1000;
  }
  if (!o.exact) grace = Math.max(MIN_GRACE_S, grace);
  await rt.stopContainer(c.id, Math.max(0, grace));
}

/**
 * Stops a whole pod as its deletion plan says (deletion-plan.ts): step after step, the stops of a
 * step together, then the sandbox. The pod keeps its sandbox when `sandbox` is false.
 */
export async function stopPod(rt: PodEngine, observed: ObservedPod, plan: DeletionPlan, events?: EventSink): Promise<void> {
  await stopContainers(rt, observed, plan, events);
  // The sandbox only holds namespaces; it has nothing to shut down cleanly.
  await Promise.all(plan.sandboxes.map((id) => rt.stopSandbox(id)));
}

/** The plan's stops, its sandbox left as it is. */
async function stopContainers(rt: PodEngine, observed: ObservedPod, plan: DeletionPlan, events?: EventSink): Promise<void> {
  const pod = observed.spec;
  const byId = new Map(observed.containers.map((c) => [c.id, c]));
  // Only a preStop hook needs the pod's address: no engine call for it otherwise (a deletion
  // under churn waits for every call it makes).
  const hooked = plan.steps.flat().some((s) => {
    const c = byId.get(s.id);
    return c && (c.spec ?? specOf(pod, c.name))?.lifecycle?.preStop;
  });
  const defaultHost = hooked ? await defaultHostOf(rt, pod, observed).catch(() => '127.0.0.1') : '127.0.0.1';
  // Each grace is counted from the deletion's start, so a sidecar's wait for its turn uses it up
  // (the kubelet's terminationOrdering) and the pod's whole deletion stays within its grace.
  const began = Date.now();
  const kill = async (s: ContainerStop): Promise<void> => {
    const c = byId.get(s.id);
    if (!c) return;
    const left = s.graceSeconds - (Date.now() - began) / 1000;
    const fieldPath = fieldPathOf(pod, c.name);
    await killContainer(rt, c, c.spec ?? specOf(pod, c.name), Math.max(0, left), {
      defaultHost,
      reason: 'pod is being stopped',
      ...(s.exact ? { exact: true } : {}),
      ...(events ? { events } : {}),
      ...(fieldPath ? { fieldPath } : {}),
    });
  };
  for (const step of plan.steps) await Promise.all(step.map(kill));
}

/**
 * Carries out a pod's deletion plan: its stops, then the removal of everything of the pod, its
 * emptyDirs and memory volumes included; false when the engine still had a container of the pod
 * that `observed` did not (the directory then stays: the plan waits for the engine to list nothing).
 */
export async function removePod(rt: PodEngine, observed: ObservedPod, plan: DeletionPlan, events?: EventSink): Promise<boolean> {
  await stopContainers(rt, observed, plan, events);
  // The containers have stopped (their grace period had the pod's network): they and the sandbox
  // are removed at once, each removal seconds on a loaded engine (a sandbox's network taken down
  // behind other pods' set-ups). An engine that tracks the namespaces containers joined (Podman)
  // refuses a sandbox others still depend on: that removal is made again once they are gone. The
  // sandbox is not stopped first: a forced removal ends it in the same call.
  const sandboxIds = new Set(observed.sandboxes.map((s) => s.id));
  const sandboxes = plan.remove.filter((id) => sandboxIds.has(id));
  const settled = Promise.allSettled(sandboxes.map((id) => rt.removeSandbox(id, { urgent: true })));
  await Promise.all(plan.remove.filter((id) => !sandboxIds.has(id)).map((id) => rt.removeContainer(id, { urgent: true })));
  const first = await settled;
  await Promise.all(sandboxes.filter((_, i) => first[i]?.status === 'rejected').map((id) => rt.removeSandbox(id, { urgent: true })));
  return await removePodDir(rt, observed.uid);
}

/**
 * The pod's directory (emptyDirs, downward API files, pinned mounts) outlives its containers: it
 * goes only once the engine lists none of the pod's, since a container made meanwhile (by a sync
 * that had not heard of the deletion) binds from it, and would fail to start without it, as the
 * kubelet cleans a pod's volumes only once it has terminated (pod_workers.go, syncTerminatedPod).
 * True when it went.
 */
export async function removePodDir(rt: PodEngine, uid: string): Promise<boolean> {
  for (let round = 0; ; round++) {
    const left = await rt.listContainers(uid);
    if (left.length === 0) break;
    // Most often a create that was under way when the deletion began (the sync gave up waiting for
    // it) and landed since: never started, it has nothing to stop, and goes now, not a turn (a
    // second) later. A container that runs goes through the next turn, with its grace period.
    if (round >= LEFTOVER_ROUNDS || left.some((c) => !NOTHING_TO_STOP.has(c.state) || c.engineRestarting)) return false;
    await Promise.all(
      left.map((c) => (c.labels[LABEL.containerType] === 'sandbox' ? rt.removeSandbox(c.id, { urgent: true }) : rt.removeContainer(c.id, { urgent: true }))),
    );
  }
  await rt.removePodVolumes(uid);
  return true;
}

/** States of a container whose removal stops nothing (unless the engine is about to restart it). */
const NOTHING_TO_STOP: ReadonlySet<string> = new Set(['created', 'exited', 'unknown']);

/** How often one deletion removes what it had not seen before it leaves the rest to the next turn. */
const LEFTOVER_ROUNDS = 2;
