import { cadvisorMetrics, EXPOSITION_TYPE, resourceMetrics } from '../stats/container-metrics.js';
import type { MachineFacts } from '../stats/cadvisor-series.js';
import type { NodeSummary } from '../stats/node-view.js';
import type { ContainerSample } from '../stats/summary.js';
import { localDeviceOf } from '../stats/fs-device.js';
import type { EngineReadings } from '../runtime/roles.js';

export type ContainerEndpoint = 'cadvisor' | 'resource' | 'probes';

export interface EndpointSources {
  samples(): Promise<ContainerSample[]>;
  node(): Promise<NodeSummary>;
  /** cAdvisor's id of each container (its cgroup's path), as the engine names them. */
  cgroups(): Promise<(id: string) => string>;
  probes(): Promise<string>;
  /** The device under the engine's root directory, when the engine is on this machine. */
  fsDevice(): Promise<string | undefined>;
  /** The machine's cores and memory, for cAdvisor's machine series. */
  machine?(): Promise<MachineFacts | undefined>;
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
    const cgroupOf = await from.cgroups().catch(() => (id: string) => `/${id}`);
    const fsDevice = await from.fsDevice().catch(() => undefined);
    const machine = await from.machine?.().catch(() => undefined);
    return { contentType: EXPOSITION_TYPE, text: cadvisorMetrics(samples, { cgroupOf, ...(fsDevice ? { fsDevice } : {}), ...(machine ? { machine } : {}) }) };
  }
  const node = await from.node().catch(() => {
    failed = true;
    return undefined;
  });
  const reading = node
    ? {
        time: node.cpu.time,
        usageCoreNanoSeconds: node.cpu.usageCoreNanoSeconds,
        workingSetBytes: node.memory.workingSetBytes,
        ...(node.swap?.swapUsageBytes !== undefined ? { swapUsageBytes: node.swap.swapUsageBytes } : {}),
      }
    : undefined;
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
