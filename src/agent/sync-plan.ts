import { isImageReason } from '../base/reasons.js';
import type { Logger } from '../log/logger.js';
import { containerHash } from '../manifest/hash.js';
import type { DesiredPod } from '../manifest/types.js';
import type { PodCache } from '../pleg/cache.js';
import type { ProbeManager } from '../probe/manager.js';
import { Backoff } from '../reconcile/backoff.js';
import { newestExited, sandboxKey, type BackoffView, type BackoffResult } from '../reconcile/start-backoff.js';
import { specOf } from '../reconcile/lifecycle.js';
import { computePodActions, type PodActions } from '../reconcile/plan.js';
import type { ObservedPod } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import type { PodRecord } from './pod-record.js';

/**
 * The steps of a pod worker's turn (syncer.ts `turn`) that read or write only what they are
 * given: the plan with the prober's verdicts, what the back-off gate reads, and the record of
 * what started.
 */

/** Decide, first half: the plan (pure), with the prober's verdicts. */
export function planSync(d: DesiredPod, o: ObservedPod | undefined, probes: Pick<ProbeManager, 'state'>, log: Logger): PodActions {
  const actions = computePodActions(d, o, {
    probeFailure: (id) => {
      const failed = probes.state(id)?.failed;
      return failed && failed.kind !== 'readiness'
        ? { kind: failed.kind, ...(failed.graceSeconds !== undefined ? { graceSeconds: failed.graceSeconds } : {}) }
        : undefined;
    },
    // No worker yet (the container has just started): started only if it has no startup probe
    // to pass, as the kubelet waits for a startup result it has not got.
    started: (id) => {
      const state = probes.state(id);
      if (state) return state.started;
      const name = o?.containers.find((c) => c.id === id)?.name;
      return !(name && specOf(d.pod, name)?.startupProbe);
    },
  });
  for (const k of actions.containersToKill) {
    if (k.probe) log.warn(`pod ${d.key}: container ${k.name} ${k.reason}`, { pod: d.key, container: k.name });
  }
  return actions;
}

/** Decide, second half: what applyBackoff (pure) reads, the finish times of what would restart gathered first. */
export async function backoffViewOf(
  rt: Pick<PodEngine, 'finishedAt'>,
  cache: Pick<PodCache, 'finishedAt'>,
  r: PodRecord,
  o: ObservedPod | undefined,
  actions: PodActions,
  now: number,
): Promise<BackoffView> {
  const finished = new Map<string, number>();
  for (const st of actions.containersToStart) {
    const prev = o ? newestExited(o, st.name) : undefined;
    if (prev) finished.set(prev.id, cache.finishedAt(prev.id) ?? (await rt.finishedAt(prev.id)) ?? now);
  }
  return {
    crash: r.backoff.crash,
    imagePulls: r.backoff.imagePulls,
    refused: r.backoff.startFailures,
    waitingOnImage: (name) => isImageReason(r.waiting.get(name)?.reason),
    finishedAt: (id) => finished.get(id),
  };
}

/** What `recordStarted` tells the metrics (the syncer's observer). */
export interface StartObserver {
  started?(type: 'sandbox' | 'init' | 'app'): void;
  restarted?(namespace: string, pod: string, container: string): void;
}

/** Record, after actions that went through: what started waits for nothing, and its refusals are forgotten. */
export function recordStarted(d: DesiredPod, r: PodRecord, gate: BackoffResult, observer: StartObserver): void {
  const run = gate.actions;
  if (run.createSandbox) observer.started?.('sandbox');
  for (const s of run.containersToStart) observer.started?.(s.type);
  for (const x of gate.restarts) observer.restarted?.(d.pod.metadata.namespace ?? 'default', d.pod.metadata.name, x.name);
  for (const s of run.containersToStart) {
    r.waiting.delete(s.name);
    const spec = specOf(d.pod, s.name);
    if (spec) r.backoff.startFailures.forget(Backoff.key(d.uid, s.name, containerHash(d.pod, spec)));
  }
  if (run.createSandbox) r.backoff.startFailures.forget(sandboxKey(d));
}
