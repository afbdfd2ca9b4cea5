import { extrasV1, extrasV2 } from './cgroup-extras.js';
import { keyedNumbers, num, readIfThere, type ReadFile } from './cgroup-files.js';
import type { ContainerReading, InterfaceCounters } from './runtime-types.js';

export { keyedNumbers, readIfThere, type ReadFile };

// A container's counters read straight from cgroupfs, as cAdvisor reads them: a few small files
// per container (microseconds) instead of one engine stats call (the engine reads the same files,
// then waits for its collector's tick and serialises the answer). Pure but for the file reads,
// which a test hands in from a recorded tree.

export interface CgroupLayout {
  version: 1 | 2;
  /** The engine's cgroup driver: where it puts a container's cgroup. */
  driver: 'cgroupfs' | 'systemd';
  /** Where cgroupfs is mounted (/sys/fs/cgroup). */
  root: string;
}

/**
 * The container's cgroup, relative to a hierarchy's root, for each place an engine puts one:
 * Docker (cgroupfs: docker/<id>; systemd: system.slice/docker-<id>.scope) and Podman
 * (libpod_parent/libpod-<id>; machine.slice/libpod-<id>.scope).
 */
export function cgroupCandidates(driver: CgroupLayout['driver'], id: string): string[] {
  return driver === 'systemd' ? [`system.slice/docker-${id}.scope`, `machine.slice/libpod-${id}.scope`] : [`docker/${id}`, `libpod_parent/libpod-${id}`];
}

/** What the readings use of memory.stat (v1's hierarchical totals and v2's names); a reading is kept a period or two per container, so the rest is not. */
const MEMORY_KEYS = new Set([
  'total_inactive_file',
  'total_rss',
  'total_cache',
  'total_pgfault',
  'total_pgmajfault',
  'total_swap',
  'inactive_file',
  'anon',
  'file',
  'pgfault',
  'pgmajfault',
]);

/** USER_HZ: cpuacct.stat counts in clock ticks (100 a second on every Linux podrun runs on). */
const TICK_NS = 10_000_000;

/**
 * The memory figures of a cgroup from its usage, limit and memory.stat (v1's hierarchical totals
 * first, then v2's names), as cAdvisor counts them: the working set is usage less inactive file
 * pages. The engine's stats API passes memory.stat on under the same names.
 */
export function memoryReading(usage: number | undefined, limit: number | undefined, stat: Record<string, number> | undefined): ContainerReading['memory'] {
  const pick = (v1: string, v2: string): number | undefined => stat?.[v1] ?? stat?.[v2];
  const out: ContainerReading['memory'] = { workingSetBytes: Math.max(0, (usage ?? 0) - (pick('total_inactive_file', 'inactive_file') ?? 0)) };
  const rss = pick('total_rss', 'anon');
  const cache = pick('total_cache', 'file');
  const faults = pick('total_pgfault', 'pgfault');
  const major = pick('total_pgmajfault', 'pgmajfault');
  if (usage !== undefined) out.usageBytes = usage;
  if (limit !== undefined) out.limitBytes = limit;
  if (rss !== undefined) out.rssBytes = rss;
  if (cache !== undefined) out.cacheBytes = cache;
  if (faults !== undefined) out.pageFaults = faults;
  if (major !== undefined) out.majorPageFaults = major;
  return out;
}

/**
 * One reading of a container's cgroup (the Summary API, `top` and the metrics read it as they
 * read an engine's). Undefined when the container has no cgroup here.
 */
export function readCgroup(layout: CgroupLayout, id: string, read: ReadFile = readIfThere, now: Date = new Date()): ContainerReading | undefined {
  for (const rel of cgroupCandidates(layout.driver, id)) {
    const s = readCgroupAt(layout, rel, read, now);
    if (s) return s;
  }
  return undefined;
}

/** One reading of the cgroup at `rel` (relative to a hierarchy's root), where the runtime said it put the container. */
export function readCgroupAt(layout: CgroupLayout, rel: string, read: ReadFile = readIfThere, now: Date = new Date()): ContainerReading | undefined {
  const s = layout.version === 2 ? readV2(`${layout.root}/${rel}`, read) : readV1(layout.root, rel, read);
  return s ? { time: now.toISOString(), source: 'cgroup', ...s } : undefined;
}

function readV1(root: string, rel: string, read: ReadFile): Omit<ContainerReading, 'time'> | undefined {
  const usage = num(read(`${root}/cpuacct/${rel}/cpuacct.usage`));
  if (usage === undefined) return undefined;
  const ticks = keyedNumbers(read(`${root}/cpuacct/${rel}/cpuacct.stat`));
  const memory = keyedNumbers(read(`${root}/memory/${rel}/memory.stat`), MEMORY_KEYS);
  const memUsage = num(read(`${root}/memory/${rel}/memory.usage_in_bytes`));
  const limit = num(read(`${root}/memory/${rel}/memory.limit_in_bytes`));
  const pids = num(read(`${root}/pids/${rel}/pids.current`));
  return {
    cpu: {
      usageNs: usage,
      ...(ticks.user !== undefined ? { userNs: ticks.user * TICK_NS } : {}),
      ...(ticks.system !== undefined ? { systemNs: ticks.system * TICK_NS } : {}),
    },
    memory: memoryReading(memUsage, limit, memory),
    ...(pids !== undefined ? { processes: pids } : {}),
    cgroup: extrasV1(root, rel, memory, read),
  };
}

function readV2(dir: string, read: ReadFile): Omit<ContainerReading, 'time'> | undefined {
  const cpu = keyedNumbers(read(`${dir}/cpu.stat`));
  if (cpu.usage_usec === undefined) return undefined;
  const memory = keyedNumbers(read(`${dir}/memory.stat`), MEMORY_KEYS);
  const memUsage = num(read(`${dir}/memory.current`));
  const limit = num(read(`${dir}/memory.max`)); // "max" (no limit) reads as undefined
  const pids = num(read(`${dir}/pids.current`));
  return {
    cpu: {
      usageNs: cpu.usage_usec * 1000,
      ...(cpu.user_usec !== undefined ? { userNs: cpu.user_usec * 1000 } : {}),
      ...(cpu.system_usec !== undefined ? { systemNs: cpu.system_usec * 1000 } : {}),
    },
    memory: memoryReading(memUsage, limit, memory),
    ...(pids !== undefined ? { processes: pids } : {}),
    cgroup: extrasV2(dir, cpu, read),
  };
}

/**
 * A network namespace's counters from /proc/<pid>/net/dev of a process inside it, every
 * interface but loopback (as the engine's stats leave it out).
 */
export function netDev(text: string | undefined): Record<string, InterfaceCounters> | undefined {
  if (!text) return undefined;
  const out: Record<string, InterfaceCounters> = {};
  for (const line of text.split('\n').slice(2)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim();
    if (!name || name === 'lo') continue;
    const f = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/)
      .map(Number);
    if (f.length < 16 || f.some((x) => !Number.isFinite(x))) continue;
    out[name] = { rxBytes: f[0]!, rxPackets: f[1]!, rxErrors: f[2]!, rxDropped: f[3]!, txBytes: f[8]!, txPackets: f[9]!, txErrors: f[10]!, txDropped: f[11]! };
  }
  return out;
}
