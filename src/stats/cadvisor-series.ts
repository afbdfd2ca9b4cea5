import type { Exposition, LabelText } from './exposition.js';
import type { ContainerSample } from './summary.js';

// The /metrics/cadvisor series the standard dashboards and alerts read beyond CPU and memory
// usage (kubernetes-mixin's "Compute Resources" dashboards, CPUThrottlingHigh): CFS throttling,
// the CPU settings, swap, limit hits, OOM kills, block IO by device, processes, threads, file
// descriptors, sockets and the open-files limit, plus the machine's cores and memory. Names,
// types, units, labels and help texts are cAdvisor's (metrics/prometheus.go and
// prometheus_machine.go). A figure the reading lacks has no sample: never a zero in its place.

/** The machine, as cAdvisor's machine collector labels it. */
export interface MachineFacts {
  cores: number;
  memoryBytes: number;
  machineId: string;
  systemUuid: string;
  bootId: string;
}

export function machineSeries(out: Exposition, m: MachineFacts): void {
  const labels = { boot_id: m.bootId, machine_id: m.machineId, system_uuid: m.systemUuid };
  out.add('machine_cpu_cores', 'gauge', 'Number of logical CPU cores.', labels, m.cores > 0 ? m.cores : undefined);
  out.add('machine_memory_bytes', 'gauge', 'Amount of memory installed on the machine.', labels, m.memoryBytes > 0 ? m.memoryBytes : undefined);
}

type Extras = NonNullable<ContainerSample['stats']['cgroup']>;

/**
 * A row's series: one container's own (every figure), or a pod's (`container=""`: the sums of
 * its containers' counters and gauges, each only when every container has it; no settings, as
 * podrun's pods have no cgroup of their own to hold a quota).
 */
export function cgroupSeries(out: Exposition, labels: LabelText, group: readonly ContainerSample[], t: number): void {
  const one = group.length === 1 ? group[0]!.stats.cgroup : undefined;
  const sum = (f: (x: Extras) => number | undefined): number | undefined => {
    let total = 0;
    for (const s of group) {
      const v = s.stats.cgroup ? f(s.stats.cgroup) : undefined;
      if (v === undefined) return undefined;
      total += v;
    }
    return total;
  };
  // cAdvisor writes the CFS series only for a container with a quota (its condition on the spec).
  const cfs = one?.cpuQuotaUs !== undefined ? one.cfs : undefined;
  out.add('container_cpu_cfs_periods_total', 'counter', 'Number of elapsed enforcement period intervals.', labels, cfs?.periods, t);
  out.add('container_cpu_cfs_throttled_periods_total', 'counter', 'Number of throttled period intervals.', labels, cfs?.throttledPeriods, t);
  out.add(
    'container_cpu_cfs_throttled_seconds_total',
    'counter',
    'Total time duration the container has been throttled.',
    labels,
    cfs === undefined ? undefined : cfs.throttledNs / 1e9,
    t,
  );
  // Settings carry no timestamp in cAdvisor's output: they are the spec, not a reading.
  out.add('container_spec_cpu_period', 'gauge', 'CPU period of the container.', labels, one?.cpuPeriodUs);
  out.add('container_spec_cpu_quota', 'gauge', 'CPU quota of the container.', labels, one?.cpuQuotaUs);
  out.add('container_spec_cpu_shares', 'gauge', 'CPU share of the container.', labels, one?.cpuShares);
  out.add(
    'container_memory_swap',
    'gauge',
    'Container swap usage in bytes.',
    labels,
    sum((x) => x.swapBytes),
    t,
  );
  // cAdvisor types it a counter, which promtool rejects for a name without _total: untyped keeps
  // its name and value (rate() reads it all the same) and the text clean.
  out.add(
    'container_memory_failcnt',
    'untyped',
    'Number of memory usage hits limits',
    labels,
    sum((x) => x.failcnt),
    t,
  );
  out.add(
    'container_oom_events_total',
    'counter',
    'Count of out of memory events observed for the container',
    labels,
    sum((x) => x.oomKills),
    t,
  );
  io(out, labels, group, t);
  out.add(
    'container_processes',
    'gauge',
    'Number of processes running inside the container.',
    labels,
    sum((x) => x.processes),
    t,
  );
  out.add(
    'container_file_descriptors',
    'gauge',
    'Number of open file descriptors for the container.',
    labels,
    sum((x) => x.fds),
    t,
  );
  out.add(
    'container_sockets',
    'gauge',
    'Number of open sockets for the container.',
    labels,
    sum((x) => x.sockets),
    t,
  );
  const threads = group.every((s) => s.stats.processes !== undefined) ? group.reduce((a, s) => a + (s.stats.processes ?? 0), 0) : undefined;
  out.add('container_threads', 'gauge', 'Number of threads running inside the container', labels, threads, t);
  out.add('container_threads_max', 'gauge', 'Maximum number of threads allowed inside the container, infinity if value is zero', labels, one?.threadsMax, t);
  out.add(
    'container_ulimits_soft',
    'gauge',
    'Soft ulimit values for the container root process. Unlimited if -1, except priority and nice',
    labels.with('ulimit', 'max_open_files'),
    one?.maxOpenFiles,
    t,
  );
}

const IO: [string, string, 'readBytes' | 'writeBytes' | 'reads' | 'writes'][] = [
  ['container_fs_reads_bytes_total', 'Cumulative count of bytes read', 'readBytes'],
  ['container_fs_reads_total', 'Cumulative count of reads completed', 'reads'],
  ['container_fs_writes_bytes_total', 'Cumulative count of bytes written', 'writeBytes'],
  ['container_fs_writes_total', 'Cumulative count of writes completed', 'writes'],
];

/** Block IO by device: a pod's is its containers' summed device by device (every one read). */
function io(out: Exposition, labels: LabelText, group: readonly ContainerSample[], t: number): void {
  const complete = group.every((s) => s.stats.cgroup?.io !== undefined);
  const by = new Map<string, Record<string, number>>();
  if (complete) {
    for (const s of group) {
      for (const d of s.stats.cgroup!.io!) {
        const acc = by.get(d.device) ?? {};
        for (const [, , k] of IO) if (d[k] !== undefined) acc[k] = (acc[k] ?? 0) + d[k];
        by.set(d.device, acc);
      }
    }
  }
  for (const [name, help, k] of IO) {
    out.add(name, 'counter', help, labels, undefined);
    for (const [device, acc] of by) out.add(name, 'counter', help, labels.with('device', device), acc[k], t);
  }
}
