import { extrasV1, extrasV2 } from './cgroup-extras.js';
import { keyedNumbers, num, readIfThere, type ReadFile } from './cgroup-files.js';
import type { EngineStats } from './runtime-types.js';

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
const MEMORY_KEYS = new Set(['total_inactive_file', 'total_rss', 'total_cache', 'total_pgfault', 'total_pgmajfault', 'total_swap', 'inactive_file', 'anon', 'file', 'pgfault', 'pgmajfault']);

/** USER_HZ: cpuacct.stat counts in clock ticks (100 a second on every Linux podrun runs on). */
const TICK_NS = 10_000_000;

/**
 * One reading of a container's cgroup in the engine stats API's shape (so the Summary API, `top`
 * and the metrics read both alike). Undefined when the container has no cgroup here.
 */
export function readCgroup(layout: CgroupLayout, id: string, read: ReadFile = readIfThere, now: Date = new Date()): EngineStats | undefined {
  for (const rel of cgroupCandidates(layout.driver, id)) {
    const s = layout.version === 2 ? readV2(`${layout.root}/${rel}`, read) : readV1(layout.root, rel, read);
    if (s) return { read: now.toISOString(), source: 'cgroup', ...s };
  }
  return undefined;
}

function readV1(root: string, rel: string, read: ReadFile): Omit<EngineStats, 'read'> | undefined {
  const usage = num(read(`${root}/cpuacct/${rel}/cpuacct.usage`));
  if (usage === undefined) return undefined;
  const ticks = keyedNumbers(read(`${root}/cpuacct/${rel}/cpuacct.stat`));
  const memory = keyedNumbers(read(`${root}/memory/${rel}/memory.stat`), MEMORY_KEYS);
  const memUsage = num(read(`${root}/memory/${rel}/memory.usage_in_bytes`));
  const limit = num(read(`${root}/memory/${rel}/memory.limit_in_bytes`));
  const pids = num(read(`${root}/pids/${rel}/pids.current`));
  return {
    cpu_stats: {
      cpu_usage: {
        total_usage: usage,
        ...(ticks.user !== undefined ? { usage_in_usermode: ticks.user * TICK_NS } : {}),
        ...(ticks.system !== undefined ? { usage_in_kernelmode: ticks.system * TICK_NS } : {}),
      },
    },
    memory_stats: { ...(memUsage !== undefined ? { usage: memUsage } : {}), ...(limit !== undefined ? { limit } : {}), stats: memory },
    ...(pids !== undefined ? { pids_stats: { current: pids } } : {}),
    cgroup: extrasV1(root, rel, memory, read),
  };
}

function readV2(dir: string, read: ReadFile): Omit<EngineStats, 'read'> | undefined {
  const cpu = keyedNumbers(read(`${dir}/cpu.stat`));
  if (cpu.usage_usec === undefined) return undefined;
  const memory = keyedNumbers(read(`${dir}/memory.stat`), MEMORY_KEYS);
  const memUsage = num(read(`${dir}/memory.current`));
  const limit = num(read(`${dir}/memory.max`)); // "max" (no limit) reads as undefined
  const pids = num(read(`${dir}/pids.current`));
  return {
    cpu_stats: {
      cpu_usage: {
        total_usage: cpu.usage_usec * 1000,
        ...(cpu.user_usec !== undefined ? { usage_in_usermode: cpu.user_usec * 1000 } : {}),
        ...(cpu.system_usec !== undefined ? { usage_in_kernelmode: cpu.system_usec * 1000 } : {}),
      },
    },
    memory_stats: { ...(memUsage !== undefined ? { usage: memUsage } : {}), ...(limit !== undefined ? { limit } : {}), stats: memory },
    ...(pids !== undefined ? { pids_stats: { current: pids } } : {}),
    cgroup: extrasV2(dir, cpu, read),
  };
}

/**
 * A network namespace's counters from /proc/<pid>/net/dev of a process inside it, every
 * interface but loopback (as the engine's stats leave it out).
 */
export function netDev(text: string | undefined): NonNullable<EngineStats['networks']> | undefined {
  if (!text) return undefined;
  const out: NonNullable<EngineStats['networks']> = {};
  for (const line of text.split('\n').slice(2)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim();
    if (!name || name === 'lo') continue;
    const f = line.slice(colon + 1).trim().split(/\s+/).map(Number);
    if (f.length < 16 || f.some((x) => !Number.isFinite(x))) continue;
    out[name] = { rx_bytes: f[0]!, rx_packets: f[1]!, rx_errors: f[2]!, rx_dropped: f[3]!, tx_bytes: f[8]!, tx_packets: f[9]!, tx_errors: f[10]!, tx_dropped: f[11]! };
  }
  return out;
}
