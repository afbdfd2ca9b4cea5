/**
 * Health-gated updates (podrun's, beyond the kubelet): a pod that opts in must be Ready within its
 * deadline after its spec changes, else it goes back to the last version that was Ready, and the
 * failed version is not tried again until its source declares another. Pure: the record, the
 * declared version and how the pod does now in; which version to run, and the new record, out.
 * The agent persists the record before acting on it, so a restart (a kill -9 mid-update or
 * mid-rollback) picks up the same decision: the pod converges to one of the two versions.
 */
import { formatDuration } from '../base/duration.js';
import { ROLLBACK_ANNOTATION } from '../manifest/annotations.js';
import type { Pod } from '../manifest/types.js';
import type { ContainerStatusSummary, PodStatusSummary } from '../status/pod-status.js';

export interface RollbackRecord {
  /** The last version that was Ready: what a failed update goes back to. */
  good?: { version: string; pod: Pod; at: string };
  /** The version being tried, and since when (wall-clock, so the deadline survives a restart). */
  trying?: { version: string; since: string };
  /** A version that was not Ready in time: run `good` instead until the source declares another. */
  failed?: { version: string; reason: string; since: string; at: string; deadlineMs: number; rolledBackTo: string };
}

/** How the version that runs does: Ready, or not with the reason, or not known yet (`reason` unset). */
export type Readiness = { ready: true } | { ready: false; reason?: string };

export interface RollbackInput {
  declared: { version: string; pod: Pod };
  /** The deadline for an update, or undefined when the pod does not opt in. */
  deadlineMs: number | undefined;
  /** How the version that was just synced does; unset when not judged on this turn. */
  observed?: { version: string; readiness: Readiness };
  now: number;
  /** False while the engine cannot be reached: nothing of an update can start, so its clock does not either. */
  engineUp?: boolean;
}

export interface RollbackDecision {
  record: RollbackRecord;
  run: 'declared' | 'good';
  /** Set on the turn that rolls back: why. */
  rolledBack?: string;
  /** When to judge again (the deadline, or soon when the readiness is not known yet). */
  checkAt?: number;
}

/** The failed version and the status message of a pod that runs its last Ready version instead, if it does. */
export function rolledBack(r: RollbackRecord): { version: string; message: string } | undefined {
  if (!r.failed || !r.good) return undefined;
  return {
    version: r.failed.version,
    message: `version ${r.failed.version} was not Ready within ${formatDuration(r.failed.deadlineMs)} (${r.failed.reason}); running version ${r.good.version}, the last that was Ready, until the manifest changes`,
  };
}

/** How long a pod may take to be Ready after an update, from its annotation or the default; undefined: not gated. */
export function rollbackDeadline(pod: Pod, defaultMs: number, parse: (text: string) => number): number | undefined {
  const a = pod.metadata.annotations?.[ROLLBACK_ANNOTATION];
  const ms = a === undefined ? defaultMs : parse(a);
  return ms > 0 ? ms : undefined;
}

/** How soon to look again when a verdict is due but the readiness is not known yet. */
const RECHECK_MS = 1000;

export function decideRollback(record: RollbackRecord, input: RollbackInput): RollbackDecision {
  const { declared, deadlineMs, observed, now } = input;
  const v = declared.version;
  const r: RollbackRecord = { ...record };
  const at = new Date(now).toISOString();
  // Any version seen Ready becomes the one to go back to, opted in or not: a pod that adds the
  // annotation in the same update that breaks it still has a version to return to.
  if (observed?.version === v && observed.readiness.ready) {
    if (r.good?.version !== v) r.good = { version: v, pod: declared.pod, at };
    delete r.trying;
    delete r.failed;
    return { record: r, run: 'declared' };
  }
  if (deadlineMs === undefined || !r.good || r.good.version === v) {
    // Not gated, nothing to go back to, or back at the good version: as the kubelet.
    delete r.trying;
    delete r.failed;
    return { record: r, run: 'declared' };
  }
  if (r.failed?.version === v) return { record: r, run: 'good' };
  // A new version: a failed one before it is forgotten (its source changed again).
  delete r.failed;
  if (r.trying?.version !== v) {
    if (input.engineUp === false) return { record: r, run: 'declared' };
    r.trying = { version: v, since: at };
  }
  const deadline = Date.parse(r.trying.since) + deadlineMs;
  if (now < deadline) return { record: r, run: 'declared', checkAt: deadline };
  if (observed?.version !== v || observed.readiness.ready || observed.readiness.reason === undefined) {
    // Due, but how it does is not known yet (the agent just restarted and no probe has answered):
    // judge it once it is, rather than roll back a pod that may be fine.
    return { record: r, run: 'declared', checkAt: now + RECHECK_MS };
  }
  const good = r.good;
  r.failed = { version: v, reason: observed.readiness.reason, since: r.trying.since, at, deadlineMs, rolledBackTo: good.version };
  delete r.trying;
  return { record: r, run: 'good', rolledBack: observed.readiness.reason };
}

/** The last result of a container's readiness or startup probe, if one has run since the agent started. */
export interface ProbeNote {
  kind: 'readiness' | 'startup' | 'liveness';
  ok: boolean;
  message: string;
}

function exitText(c: ContainerStatusSummary): string {
  const t = c.lastTerminated;
  return t ? `, last exit code ${t.exitCode} (${t.reason})` : '';
}

/**
 * Why the pod is not Ready, naming the container and the probe or exit code; undefined when that is
 * not known yet (a running container whose readiness or startup probe has not answered since the
 * agent started). `done`: the pod runs what it declares and nothing is left to do.
 */
export function notReadyReason(
  status: PodStatusSummary,
  done: boolean,
  probeOf: (containerName: string) => ProbeNote | undefined,
  hasProbe: (containerName: string) => boolean,
): string | undefined {
  for (const c of [...status.initContainers, ...status.containers]) {
    const what = `${c.type === 'init' ? 'init container' : 'container'} ${c.name}`;
    if (c.state === 'terminated') {
      if (c.type === 'init' && c.exitCode === 0) continue;
      return `${what} exited with code ${c.exitCode ?? -1} (${c.reason ?? 'Error'})`;
    }
    if (c.state === 'waiting') return `${what} is waiting: ${c.reason ?? 'not started'}${c.message ? `: ${c.message}` : ''}${exitText(c)}`;
    if (c.ready || (c.type === 'init' && c.started)) continue;
    const note = probeOf(c.name);
    if (note && !note.ok) return `${what}: ${note.kind} probe failed: ${note.message}${exitText(c)}`;
    if (!hasProbe(c.name)) continue;
    if (!note) return undefined;
    return `${what}: ${c.started ? 'readiness' : 'startup'} probe has not passed yet`;
  }
  if (status.containersReady && !status.ready) return 'a readiness gate is not True';
  if (!done) return 'the update has not finished (containers still to stop or start)';
  return undefined;
}
