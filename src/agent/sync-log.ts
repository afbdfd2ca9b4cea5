import type { Logger } from '../log/logger.js';
import type { DesiredPod } from '../manifest/types.js';
import type { BackoffResult } from '../reconcile/start-backoff.js';
import type { PodActions } from '../reconcile/plan.js';
import type { ObservedPod } from '../runtime/observed.js';

/** What a turn is about to do, one line per change, as the kubelet logs its sync's actions. */
export function logSyncActions(log: Logger, d: DesiredPod, o: ObservedPod | undefined, actions: PodActions, gate: BackoffResult): void {
  const run = gate.actions;
  if (run.createSandbox) return log.info(`pod ${d.key}: ${o ? `recreating (${actions.reason ?? ''})` : 'creating'}`, { pod: d.key });
  if (run.killPod) return log.info(`pod ${d.key}: stopping the pod (${actions.reason ?? ''})`, { pod: d.key });
  const waitedFor = new Map(gate.restarts.map((x) => [x.name, x.waitedMs]));
  for (const s of run.containersToStart) {
    const waited = waitedFor.get(s.name);
    log.info(
      `pod ${d.key}: starting ${s.type === 'init' ? 'init container' : 'container'} ${s.name} (${s.reason})${waited ? ` after a back-off of ${Math.round(waited / 1000)}s` : ''}`,
      { pod: d.key, container: s.name },
    );
  }
}
