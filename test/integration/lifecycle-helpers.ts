import type { V1Pod } from '../../src/status/v1.js';
import { until, type World } from './helpers.js';

/** The agent's view of one pod (via `podrun get pods -o json`, which asks the agent). */
export async function agentPod(world: World, ns: string, name: string): Promise<V1Pod | undefined> {
  const r = await world.cli('get', 'pods', '-n', ns, '-o', 'json');
  if (r.code !== 0) return undefined;
  return (JSON.parse(r.out) as { items: V1Pod[] }).items.find((p) => p.metadata.name === name);
}

export async function untilPod(world: World, ns: string, name: string, what: string, test: (p: V1Pod) => boolean, timeoutMs = 30_000): Promise<V1Pod> {
  return until(what, async () => {
    const p = await agentPod(world, ns, name);
    return p && test(p) ? p : undefined;
  }, timeoutMs);
}

export function container(p: V1Pod, name: string) {
  return [...(p.status.containerStatuses ?? []), ...(p.status.initContainerStatuses ?? [])].find((c) => c.name === name);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
