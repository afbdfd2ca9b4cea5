/**
 * The node, in the shapes the kubelet serves it: a v1 Node (what `kubectl get node` shows, with
 * addresses, capacity, node info and conditions) and the node part of the Summary API.
 */
import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import type { PodEngine } from '../runtime/roles.js';
import { fsUsage, hostUsage, nodeConditions, observations, setExpiryCondition, pidUsage, type NodeCondition, type Signal, type Threshold } from './node.js';
import type { MachineFacts } from './cadvisor-series.js';
import type { CpuStats, FsStats, MemoryStats, SwapStats } from './summary.js';

/** The kubelet's default --max-pods: what the node says it holds. */
export const MAX_PODS = 110;

export interface NodeSummary {
  nodeName: string;
  startTime: string;
  cpu: CpuStats;
  memory: MemoryStats;
  swap?: SwapStats;
  fs?: FsStats;
  runtime: { imageFs?: FsStats };
  rlimit: { time: string; maxpid: number; curproc: number };
}

export interface NodeView {
  node: Record<string, unknown>;
  summary: NodeSummary;
  conditions: NodeCondition[];
  /** cAdvisor's machine series' figures. */
  machine: MachineFacts;
}

type Facts = Awaited<ReturnType<PodEngine['engineFacts']>>;

function firstLine(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '';
  }
}

function osImage(): string {
  try {
    return /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? 'Linux';
  } catch {
    return 'Linux';
  }
}

const GOARCH: Record<string, string> = { x86_64: 'amd64', aarch64: 'arm64', armv7l: 'arm' };

export interface NodeInputs {
  rt: PodEngine;
  facts: Facts | undefined;
  stateDir: string;
  engineUp: boolean;
  thresholds: ReadonlyMap<Signal, Threshold>;
  previous?: readonly NodeCondition[];
  startTime: string;
  podrunVersion: string;
  pods: number;
  /** The node's previous CPU reading, for its rate. */
  previousCpu?: CpuStats;
  /** With signed sources that carry expiries: each set in force's expiry (the ManifestSetExpired condition). */
  setExpiries?: readonly { origin: string; expires: Date }[];
}

export function nodeView(i: NodeInputs): NodeView {
  const now = new Date().toISOString();
  const host = hostUsage(now);
  const prev = i.previousCpu;
  if (prev) {
    const seconds = (Date.parse(now) - Date.parse(prev.time)) / 1000;
    if (seconds > 0 && host.cpu.usageCoreNanoSeconds >= prev.usageCoreNanoSeconds)
      host.cpu.usageNanoCores = Math.round((host.cpu.usageCoreNanoSeconds - prev.usageCoreNanoSeconds) / seconds);
  }
  const nodefs = fsUsage(i.stateDir, now);
  const imagefs = i.facts ? fsUsage(i.facts.rootDir, now) : undefined;
  const pids = pidUsage();
  const conditions = nodeConditions(
    observations(host.memory, host.capacityBytes, nodefs, imagefs, pids),
    i.thresholds,
    i.engineUp,
    now,
    i.previous,
    i.setExpiries ? [setExpiryCondition(i.setExpiries, Date.parse(now))] : [],
  );
  const name = i.rt.nodeName;
  const cpus = i.facts?.cpus ?? 0;
  const ki = (bytes: number): string => `${Math.floor(bytes / 1024)}Ki`;
  const capacity: Record<string, string> = {
    cpu: String(cpus),
    memory: ki(host.capacityBytes),
    pods: String(MAX_PODS),
    ...(nodefs?.capacityBytes ? { 'ephemeral-storage': ki(nodefs.capacityBytes) } : {}),
  };
  const node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': hostname(),
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': GOARCH[i.facts?.architecture ?? ''] ?? i.facts?.architecture ?? '',
      },
      annotations: { 'podrun.io/pods': String(i.pods) },
      creationTimestamp: i.startTime,
    },
    status: {
      capacity,
      // No reservations (--kube-reserved and the like): allocatable is the capacity.
      allocatable: capacity,
      conditions,
      addresses: [
        { type: 'InternalIP', address: i.rt.hostIP },
        { type: 'Hostname', address: hostname() },
      ],
      nodeInfo: {
        machineID: firstLine('/etc/machine-id'),
        bootID: firstLine('/proc/sys/kernel/random/boot_id'),
        kernelVersion: i.facts?.kernelVersion ?? '',
        osImage: osImage(),
        containerRuntimeVersion: i.facts ? `${i.rt.runtimeName}://${i.facts.version}` : '',
        kubeletVersion: `podrun/${i.podrunVersion}`,
        operatingSystem: 'linux',
        architecture: GOARCH[i.facts?.architecture ?? ''] ?? i.facts?.architecture ?? '',
      },
    },
  };
  const summary: NodeSummary = {
    nodeName: name,
    startTime: i.startTime,
    cpu: host.cpu,
    memory: host.memory,
    ...(host.swap ? { swap: host.swap } : {}),
    ...(nodefs ? { fs: nodefs } : {}),
    runtime: imagefs ? { imageFs: imagefs } : {},
    rlimit: { time: now, ...pids },
  };
  const machine: MachineFacts = {
    cores: cpus,
    memoryBytes: host.capacityBytes,
    machineId: firstLine('/etc/machine-id'),
    systemUuid: firstLine('/sys/class/dmi/id/product_uuid'),
    bootId: firstLine('/proc/sys/kernel/random/boot_id'),
  };
  return { node, summary, conditions, machine };
}
