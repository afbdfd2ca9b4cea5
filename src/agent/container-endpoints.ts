import type { CgroupLayout } from '../runtime/cgroup-stats.js';
import { cgroupCandidates } from '../runtime/cgroup-stats.js';
import { cadvisorMetrics, EXPOSITION_TYPE, resourceMetrics } from '../stats/container-metrics.js';
import type { NodeSummary } from '../stats/node-view.js';
import type { ContainerSample } from '../stats/summary.js';
import { localDeviceOf } from '../stats/fs-device.js';
import type { EngineReadings } from '../runtime/roles.js';

export type ContainerEndpoint = 'cadvisor' | 'resource' | 'probes';

export interface EndpointSources {
  samples(): Promise<ContainerSample[]>;
  node(): Promise<NodeSummary>;
  layout(): Promise<CgroupLayout | undefined>;
  probes(): Promise<string>;
  /** The device under the engine's root directory, when the engine is on this machine. */
  fsDevice(): Promise<string | undefined>;
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
    const fsDevice = await from.fsDevice().catch(() => undefined);
    return { contentType: EXPOSITION_TYPE, text: cadvisorMetrics(samples, { cgroupOf, ...(fsDevice ? { fsDevice } : {}) }) };
  }
  const node = await from.node().catch(() => {
    failed = true;
    return undefined;
  });
  const reading = node ? { time: node.cpu.time, usageCoreNanoSeconds: node.cpu.usageCoreNanoSeconds, workingSetBytes: node.memory.workingSetBytes } : undefined;
  return { contentType: EXPOSITION_TYPE, text: resourceMetrics(samples, reading, failed) };
}

const devices = new WeakMap<object, Promise<string | undefined>>();

/** The device under a local engine's root directory, asked once per engine; none for a remote engine. */
export function engineDevice(rt: Pick<EngineReadings, 'cgroupLayout' | 'engineFacts'>): Promise<string | undefined> {
  let d = devices.get(rt);
  if (!d) {
    d = (async () => ((await rt.cgroupLayout()) ? localDeviceOf((await rt.engineFacts()).rootDir) : undefined))().catch(() => undefined);
    devices.set(rt, d);
  }
  return d;
}
