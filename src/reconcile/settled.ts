import type { DesiredPod } from '../manifest/types.js';
import type { ObservedPod } from '../runtime/observed.js';
import { podStatus, type PodStatusSummary, type StatusInputs } from '../status/pod-status.js';
import { computePodActions, hasActions } from './plan.js';

/**
 * Whether `apply` may stop waiting for this pod: Ready and running what the manifest says now, or
 * done. `idle`: nothing is left to stop or start for the manifest as it is now.
 */
export function settled(
  d: DesiredPod,
  observed: ObservedPod | undefined,
  inputs: StatusInputs = {},
): { done: boolean; failed: boolean; idle: boolean; status: PodStatusSummary } {
  const status = podStatus(d.pod, observed, inputs);
  // Running what the manifest says now (an agent may not have caught up yet).
  const idle = !hasActions(computePodActions(d, observed));
  if (status.phase === 'Failed') return { done: true, failed: true, idle, status };
  if (status.phase === 'Succeeded') return { done: true, failed: false, idle, status };
  const running = status.phase === 'Running' && status.containers.every((c) => c.state === 'running');
  return { done: running && status.ready && idle, failed: false, idle, status };
}
