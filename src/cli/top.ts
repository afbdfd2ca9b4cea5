import { SANDBOX_NAME } from '../runtime/labels.js';
import type { PodEngine } from '../runtime/roles.js';
import { agentGet } from '../server/client.js';
import { formatCpu, formatMemory, podStats, type ContainerSample, type PodStatsV1 } from '../stats/summary.js';
import { EXIT, makeRuntime, type GlobalOptions, type Io } from './context.js';
import { noResources } from './pod-args.js';
import { table } from './print.js';

/**
 * Usage from the engine alone (no agent): each running container read once, with the engine's
 * previous sample a second before it for the CPU rate, as `docker stats --no-stream` does.
 */
async function podsFromEngine(rt: PodEngine): Promise<PodStatsV1[]> {
  const pods = await rt.listPods();
  const samples = await Promise.all(
    pods.flatMap((p) =>
      [
        ...p.sandboxes.filter((s) => s.state === 'ready').map((s) => ({ id: s.id, name: SANDBOX_NAME, type: 'sandbox' as const })),
        ...p.containers.filter((c) => c.state === 'running'),
      ].map(async (c): Promise<ContainerSample | undefined> => {
        const stats = await rt.containerStats(c.id, false);
        return stats ? { id: c.id, name: c.name, type: c.type, pod: { name: p.name, namespace: p.namespace, uid: p.uid }, stats } : undefined;
      }),
    ),
  );
  return podStats(samples.filter((s): s is ContainerSample => s !== undefined));
}

/** `podrun top pods`: kubectl top's columns, from the agent's last readings or the engine. */
export async function topPodsCommand(
  o: { namespace: string; allNamespaces: boolean; containers: boolean; noHeaders?: boolean },
  g: GlobalOptions,
  io: Io,
): Promise<number> {
  const fromAgent = await agentGet<{ pods: PodStatsV1[] }>(g.stateDir, '/stats/summary');
  const all = fromAgent?.pods ?? (await podsFromEngine(await makeRuntime(g, io)));
  const pods = all.filter((p) => o.allNamespaces || p.podRef.namespace === o.namespace);
  if (pods.length === 0) {
    noResources(io, o.allNamespaces ? undefined : o.namespace);
    return EXIT.ok;
  }
  const ns = (p: PodStatsV1): string[] => (o.allNamespaces ? [p.podRef.namespace] : []);
  const rows = o.containers
    ? pods.flatMap((p) => p.containers.map((c) => [...ns(p), p.podRef.name, c.name, formatCpu(c.cpu.usageNanoCores), formatMemory(c.memory.workingSetBytes)]))
    : pods.map((p) => [...ns(p), p.podRef.name, formatCpu(p.cpu.usageNanoCores), formatMemory(p.memory.workingSetBytes)]);
  const header = [...(o.allNamespaces ? ['NAMESPACE'] : []), ...(o.containers ? ['POD', 'NAME'] : ['NAME']), 'CPU(cores)', 'MEMORY(bytes)'];
  for (const l of table([header, ...rows])) io.out(l);
  return EXIT.ok;
}
