import { keyedNumbers, num, readSetting, type ReadFile } from './cgroup-files.js';

// The cgroup counters and settings dashboards read beyond CPU and memory usage, as cAdvisor reads
// them (its container/libcontainer handler over runc's cgroup readers): CFS throttling, the CPU
// settings, swap, the memory limit's hits, OOM kills, block IO by device, processes and threads.
// A file that is not there (a controller off, swap accounting off, an older kernel) leaves its
// figure undefined, so its series is absent rather than a zero nobody measured.

/** Block IO of one device: bytes and operations completed, each way. */
export interface IoDevice {
  /** The device's node (/dev/vda), or /dev/block/<major>:<minor> when sysfs does not name it. */
  device: string;
  readBytes?: number;
  writeBytes?: number;
  reads?: number;
  writes?: number;
}

export interface CgroupExtras {
  /** CFS bandwidth control: periods elapsed and throttled, and time throttled (ns). */
  cfs?: { periods: number; throttledPeriods: number; throttledNs: number };
  /** cpu quota and period in µs (no quota: undefined), and shares (v2: from cpu.weight, as cAdvisor converts it). */
  cpuQuotaUs?: number;
  cpuPeriodUs?: number;
  cpuShares?: number;
  /** Swap in use (v1: memory.stat's total_swap, with swap accounting on; v2: memory.swap.current). */
  swapBytes?: number;
  /** Times usage hit the memory limit (v1: memory.failcnt; v2: memory.events' max, as runc reads it). */
  failcnt?: number;
  /** Processes the kernel killed here for memory (memory.oom_control's or memory.events' oom_kill). */
  oomKills?: number;
  io?: IoDevice[];
  /** Processes (cgroup.procs) and the tasks limit (pids.max; 0 = none, as cAdvisor says it). Tasks are pids_stats.current. */
  processes?: number;
  threadsMax?: number;
  /** The processes' pids, for the reader of their /proc entries (not a series). */
  pids?: number[];
}

/** `max` (no limit) as cAdvisor reports it: 0. */
function maxOrNum(text: string | undefined): number | undefined {
  return text?.trim() === 'max' ? 0 : num(text);
}

function pidsOf(text: string | undefined): number[] | undefined {
  if (text === undefined) return undefined;
  return text
    .split('\n')
    .filter((l) => /^\d+$/.test(l.trim()))
    .map(Number);
}

/** Device numbers name no device on their own; sysfs's uevent does, and never changes while the device lives. */
const deviceNames = new Map<string, string>();
const DEVICE_NAMES_MAX = 1024;

export function deviceName(majMin: string, read: ReadFile): string {
  const known = deviceNames.get(majMin);
  if (known) return known;
  const uevent = read(`/sys/dev/block/${majMin}/uevent`);
  const m = uevent ? /^DEVNAME=(.+)$/m.exec(uevent) : null;
  const name = m ? `/dev/${m[1]!.trim()}` : `/dev/block/${majMin}`;
  if (deviceNames.size >= DEVICE_NAMES_MAX) deviceNames.clear();
  deviceNames.set(majMin, name);
  return name;
}

/** v1's blkio.throttle.io_service_bytes / io_serviced lines: `8:0 Read 1234`. */
function blkioV1(bytes: string | undefined, ops: string | undefined, read: ReadFile): IoDevice[] | undefined {
  if (bytes === undefined && ops === undefined) return undefined;
  const by = new Map<string, IoDevice>();
  const take = (text: string | undefined, r: 'readBytes' | 'reads', w: 'writeBytes' | 'writes'): void => {
    for (const line of (text ?? '').split('\n')) {
      const [dev, op, v] = line.trim().split(/\s+/);
      if (!dev || !/^\d+:\d+$/.test(dev) || !v || !/^\d+$/.test(v) || (op !== 'Read' && op !== 'Write')) continue;
      let d = by.get(dev);
      if (!d) by.set(dev, (d = { device: deviceName(dev, read) }));
      d[op === 'Read' ? r : w] = Number(v);
    }
  };
  take(bytes, 'readBytes', 'writeBytes');
  take(ops, 'reads', 'writes');
  return [...by.values()];
}

