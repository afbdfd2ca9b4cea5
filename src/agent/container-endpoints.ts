import type { CgroupLayout } from '../runtime/cgroup-stats.js';
import { cgroupCandidates } from '../runtime/cgroup-stats.js';
import { cadvisorMetrics, EXPOSITION_TYPE, resourceMetrics } from '../stats/container-metrics.js';
import type { NodeSummary } from '../stats/node-view.js';
import type { ContainerSample } from '../stats/summary.js';

export type ContainerEndpoint = 'cadvisor' | 'resource' | 'probes';

export interface EndpointSources {
  samples(): Promise<ContainerSample[]>;
  node(): Promise<NodeSummary>;
  layout(): Promise<CgroupLayout | undefined>;
  probes(): Promise<string>;
}

/**
 * The kubelet's /metrics/cadvisor, /metrics/resource and /metrics/probes, from the agent's
 * readings (the same as /stats/summary's) and its prober's counters. A reading that fails leaves
 * /metrics/resource with scrape_error 1, as the kubelet's does, rather than no answer.
 */
export async function containerEndpoint(kind: ContainerEndpoint, from: EndpointSources): Promise<{ contentType: string; text: string }> {
  if (kind === 'probes') return { contentType: EXPOSITION_TYPE, text: await from.probes() };
  let failed = false;
  const samples = await from.samples().catch(() => {
    failed = true;
    return [] as ContainerSample[];
  });
  if (kind === 'cadvisor') {
    const layout = await from.layout().catch(() => undefined);
    // cAdvisor's id is the cgroup's path; with readings from the engine's API, Docker's default.
    const cgroupOf = (id: string): string => `/${cgroupCandidates(layout?.driver ?? 'cgroupfs', id)[0] ?? id}`;
    return { contentType: EXPOSITION_TYPE, text: cadvisorMetrics(samples, { cgroupOf }) };
  }
  const node = await from.node().catch(() => {
    failed = true;
    return undefined;
  });
  const reading = node ? { time: node.cpu.time, usageCoreNanoSeconds: node.cpu.usageCoreNanoSeconds, workingSetBytes: node.memory.workingSetBytes } : undefined;
  return { contentType: EXPOSITION_TYPE, text: resourceMetrics(samples, reading, failed) };
}
