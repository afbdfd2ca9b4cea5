/**
 * The node as the kubelet reports it: resource usage from the host (root cgroup, /proc, statfs),
 * the eviction signals the kubelet computes (pkg/kubelet/eviction/helpers.go: memory.available,
 * nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available),
 * and the node conditions they decide, against thresholds in the kubelet's --eviction-hard form.
 */
import { readdirSync, readFileSync, statfsSync } from 'node:fs';
import { parseQuantity } from '../manifest/quantity.js';
import type { CpuStats, FsStats, MemoryStats, SwapStats } from './summary.js';

export type Signal = 'memory.available' | 'nodefs.available' | 'nodefs.inodesFree' | 'imagefs.available' | 'imagefs.inodesFree' | 'pid.available';

export const SIGNALS: readonly Signal[] = [
  'memory.available',
  'nodefs.available',
  'nodefs.inodesFree',
  'imagefs.available',
  'imagefs.inodesFree',
  'pid.available',
];

/** A threshold: an absolute quantity, or a percentage of the signal's capacity. */
export type Threshold = { quantity: number } | { percent: number };

/** The kubelet's default --eviction-hard on Linux. */
export const DEFAULT_EVICTION_HARD = 'memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,imagefs.inodesFree<5%';

/** Parses `memory.available<100Mi,nodefs.available<10%` as the kubelet does; throws naming the bad part. */
export function parseEvictionThresholds(text: string): Map<Signal, Threshold> {
  const out = new Map<Signal, Threshold>();
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([a-zA-Z.]+)<(.+)$/.exec(part);
    if (!m) throw new Error(`invalid eviction threshold "${part}" (use e.g. memory.available<100Mi or nodefs.available<10%)`);
    const signal = m[1] as Signal;
    if (!SIGNALS.includes(signal)) throw new Error(`unknown eviction signal "${m[1]}" (known: ${SIGNALS.join(', ')})`);
    const value = m[2]!;
    if (value.endsWith('%')) {
      const percent = Number(value.slice(0, -1));
      if (!Number.isFinite(percent) || percent < 0 || percent > 100) throw new Error(`invalid percentage in "${part}"`);
      out.set(signal, { percent });
    } else {
      let quantity: number;
      try {
        quantity = parseQuantity(value);
      } catch {
        throw new Error(`invalid quantity in "${part}" (use e.g. 100Mi, 1Gi or a percentage)`);
      }
      out.set(signal, { quantity });
    }
  }
  return out;
}

/** What each signal observes now: available and its capacity (for percentages). */
export type Observations = Partial<Record<Signal, { available: number; capacity: number }>>;

export interface NodeCondition {
  type: 'Ready' | 'MemoryPressure' | 'DiskPressure' | 'PIDPressure' | 'ManifestSetExpired';
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastHeartbeatTime: string;
  lastTransitionTime: string;
}

function crossed(o: { available: number; capacity: number } | undefined, t: Threshold | undefined): boolean {
  if (!o || !t) return false;
  const limit = 'quantity' in t ? t.quantity : (t.percent / 100) * o.capacity;
  return o.available < limit;
}

/**
 * The kubelet's node conditions (its setters in pkg/kubelet/nodestatus), from the signals and the
 * thresholds. `previous` keeps lastTransitionTime when a status did not change.
 */
/**
 * A signed set in force whose expiry has passed keeps running (a clock never takes pods down), and
 * the node says so, so a frozen mirror is noticed: podrun's own condition, beside the kubelet's.
 */
export function setExpiryCondition(
  expiries: readonly { origin: string; expires: Date }[],
  nowMs: number,
): Omit<NodeCondition, 'lastHeartbeatTime' | 'lastTransitionTime'> {
  const expired = expiries.filter((e) => e.expires.getTime() <= nowMs);
  return expired.length
    ? {
        type: 'ManifestSetExpired',
        status: 'True',
        reason: 'ManifestSetExpired',
        message: `signed set in force has expired, still running it: ${expired.map((e) => `${e.origin} (expired ${e.expires.toISOString()})`).join(', ')}`,
      }
    : { type: 'ManifestSetExpired', status: 'False', reason: 'ManifestSetsFresh', message: 'no signed set in force has expired' };
}

