import { isImageReason } from '../base/reasons.js';
import { containerHash } from '../manifest/hash.js';
import type { DesiredPod } from '../manifest/types.js';
import { latestByName, type ObservedPod } from '../runtime/observed.js';
import type { V1ContainerStatus, V1Pod } from '../status/v1.js';
import { specOf } from './lifecycle.js';

// What `apply` judges a pod by while it waits, from the pod's v1 status (the agent's, or one
// computed from the engine): whether it is stuck (it will not become Ready without a change to
// its manifest, or a long back-off), and a mark of its running instances, so that "ready" is said
// only of a pod that stayed ready, unchanged, for a moment. Pure.

/**
 * The kubelet's waiting reasons for a container that does not run and will not soon: a crash loop
 * in back-off, an image that cannot be had, a container the runtime refuses to create or start.
 */
const STUCK_REASONS = new Set([
  'CrashLoopBackOff',
  'ErrImagePull',
  'ImagePullBackOff',
  'ErrImageNeverPull',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
  'PreCreateHookError',
  'PostStartHookError',
]);

export interface Stuck {
  container: string;
  init: boolean;
  reason: string;
  message?: string;
  restartCount: number;
  /** The last run's end, when it ran. */
  exitCode?: number;
  exitReason?: string;
  /** The engine id of the instance whose log tells why (the one that just ended). */
  logOf?: string;
}

function engineId(containerID: string | undefined): string | undefined {
  const id = containerID?.replace(/^[a-z]+:\/\//, '');
  return id || undefined;
}

/**
 * Whether the status is about the pod as `d` declares it: the stuck container's newest instance, if
 * any, was made from its spec now, and for an image, the waiting message names its image now. A
 * status left from the version before an update is no reason to give up on the update.
 */
function current(d: DesiredPod, observed: ObservedPod | undefined, c: V1ContainerStatus): boolean {
  const spec = specOf(d.pod, c.name);
  if (!spec) return false;
  // The agent drops a waiting reason when its container's spec changes: an image reason in a
  // status of this spec is about this image (a status of the version before shows that one's).
  if (isImageReason(c.state.waiting?.reason)) return c.image === spec.image;
  // No instance (a create refused): nothing older it could be about.
  const latest = observed ? latestByName(observed).get(c.name) : undefined;
  return latest === undefined || latest.hash === containerHash(d.pod, spec);
}

/** The first container (init containers first) of the pod that is stuck, as `d` declares it. */
export function stuckContainer(d: DesiredPod, observed: ObservedPod | undefined, status: V1Pod['status']): Stuck | undefined {
  const lists: [boolean, V1ContainerStatus[]][] = [
    [true, status.initContainerStatuses ?? []],
    [false, status.containerStatuses ?? []],
  ];
  for (const [init, list] of lists) {
    for (const c of list) {
      const reason = c.state.waiting?.reason;
      if (!reason || !STUCK_REASONS.has(reason) || !current(d, observed, c)) continue;
      // As the kubelet's back-off: the first restart is at once; a crash loop is a second death.
      // (The engine, restarting in place, waits a moment even after the first.)
      if (reason === 'CrashLoopBackOff' && c.restartCount < 1) continue;
      const last = c.lastState?.terminated;
      const logOf = engineId(last?.containerID) ?? engineId(c.containerID);
      return {
        container: c.name,
        init,
        reason,
        restartCount: c.restartCount,
        ...(c.state.waiting?.message ? { message: c.state.waiting.message } : {}),
        ...(last ? { exitCode: last.exitCode, ...(last.reason ? { exitReason: last.reason } : {}) } : {}),
        ...(logOf ? { logOf } : {}),
      };
    }
  }
  return undefined;
}

/** The first container (init containers first) that ended with a failure and will not run again: why a pod failed. */
export function failedContainer(status: V1Pod['status']): Stuck | undefined {
  const lists: [boolean, V1ContainerStatus[]][] = [
    [true, status.initContainerStatuses ?? []],
    [false, status.containerStatuses ?? []],
  ];
  for (const [init, list] of lists) {
    for (const c of list) {
      const t = c.state.terminated;
      if (!t || t.exitCode === 0) continue;
      const logOf = engineId(c.containerID);
      return {
        container: c.name,
        init,
        reason: t.reason ?? 'Error',
        restartCount: c.restartCount,
        exitCode: t.exitCode,
        ...(t.reason ? { exitReason: t.reason } : {}),
        ...(logOf ? { logOf } : {}),
      };
    }
  }
  return undefined;
}

/** Whether a container of the status waits for a reason that may make it stuck (to read more about it). */
export function waitsStuck(status: V1Pod['status']): boolean {
  return [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])].some((c) => STUCK_REASONS.has(c.state.waiting?.reason ?? ''));
}

/** One line on why: the reason, the container, and its last exit (or the runtime's message). */
export function stuckText(s: Stuck): string {
  const kind = s.init ? 'init container' : 'container';
  if (s.exitCode !== undefined) {
    const restarts = s.restartCount === 1 ? '1 restart' : `${s.restartCount} restarts`;
    return `${s.reason}: ${kind} ${s.container} exited with code ${s.exitCode}${s.exitReason ? ` (${s.exitReason})` : ''}, ${restarts}`;
  }
  return `${s.reason}: ${kind} ${s.container}${s.message ? `: ${s.message}` : ''}`;
}

/**
 * The pod's running instances (engine id, restarts, start): a pod that keeps one mark for the whole
 * hold has not restarted anything in it, in place or anew.
 */
export function instancesMark(status: V1Pod['status']): string {
  const all = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
  return all.map((c) => `${c.name}=${c.containerID ?? ''}/${c.restartCount}/${c.state.running?.startedAt ?? ''}`).join(',');
}

/** Whether a container of the pod has a readiness or startup probe: its Ready is then the prober's, not its containers' running. */
function readinessProbed(d: DesiredPod): boolean {
  return [...(d.pod.spec.initContainers ?? []), ...d.pod.spec.containers].some((c) => c.readinessProbe || c.startupProbe);
}

/**
 * `heldSince` by the engine's list alone, with no inspect: the latest the newest of the pod's
 * containers can have started, when every instance the engine has of the pod is running and the
 * list told each one's uptime (Docker's status text, which a restart in place starts anew). Else
 * (a probe, an instance that ended, an uptime not told) undefined: the starts are to be read.
 */
export function heldSinceListed(d: DesiredPod, o: ObservedPod): number | undefined {
  if (readinessProbed(d) || o.containers.length === 0) return undefined;
  let newest = Number.NEGATIVE_INFINITY;
  for (const c of o.containers) {
    if (c.state !== 'running' || c.startedBy === undefined) return undefined;
    newest = Math.max(newest, c.startedBy);
  }
  return newest;
}

/**
 * Since when a Ready pod has held with the instances it has now, for apply's hold (READY_HOLD_MS):
 * a pod whose readiness is its containers running (no readiness or startup probe) has held since
 * its newest running container started, so an apply of pods that run unchanged need not watch them
 * for another second; any other pod, or a start time that cannot be read, from `now`. Never later
 * than `now`: an engine clock ahead of this one only makes the hold longer.
 */
export function heldSince(d: DesiredPod, status: V1Pod['status'], now: number): number {
  if (readinessProbed(d)) return now;
  let newest = Number.NEGATIVE_INFINITY;
  for (const c of [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])]) {
    if (!c.state.running) continue;
    const t = Date.parse(c.state.running.startedAt ?? '');
    if (!Number.isFinite(t)) return now;
    newest = Math.max(newest, t);
  }
  return Number.isFinite(newest) ? Math.min(newest, now) : now;
}
