import { lockHolder } from '../agent/lock.js';
import { rolledBack } from '../reconcile/rollback.js';
import { RollbackStore } from '../agent/rollback-store.js';
import { loadPullFailures } from './pull-failures.js';
import type { PodEngine } from '../runtime/roles.js';
import { agentGet } from '../server/client.js';
import type { PodEvent } from '../status/events.js';
import { containerDetails } from '../status/details.js';
import { podStatus } from '../status/pod-status.js';
import { markRolledBack, toV1Pod, type V1Pod } from '../status/v1.js';

export type { V1ContainerStatus, V1Pod } from '../status/v1.js';

/**
 * The pods of this instance as v1 Pods with status: from the agent when one runs (it knows probe
 * results, backoff and events), else computed here from the engine alone.
 */
export async function loadPodViews(rt: PodEngine, stateDir: string): Promise<{ pods: V1Pod[]; fromAgent: boolean }> {
  const fromAgent = await agentGet<{ items: V1Pod[] }>(stateDir, '/pods');
  if (fromAgent) return { pods: fromAgent.items, fromAgent: true };
  // With no agent, a CLI deleting pods holds the lock and says which (the one actor, no note files).
  const [observed, holder] = await Promise.all([rt.listPods(), lockHolder(stateDir)]);
  const terminating = new Map(Object.entries(holder?.terminating ?? {}));
  // What the agent last decided about health-gated updates, while no agent answers.
  // (A record that cannot be read just shows nothing here; the agent logs it.)
  const quiet = (): undefined => undefined;
  const rollbacks = new RollbackStore(stateDir, { debug: quiet, info: quiet, warn: quiet, error: quiet });
  rollbacks.load();
  const pulls = loadPullFailures(stateDir);
  // Every pod at once: each costs a few inspects, answered by the engine in parallel.
  const views = await Promise.all(
    observed.map(async (o) => {
      if (!o.spec) return undefined;
      const spec = o.spec;
      const sandbox = o.sandboxes[0];
      const [details, podIP] = await Promise.all([
        containerDetails(rt, o),
        sandbox?.state === 'ready'
          ? spec.spec.hostNetwork
            ? rt.hostIP
            : (sandbox.ip ??
              rt.sandboxInfo(sandbox.id, spec).then(
                (s) => s.ip,
                () => undefined,
              ))
          : undefined,
      ]);
      const failed = pulls.get(o.uid);
      const status = podStatus(spec, o, {
        runtimeName: rt.runtimeName,
        details: (id) => details.get(id),
        ...(failed ? { waiting: (name: string) => failed.find((f) => f.container === name) } : {}),
      });
      const pod = toV1Pod(o, status, { hostIP: rt.hostIP, ...(podIP ? { podIP } : {}) }, terminating.get(o.uid));
      const rb = rolledBack(rollbacks.get(o.uid));
      if (rb) markRolledBack(pod, rb);
      return pod as unknown as V1Pod;
    }),
  );
  return { pods: views.filter((v): v is V1Pod => v !== undefined), fromAgent: false };
}

export async function loadEvents(stateDir: string, uid: string): Promise<PodEvent[] | undefined> {
  const r = await agentGet<{ items: PodEvent[] }>(stateDir, `/events?uid=${encodeURIComponent(uid)}`);
  return r?.items;
}