export function nodeConditions(
  obs: Observations,
  thresholds: ReadonlyMap<Signal, Threshold>,
  engineUp: boolean,
  now: string,
  previous: readonly NodeCondition[] = [],
  extra: Omit<NodeCondition, 'lastHeartbeatTime' | 'lastTransitionTime'>[] = [],
): NodeCondition[] {
  const hit = (signals: Signal[]): Signal[] => signals.filter((s) => crossed(obs[s], thresholds.get(s)));
  const memory = hit(['memory.available']);
  const disk = hit(['nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree']);
  const pid = hit(['pid.available']);
  const made: Omit<NodeCondition, 'lastHeartbeatTime' | 'lastTransitionTime'>[] = [
    engineUp
      ? { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'podrun is posting ready status' }
      : { type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: 'container runtime is down: the Docker engine cannot be reached' },
    memory.length
      ? {
          type: 'MemoryPressure',
          status: 'True',
          reason: 'KubeletHasInsufficientMemory',
          message: `node has insufficient memory available (${memory.join(', ')} below its threshold)`,
        }
      : { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: 'node has sufficient memory available' },
    disk.length
      ? { type: 'DiskPressure', status: 'True', reason: 'KubeletHasDiskPressure', message: `node has disk pressure (${disk.join(', ')} below its threshold)` }
      : { type: 'DiskPressure', status: 'False', reason: 'KubeletHasNoDiskPressure', message: 'node has no disk pressure' },
    pid.length
      ? { type: 'PIDPressure', status: 'True', reason: 'KubeletHasInsufficientPID', message: 'node has insufficient PID available' }
      : { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID', message: 'node has sufficient PID available' },
    ...extra,
  ];
  return made.map((c) => {
    const before = previous.find((p) => p.type === c.type);
    return { ...c, lastHeartbeatTime: now, lastTransitionTime: before && before.status === c.status ? before.lastTransitionTime : now };
  });
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function statLine(text: string | undefined, key: string): number | undefined {
  const m = text ? new RegExp(`^${key} (\\d+)$`, 'm').exec(text) : null;
  return m ? Number(m[1]) : undefined;
}

/** The host's CPU and memory, from the root cgroup (v1 or v2) as cAdvisor reads them, else /proc. */
export function hostUsage(now: string): { cpu: CpuStats; memory: MemoryStats; capacityBytes: number; swap?: SwapStats } {
  const meminfo = read('/proc/meminfo') ?? '';
  const kb = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+) kB$`, 'm').exec(meminfo)?.[1] ?? 0) * 1024;
  const capacity = kb('MemTotal');
  let cpuNs = Number(read('/sys/fs/cgroup/cpuacct/cpuacct.usage')?.trim() ?? NaN);
  if (!Number.isFinite(cpuNs)) {
    const usec = statLine(read('/sys/fs/cgroup/cpu.stat'), 'usage_usec');
    if (usec !== undefined) cpuNs = usec * 1000;
  }
  if (!Number.isFinite(cpuNs)) {
    const f = (read('/proc/stat') ?? '').split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
    // user nice system idle iowait irq softirq steal: busy time, in USER_HZ (100 per second).
    cpuNs = ((f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0)) * 1e7;
  }
  const v1 = read('/sys/fs/cgroup/memory/memory.usage_in_bytes');
  let usage: number;
  let inactiveFile: number;
  if (v1 !== undefined) {
    usage = Number(v1.trim());
    inactiveFile = statLine(read('/sys/fs/cgroup/memory/memory.stat'), 'total_inactive_file') ?? 0;
  } else {
    // cgroup v2's root has no memory.current: the kernel's own accounting stands in.
    usage = capacity - kb('MemFree');
    inactiveFile = kb('Inactive\\(file\\)');
  }
  const workingSet = Math.max(0, usage - inactiveFile);
  // The kernel's swap accounting (a node without swap: 0 of 0, which is what it is).
  const swapTotal = /^SwapTotal:/m.test(meminfo) ? kb('SwapTotal') : undefined;
  return {
    cpu: { time: now, usageCoreNanoSeconds: cpuNs },
    memory: { time: now, availableBytes: Math.max(0, capacity - workingSet), usageBytes: usage, workingSetBytes: workingSet },
    capacityBytes: capacity,
    ...(swapTotal !== undefined ? { swap: { time: now, swapAvailableBytes: kb('SwapFree'), swapUsageBytes: Math.max(0, swapTotal - kb('SwapFree')) } } : {}),
  };
}

/** A filesystem's usage, or undefined when the path cannot be seen from here (a remote engine). */
export function fsUsage(path: string, now: string): FsStats | undefined {
  try {
    const s = statfsSync(path);
    return {
      time: now,
      capacityBytes: s.blocks * s.bsize,
      availableBytes: s.bavail * s.bsize,
      usedBytes: (s.blocks - s.bfree) * s.bsize,
      inodes: s.files,
      inodesFree: s.ffree,
      inodesUsed: s.files - s.ffree,
    };
  } catch {
    return undefined;
  }
}

/** pid_max and the processes running now: pid.available is their difference. */
export function pidUsage(): { maxpid: number; curproc: number } {
  const maxpid = Number(read('/proc/sys/kernel/pid_max')?.trim() ?? 0);
  let curproc = 0;
  try {
    for (const e of readdirSync('/proc')) if (/^\d+$/.test(e)) curproc++;
  } catch {
    // no /proc: leave 0
  }
  return { maxpid, curproc };
}

export function observations(
  memory: MemoryStats,
  capacityBytes: number,
  nodefs: FsStats | undefined,
  imagefs: FsStats | undefined,
  pids: { maxpid: number; curproc: number },
): Observations {
  const obs: Observations = { 'memory.available': { available: memory.availableBytes ?? 0, capacity: capacityBytes } };
  if (nodefs) {
    obs['nodefs.available'] = { available: nodefs.availableBytes ?? 0, capacity: nodefs.capacityBytes ?? 0 };
    obs['nodefs.inodesFree'] = { available: nodefs.inodesFree ?? 0, capacity: nodefs.inodes ?? 0 };
  }
  const img = imagefs ?? nodefs;
  if (img) {
    obs['imagefs.available'] = { available: img.availableBytes ?? 0, capacity: img.capacityBytes ?? 0 };
    obs['imagefs.inodesFree'] = { available: img.inodesFree ?? 0, capacity: img.inodes ?? 0 };
  }
  if (pids.maxpid) obs['pid.available'] = { available: pids.maxpid - pids.curproc, capacity: pids.maxpid };
  return obs;
}
