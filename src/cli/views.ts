import type { ObservedPod } from '../runtime/observed.js';
import type { PodRuntime } from '../runtime/runtime.js';
import { agentGet } from '../server/client.js';
import type { PodEvent } from '../status/events.js';
import { podStatus, type ContainerDetails } from '../status/pod-status.js';
import { toV1Pod, type V1Pod } from '../status/v1.js';

export type { V1ContainerStatus, V1Pod } from '../status/v1.js';

async function localDetails(rt: PodRuntime, o: ObservedPod): Promise<Map<string, ContainerDetails>> {
  const out = new Map<string, ContainerDetails>();
  const seen = new Map<string, number>();
  for (const c of o.containers) {
    const n = seen.get(c.name) ?? 0;
    if (n >= 2) continue;
    seen.set(c.name, n + 1);
    const st = await rt.containerState(c.id);
    if (!st) continue;
    const t = (x: string | undefined): string | undefined => (x && !x.startsWith('0001-') ? x : undefined);
    const startedAt = t(st.StartedAt);
    const finishedAt = st.Running ? undefined : t(st.FinishedAt);
    out.set(c.id, { ...(startedAt ? { startedAt } : {}), ...(finishedAt ? { finishedAt } : {}), exitCode: st.ExitCode, oomKilled: st.OOMKilled, ...(st.Error ? { error: st.Error } : {}) });
  }
  return out;
}

/**
 * The pods of this instance as v1 Pods with status: from the agent when one runs (it knows probe
 * results, backoff and events), else computed here from the engine alone.
 */
export async function loadPodViews(rt: PodRuntime, stateDir: string): Promise<{ pods: V1Pod[]; fromAgent: boolean }> {
  const fromAgent = await agentGet<{ items: V1Pod[] }>(stateDir, '/pods');
  if (fromAgent) return { pods: fromAgent.items, fromAgent: true };
  const observed = await rt.listPods();
  const pods: V1Pod[] = [];
  for (const o of observed) {
    if (!o.spec) continue;
    const details = await localDetails(rt, o);
    const status = podStatus(o.spec, o, { details: (id) => details.get(id) });
    const sandbox = o.sandboxes[0];
    const podIP = sandbox?.state === 'running' ? (await rt.sandboxInfo(sandbox.id, o.spec).catch(() => undefined))?.ip : undefined;
    pods.push(toV1Pod(o, status, { hostIP: rt.hostIP, ...(podIP ? { podIP } : {}) }) as unknown as V1Pod);
  }
  return { pods, fromAgent: false };
}

export async function loadEvents(stateDir: string, uid: string): Promise<PodEvent[] | undefined> {
  const r = await agentGet<{ items: PodEvent[] }>(stateDir, `/events?uid=${encodeURIComponent(uid)}`);
  return r?.items;
}
