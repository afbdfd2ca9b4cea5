/**
 * Pod and container resource usage in the shape of the kubelet's Summary API
 * (k8s.io/kubelet/pkg/apis/stats/v1alpha1, served at /stats/summary), so tools that read a
 * kubelet read podrun. Pure: built from engine samples, tested with plain data.
 */
import type { ContainerReading } from '../runtime/runtime-types.js';

export interface CpuStats {
  time: string;
  usageNanoCores?: number;
  usageCoreNanoSeconds: number;
}

export interface MemoryStats {
  time: string;
  availableBytes?: number;
  usageBytes: number;
  workingSetBytes: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

/** The Summary API's SwapStats. */
export interface SwapStats {
  time: string;
  swapAvailableBytes?: number;
  swapUsageBytes?: number;
}

export interface InterfaceStats {
  name: string;
  rxBytes: number;
  rxErrors: number;
  txBytes: number;
  txErrors: number;
}

export interface NetworkStats extends InterfaceStats {
  time: string;
  interfaces: InterfaceStats[];
}

export interface FsStats {
  time: string;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

export interface ContainerStatsV1 {
  name: string;
  startTime?: string;
  cpu: CpuStats;
  memory: MemoryStats;
  swap?: SwapStats;
  rootfs?: FsStats;
  logs?: FsStats;
}

export interface PodStatsV1 {
  podRef: { name: string; namespace: string; uid: string };
  startTime?: string;
  containers: ContainerStatsV1[];
  cpu: CpuStats;
  memory: MemoryStats;
  swap?: SwapStats;
  network?: NetworkStats;
  'ephemeral-storage'?: FsStats;
  process_stats: { process_count: number };
}

/** One reading of one container, with what is known of it. */
export interface ContainerSample {
  id: string;
  name: string;
  type: 'sandbox' | 'init' | 'app';
  pod: { name: string; namespace: string; uid: string };
  /** The image it runs and its name on the engine, for cAdvisor's labels. */
  image?: string;
  engineName?: string;
  startedAt?: string;
  stats: ContainerReading;
  /** The same container's previous reading, for rates. */
  previous?: ContainerReading;
  rootfsBytes?: number;
  logsBytes?: number;
}

export function cpuOf(stats: ContainerReading, previous?: ContainerReading): CpuStats {
  const total = stats.cpu.usageNs;
  const out: CpuStats = { time: stats.time, usageCoreNanoSeconds: total };
  // The caller's previous reading, or the one the engine took with this one.
  const prevTotal = previous?.cpu.usageNs ?? stats.earlier?.cpuUsageNs;
  const prevTime = previous?.time ?? stats.earlier?.time;
  if (prevTotal !== undefined && prevTime) {
    const seconds = (Date.parse(stats.time) - Date.parse(prevTime)) / 1000;
    if (seconds > 0 && total >= prevTotal) out.usageNanoCores = Math.round((total - prevTotal) / seconds);
  }
  return out;
}

/** Working set as cAdvisor and the kubelet count it (the reading's): usage less inactive file pages. */
export function memoryOf(stats: ContainerReading): MemoryStats {
  const m = stats.memory;
  const out: MemoryStats = { time: stats.time, usageBytes: m.usageBytes ?? 0, workingSetBytes: m.workingSetBytes };
  if (m.rssBytes !== undefined) out.rssBytes = m.rssBytes;
  if (m.pageFaults !== undefined) out.pageFaults = m.pageFaults;
  if (m.majorPageFaults !== undefined) out.majorPageFaults = m.majorPageFaults;
  return out;
}

export function networkOf(stats: ContainerReading): NetworkStats | undefined {
  const nets = Object.entries(stats.networks ?? {});
  if (!nets.length) return undefined;
  const interfaces = nets.map(([name, n]) => ({ name, rxBytes: n.rxBytes, rxErrors: n.rxErrors, txBytes: n.txBytes, txErrors: n.txErrors }));
  const main = interfaces.find((i) => i.name === 'eth0') ?? interfaces[0]!;
  return { time: stats.time, ...main, interfaces };
}

function sumCpu(parts: CpuStats[], time: string): CpuStats {
  const out: CpuStats = { time, usageCoreNanoSeconds: parts.reduce((n, c) => n + c.usageCoreNanoSeconds, 0) };
  if (parts.every((c) => c.usageNanoCores !== undefined)) out.usageNanoCores = parts.reduce((n, c) => n + (c.usageNanoCores ?? 0), 0);
  return out;
}

function sumMemory(parts: MemoryStats[], time: string): MemoryStats {
  const add = (k: 'usageBytes' | 'workingSetBytes' | 'rssBytes' | 'pageFaults' | 'majorPageFaults'): number => parts.reduce((n, m) => n + (m[k] ?? 0), 0);
  return {
    time,
    usageBytes: add('usageBytes'),
    workingSetBytes: add('workingSetBytes'),
    rssBytes: add('rssBytes'),
    pageFaults: add('pageFaults'),
    majorPageFaults: add('majorPageFaults'),
  };
}

/**
 * Pods from their containers' samples. The sandbox counts toward the pod's totals (its cgroup is
 * the pod's, as the kubelet's pod cgroup holds the pause process) and gives the pod's network;
 * it is not listed among the containers.
 */
export function podStats(samples: ContainerSample[]): PodStatsV1[] {
  const byPod = new Map<string, ContainerSample[]>();
  for (const s of samples) byPod.set(s.pod.uid, [...(byPod.get(s.pod.uid) ?? []), s]);
  const pods: PodStatsV1[] = [];
  for (const list of byPod.values()) {
    const first = list[0]!;
    const sandbox = list.find((s) => s.type === 'sandbox');
    const time = list
      .map((s) => s.stats.time)
      .sort()
      .at(-1)!;
    const containers: ContainerStatsV1[] = list
      .filter((s) => s.type !== 'sandbox')
      .map((s) => {
        const c: ContainerStatsV1 = { name: s.name, cpu: cpuOf(s.stats, s.previous), memory: memoryOf(s.stats) };
        if (s.startedAt) c.startTime = s.startedAt;
        if (s.stats.cgroup?.swapBytes !== undefined) c.swap = { time: s.stats.time, swapUsageBytes: s.stats.cgroup.swapBytes };
        if (s.rootfsBytes !== undefined) c.rootfs = { time: s.stats.time, usedBytes: s.rootfsBytes };
        if (s.logsBytes !== undefined) c.logs = { time: s.stats.time, usedBytes: s.logsBytes };
        return c;
      })
      .sort((a, b) => a.name.localeCompare(b.name));
    const pod: PodStatsV1 = {
      podRef: first.pod,
      containers,
      cpu: sumCpu(
        list.map((s) => cpuOf(s.stats, s.previous)),
        time,
      ),
      memory: sumMemory(
        list.map((s) => memoryOf(s.stats)),
        time,
      ),
      process_stats: { process_count: list.reduce((n, s) => n + (s.stats.processes ?? 0), 0) },
    };
    if (sandbox?.startedAt) pod.startTime = sandbox.startedAt;
    // The kubelet's pod swap is its pod cgroup's: here the sum of its containers', each read.
    if (list.every((s) => s.stats.cgroup?.swapBytes !== undefined))
      pod.swap = { time, swapUsageBytes: list.reduce((n, s) => n + (s.stats.cgroup?.swapBytes ?? 0), 0) };
    const net = sandbox ? networkOf(sandbox.stats) : undefined;
    if (net) pod.network = net;
    const disk = list.reduce((n, s) => n + (s.rootfsBytes ?? 0) + (s.logsBytes ?? 0), 0);
    if (list.some((s) => s.rootfsBytes !== undefined || s.logsBytes !== undefined)) pod['ephemeral-storage'] = { time, usedBytes: disk };
    pods.push(pod);
  }
  return pods.sort((a, b) => `${a.podRef.namespace}/${a.podRef.name}`.localeCompare(`${b.podRef.namespace}/${b.podRef.name}`));
}

/** kubectl top's units: millicores ("12m") and binary bytes ("3Mi"). */
export function formatCpu(nanoCores: number | undefined): string {
  return nanoCores === undefined ? '<unknown>' : `${Math.round(nanoCores / 1e6)}m`;
}

export function formatMemory(bytes: number): string {
  return `${Math.round(bytes / 2 ** 20)}Mi`;
}