/** v2's io.stat lines: `8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0`. */
function ioStatV2(text: string | undefined, read: ReadFile): IoDevice[] | undefined {
  if (text === undefined) return undefined;
  const out: IoDevice[] = [];
  for (const line of text.split('\n')) {
    const [dev, ...kv] = line.trim().split(/\s+/);
    if (!dev || !/^\d+:\d+$/.test(dev)) continue;
    const f: Record<string, number> = {};
    for (const p of kv) {
      const [k, v] = p.split('=');
      if (k && v && /^\d+$/.test(v)) f[k] = Number(v);
    }
    const d: IoDevice = { device: deviceName(dev, read) };
    if (f.rbytes !== undefined) d.readBytes = f.rbytes;
    if (f.wbytes !== undefined) d.writeBytes = f.wbytes;
    if (f.rios !== undefined) d.reads = f.rios;
    if (f.wios !== undefined) d.writes = f.wios;
    out.push(d);
  }
  return out;
}

function cfsOf(stat: Record<string, number>, throttledNs: number | undefined): CgroupExtras['cfs'] {
  const periods = stat.nr_periods;
  const throttled = stat.nr_throttled;
  return periods === undefined || throttled === undefined || throttledNs === undefined ? undefined : { periods, throttledPeriods: throttled, throttledNs };
}

/** Drops the undefined figures, so a reading carries only what was read. */
function defined(x: CgroupExtras): CgroupExtras {
  return Object.fromEntries(Object.entries(x).filter(([, v]) => v !== undefined)) as CgroupExtras;
}

/** cgroup v1: each controller's hierarchy under `root`, the container at `rel` in each. */
export function extrasV1(root: string, rel: string, memoryStat: Record<string, number>, read: ReadFile): CgroupExtras {
  const cpu = keyedNumbers(read(`${root}/cpu/${rel}/cpu.stat`));
  const quota = readSetting(read, `${root}/cpu/${rel}/cpu.cfs_quota_us`)?.trim();
  const oom = keyedNumbers(read(`${root}/memory/${rel}/memory.oom_control`));
  const pids = pidsOf(read(`${root}/pids/${rel}/cgroup.procs`) ?? read(`${root}/cpuacct/${rel}/cgroup.procs`));
  return defined({
    cfs: cfsOf(cpu, cpu.throttled_time),
    // -1: no quota (cAdvisor reads it as 0 and leaves the quota and the CFS series out).
    cpuQuotaUs: quota && /^\d+$/.test(quota) && quota !== '0' ? Number(quota) : undefined,
    cpuPeriodUs: num(readSetting(read, `${root}/cpu/${rel}/cpu.cfs_period_us`)),
    cpuShares: num(readSetting(read, `${root}/cpu/${rel}/cpu.shares`)),
    swapBytes: memoryStat.total_swap,
    failcnt: num(read(`${root}/memory/${rel}/memory.failcnt`)),
    oomKills: oom.oom_kill,
    io: blkioV1(
      read(`${root}/blkio/${rel}/blkio.throttle.io_service_bytes_recursive`),
      read(`${root}/blkio/${rel}/blkio.throttle.io_serviced_recursive`),
      read,
    ),
    processes: pids?.length,
    threadsMax: maxOrNum(readSetting(read, `${root}/pids/${rel}/pids.max`)),
    pids,
  });
}

/** cgroup v2: one directory holds every controller's files. */
export function extrasV2(dir: string, cpu: Record<string, number>, read: ReadFile): CgroupExtras {
  const max = readSetting(read, `${dir}/cpu.max`)?.trim().split(/\s+/);
  const weight = num(readSetting(read, `${dir}/cpu.weight`));
  const events = keyedNumbers(read(`${dir}/memory.events`));
  const pids = pidsOf(read(`${dir}/cgroup.procs`));
  return defined({
    cfs: cfsOf(cpu, cpu.throttled_usec === undefined ? undefined : cpu.throttled_usec * 1000),
    cpuQuotaUs: max?.[0] && /^\d+$/.test(max[0]) ? Number(max[0]) : undefined,
    cpuPeriodUs: max?.[1] && /^\d+$/.test(max[1]) ? Number(max[1]) : undefined,
    // cAdvisor's inverse of runc's shares → weight mapping.
    cpuShares: weight !== undefined && weight >= 1 && weight <= 10000 ? 2 + Math.floor(((weight - 1) * 262142) / 9999) : undefined,
    swapBytes: num(read(`${dir}/memory.swap.current`)),
    failcnt: events.max,
    oomKills: events.oom_kill,
    io: ioStatV2(read(`${dir}/io.stat`), read),
    processes: pids?.length,
    threadsMax: maxOrNum(readSetting(read, `${dir}/pids.max`)),
    pids,
  });
}
