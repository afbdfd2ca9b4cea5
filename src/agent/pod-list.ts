import type { PodCache } from '../pleg/cache.js';
import { markRefusedRunning, refusedV1Pod } from '../status/refusal.js';
import { markRolledBack, toV1Pod } from '../status/v1.js';
import type { DesiredSet } from './desired-set.js';
import type { HealthGate } from './health-gate.js';
import type { PodSyncer } from './pod-syncer.js';

export interface PodListDeps {
  set: Pick<DesiredSet, 'uids' | 'get' | 'declared' | 'refusals'>;
  cache: Pick<PodCache, 'pods'>;
  syncer: Pick<PodSyncer, 'status' | 'podIP'>;
  gate: Pick<HealthGate, 'rolledBack'>;
  hostIP: string;
  /** The deletion under way of a pod, asked of this agent: shown Terminating. */
  deletion: (uid: string) => { deletionTimestamp: string; deletionGracePeriodSeconds: number } | undefined;
}

/** Every pod the agent knows (declared or on the engine), as v1 Pods with the worker's status. */
export async function podList(x: PodListDeps): Promise<Record<string, unknown>[]> {
  const observed = new Map(x.cache.pods().map((p) => [p.uid, p]));
  const uids = new Set([...x.set.uids(), ...observed.keys()]);
  const items: Record<string, unknown>[] = [];
  for (const uid of uids) {
    const d = x.set.get(uid);
    const o = observed.get(uid) ?? {
      uid,
      name: d?.pod.metadata.name ?? '',
      namespace: d?.pod.metadata.namespace ?? 'default',
      source: d?.origin.source ?? '',
      sandboxes: [],
      containers: [],
    };
    const view = d ? { ...o, spec: d.pod, source: d.origin.shown ?? d.origin.source } : o;
    const status = await x.syncer.status(d, observed.get(uid));
    if (!status) continue;
    const podIP = await x.syncer.podIP(view.spec, observed.get(uid));
    const item = toV1Pod(view, status, { hostIP: x.hostIP, ...(podIP ? { podIP } : {}) }, observed.has(uid) ? x.deletion(uid) : undefined);
    const declared = x.set.declared(uid);
    const rolledBack = declared ? x.gate.rolledBack(declared) : undefined;
    if (rolledBack) markRolledBack(item, rolledBack);
    items.push(item);
  }
  // A refused pod is shown: Failed when it never ran, marked when one runs on from before.
  const keyOf = (i: Record<string, unknown>): string => {
    const m = i.metadata as { namespace: string; name: string };
    return `${m.namespace}/${m.name}`;
  };
  for (const r of x.set.refusals()) {
    const shown = items.filter((i) => keyOf(i) === r.key);
    for (const i of shown) markRefusedRunning(i, r);
    if (!shown.length) items.push(refusedV1Pod(r, x.hostIP));
  }
  return items;
}
