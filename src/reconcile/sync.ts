import { containerHash, sandboxHash } from '../manifest/hash.js';
import type { Container, DesiredPod } from '../manifest/types.js';
import { isActive, type ObservedPod } from '../runtime/observed.js';
import type { PodRuntime, SandboxInfo } from '../runtime/runtime.js';
import { engineRestartPolicy, identityOf } from '../runtime/spec.js';
import type { PodActions } from './plan.js';

export interface SyncOptions {
  /** Label that lets `apply --prune` find the pods of the same set later. */
  applySet?: string;
  /**
   * When no agent supervises the pod, the engine's restart policy (mapped from restartPolicy)
   * keeps it alive; an agent sets `no` and restarts containers itself with backoff.
   */
  engineRestarts: boolean;
}

function findContainer(d: DesiredPod, name: string): Container {
  const c = [...(d.pod.spec.initContainers ?? []), ...d.pod.spec.containers].find((x) => x.name === name);
  if (!c) throw new Error(`pod ${d.key} has no container ${name}`);
  return c;
}

/** The I/O half of a pod sync: carries out what computePodActions decided, in the kubelet's order. */
export async function executePodActions(rt: PodRuntime, d: DesiredPod, observed: ObservedPod | undefined, actions: PodActions, o: SyncOptions): Promise<void> {
  const pod = d.pod;
  const id = identityOf(pod, d.origin.source, o.applySet);
  const grace = pod.spec.terminationGracePeriodSeconds ?? 30;
  const restartPolicy = (type: 'init' | 'app' | 'sandbox', c?: Container): string => (o.engineRestarts ? engineRestartPolicy(pod, type, c) : 'no');

  // 1. Kill what must go.
  if (actions.killPod && observed) await rt.stopPod(observed, grace);
  await Promise.all(
    actions.containersToKill.map(async (k) => {
      const c = observed?.containers.find((x) => x.id === k.id);
      if (c && isActive(c)) await rt.stopContainer(k.id, grace);
      if (c?.state === 'created') await rt.removeContainer(k.id);
    }),
  );
  if (actions.containersToStart.length === 0 && !actions.createSandbox) return;

  // 2. The sandbox, new or current.
  const volumes = await rt.prepareVolumes(pod);
  let sandbox: SandboxInfo;
  if (actions.createSandbox) {
    sandbox = await rt.createSandbox(pod, id, actions.sandboxAttempt, sandboxHash(pod), restartPolicy('sandbox'));
  } else {
    const current = observed?.sandboxes[0];
    if (!current) throw new Error(`pod ${d.key} has no sandbox to start containers in`);
    sandbox = await rt.sandboxInfo(current.id, pod);
  }

  // 3. Containers, in spec order (init containers come one at a time from the plan).
  for (const s of actions.containersToStart) {
    const c = findContainer(d, s.name);
    await rt.startContainer(pod, id, c, {
      type: s.type,
      restartCount: s.restartCount,
      hash: containerHash(pod, c),
      sandbox,
      volumes,
      restartPolicy: restartPolicy(s.type, c),
    });
  }
}

/**
 * Removes dead instances beyond the newest `keep` per container name, and sandboxes that are
 * neither the newest nor running: the kubelet's MaxPerPodContainer, applied right after a sync.
 */
export async function pruneDeadInstances(rt: PodRuntime, observed: ObservedPod, keep = 1): Promise<number> {
  const doomed: string[] = [];
  const seen = new Map<string, number>();
  for (const c of observed.containers) {
    if (isActive(c) || c.state === 'created') continue;
    const n = (seen.get(c.name) ?? 0) + 1;
    seen.set(c.name, n);
    if (n > keep) doomed.push(c.id);
  }
  observed.sandboxes.slice(1).forEach((s) => {
    if (!isActive(s)) doomed.push(s.id);
  });
  await Promise.all(doomed.map((id) => rt.removeContainer(id)));
  return doomed.length;
}
