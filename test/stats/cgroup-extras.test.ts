import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { recorded, tree } from './cgroup-trees.js';
import { deviceName } from '../../src/runtime/cgroup-extras.js';
import { readSetting } from '../../src/runtime/cgroup-files.js';
import { readCgroup, type ReadFile } from '../../src/runtime/cgroup-stats.js';
import { MAX_FDS, processFigures, type ProcFs } from '../../src/runtime/proc-stats.js';
import type { ContainerReading } from '../../src/runtime/runtime-types.js';
import { cadvisorMetrics, resourceMetrics } from '../../src/stats/container-metrics.js';
import { podStats, type ContainerSample } from '../../src/stats/summary.js';

// The series dashboards read beyond CPU and memory usage, from cgroup trees recorded from real
// kernels: v1 from a Docker container on this machine (scripts/record-cgroup-v1/record.sh: a
// --cpus 0.2 burner, a child killed for memory, 8 MiB written with fsync), v2 from Linux 6.1 under
// QEMU (scripts/record-cgroup-v2/record.sh with "extras": the same under cpu.max, io on ext4).

const ID = 'c0ffee';
const SANDBOX = 'bada55';

const at = new Date('2026-12-01T10:00:00.000Z');
const v1 = { version: 1, driver: 'cgroupfs', root: '/sys/fs/cgroup' } as const;
const V1 = recorded('v1-docker-cgroupfs-extras.txt', { ID });

function promtool(text: string): string {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return `${r.status}${r.stdout}${r.stderr}`;
}

const pod = { name: 'web', namespace: 'demo', uid: 'u-1' };
const sample = (id: string, name: string, type: ContainerSample['type'], stats: ContainerReading): ContainerSample => ({
  id,
  name,
  type,
  pod,
  image: 'busybox',
  engineName: name,
  stats,
});
const app = (labels = ''): string => `{container="app",id="/docker/${ID}",image="busybox",name="app",namespace="demo",pod="web"${labels}}`;

describe('cgroup v1: the recorded container under a quota, killed for memory, written to disk', () => {
  const s = readCgroup(v1, ID, tree(V1), at)!;

  it('reads throttling, the CPU settings, swap, limit hits, OOM kills, IO by device, processes and the pids limit', () => {
    expect(s.cgroup).toEqual({
      cfs: { periods: 50, throttledPeriods: 40, throttledNs: 2305161632 },
      cpuQuotaUs: 20000,
      cpuPeriodUs: 100000,
      cpuShares: 512,
      swapBytes: 0,
      failcnt: 0,
      oomKills: 1,
      // No sysfs in the recorded tree: the device by its numbers.
      io: [{ device: '/dev/block/254:0', readBytes: 8192, writeBytes: 8400896, reads: 2, writes: 6 }],
      processes: 1,
      threadsMax: 100,
      pids: [24686],
    });
  });

  it("writes them under cAdvisor's names for the container, and the pod's sums", () => {
    const sb = readCgroup(v1, SANDBOX, tree(recorded('v1-docker-cgroupfs-extras.txt', { ID: SANDBOX })), at)!;
    const text = cadvisorMetrics(
      [sample(SANDBOX, 'POD', 'sandbox', sb), sample(ID, 'app', 'app', { ...s, cgroup: { ...s.cgroup, fds: 5, sockets: 1, maxOpenFiles: 1048576 } })],
      { cgroupOf: (id) => `/docker/${id}` },
    );
    const t = at.getTime();
    expect(text).toContain(`# TYPE container_cpu_cfs_throttled_periods_total counter`);
    expect(text).toContain(`container_cpu_cfs_periods_total${app()} 50 ${t}`);
    expect(text).toContain(`container_cpu_cfs_throttled_periods_total${app()} 40 ${t}`);
    expect(text).toContain(`container_cpu_cfs_throttled_seconds_total${app()} 2.305161632 ${t}`);
    expect(text).toContain(`container_spec_cpu_quota${app()} 20000\n`);
    expect(text).toContain(`container_spec_cpu_period${app()} 100000\n`);
    expect(text).toContain(`container_spec_cpu_shares${app()} 512\n`);
    expect(text).toContain(`container_memory_swap${app()} 0 ${t}`);
    expect(text).toContain(`container_memory_failcnt${app()} 0 ${t}`);
    expect(text).toContain(`container_oom_events_total${app()} 1 ${t}`);
    expect(text).toContain(`container_fs_writes_bytes_total${app(',device="/dev/block/254:0"')} 8400896 ${t}`);
    expect(text).toContain(`container_fs_reads_bytes_total${app(',device="/dev/block/254:0"')} 8192 ${t}`);
    expect(text).toContain(`container_fs_writes_total${app(',device="/dev/block/254:0"')} 6 ${t}`);
    expect(text).toContain(`container_fs_reads_total${app(',device="/dev/block/254:0"')} 2 ${t}`);
    expect(text).toContain(`container_processes${app()} 1 ${t}`);
    expect(text).toContain(`container_threads${app()} 1 ${t}`);
    expect(text).toContain(`container_threads_max${app()} 100 ${t}`);
    expect(text).toContain(`container_file_descriptors${app()} 5 ${t}`);
    expect(text).toContain(`container_sockets${app()} 1 ${t}`);
    expect(text).toContain(`container_ulimits_soft${app(',ulimit="max_open_files"')} 1048576 ${t}`);
    // The pod's row sums what every container has (the sandbox read the same tree: twice), and
    // has no settings or throttling of its own; the sandbox has no descriptors read: none summed.
    const podRow = (l = ''): string => `{container="",id="/podrun/podu-1",image="",name="",namespace="demo",pod="web"${l}}`;
    expect(text).toContain(`container_oom_events_total${podRow()} 2 `);
    expect(text).toContain(`container_fs_writes_bytes_total${podRow(',device="/dev/block/254:0"')} 16801792 `);
    expect(text).not.toContain(`container_cpu_cfs_periods_total${podRow()}`);
    expect(text).not.toContain(`container_spec_cpu_quota${podRow()}`);
    expect(text).not.toContain(`container_file_descriptors${podRow()}`);
    expect(promtool(text)).toBe('0');
  });

  it('leaves out what a tree does not have: no quota, no swap accounting, no blkio, an older kernel', () => {
    const without =
      (...names: string[]): ReadFile =>
      (p) =>
        names.some((n) => p.endsWith(n)) ? undefined : V1[p];
    const bare = readCgroup(
      v1,
      ID,
      without(
        'cpu.cfs_quota_us',
        'memory.oom_control',
        'blkio.throttle.io_service_bytes_recursive',
        'blkio.throttle.io_serviced_recursive',
        'memory.failcnt',
        'pids.max',
      ),
      at,
    )!;
    const noSwap = { ...bare, memory: { ...bare.memory } };
    expect(bare.cgroup).not.toHaveProperty('cpuQuotaUs');
    expect(bare.cgroup).not.toHaveProperty('oomKills');
    expect(bare.cgroup).not.toHaveProperty('io');
    const text = cadvisorMetrics([sample(ID, 'app', 'app', noSwap)], { cgroupOf: (id) => `/docker/${id}` });
    // A container without a quota has no throttling series (cAdvisor's condition), nor a quota.
    for (const name of [
      'container_cpu_cfs_periods_total',
      'container_spec_cpu_quota',
      'container_oom_events_total',
      'container_fs_writes_bytes_total',
      'container_memory_failcnt',
      'container_threads_max',
      'container_file_descriptors',
      'container_ulimits_soft',
    ]) {
      expect(text).not.toMatch(new RegExp(`^${name}\\{`, 'm'));
    }
    // cgroup v1 says "no quota" with -1: no quota, no throttling series.
    const unlimited = readCgroup(v1, ID, (p) => (p.endsWith('cpu.cfs_quota_us') ? '-1\n' : V1[p]), at)!;
    expect(unlimited.cgroup).not.toHaveProperty('cpuQuotaUs');
    expect(cadvisorMetrics([sample(ID, 'app', 'app', unlimited)], { cgroupOf: (id) => `/docker/${id}` })).not.toMatch(/^container_cpu_cfs_periods_total\{/m);
    // Still read: the period and shares.
    expect(text).toContain(`container_spec_cpu_period${app()} 100000\n`);
    // The older v1 recording has none of the extra files at all: nothing made up.
    const old = readCgroup(v1, ID, tree(recorded('v1-docker-cgroupfs.txt', { ID })), at)!;
    expect(old.cgroup).toEqual({ swapBytes: 0 });
    expect(promtool(text)).toBe('0');
  });
});

describe('cgroup v2: the recorded pair a second apart, the app under cpu.max, its child killed for memory', () => {
  const v2 = { version: 2, driver: 'systemd', root: '/sys/fs/cgroup' } as const;
  const ids = { APPID: ID, SANDBOXID: SANDBOX };
  const first = readCgroup(v2, ID, tree(recorded('v2-docker-systemd-extras-1.txt', ids)), at)!;
  const later = readCgroup(v2, ID, tree(recorded('v2-docker-systemd-extras-2.txt', ids)), at)!;

  it("reads cpu.stat's throttling, cpu.max, cpu.weight as shares, memory.events, swap, io.stat and the pids", () => {
    expect(later.cgroup).toEqual({
      cfs: { periods: 3289, throttledPeriods: 3121, throttledNs: 249116762000 },
      cpuQuotaUs: 20000,
      cpuPeriodUs: 100000,
      // Docker's 1024 shares became weight 39; cAdvisor's inverse gives 998 back.
      cpuShares: 998,
      swapBytes: 0,
      failcnt: 54,
      oomKills: 1,
      io: [{ device: '/dev/block/1:0', readBytes: 2048, writeBytes: 4196352, reads: 2, writes: 4 }],
      processes: 1,
      threadsMax: 100,
      pids: [100],
    });
    // Between the two readings the burner was throttled in most periods.
    const f = first.cgroup!.cfs!;
    const l = later.cgroup!.cfs!;
    expect((l.throttledPeriods - f.throttledPeriods) / (l.periods - f.periods)).toBeGreaterThan(0.5);
    expect(first.cgroup!.oomKills).toBe(0);
  });

  it('the sandbox: no quota ("max"), no limit on pids (0, as cAdvisor says it), an empty io.stat', () => {
    const sb = readCgroup(v2, SANDBOX, tree(recorded('v2-docker-systemd-extras-2.txt', ids)), at)!;
    expect(sb.cgroup).toEqual({
      cfs: { periods: 0, throttledPeriods: 0, throttledNs: 0 },
      cpuPeriodUs: 100000,
      cpuShares: 2597,
      swapBytes: 0,
      failcnt: 0,
      oomKills: 0,
      io: [],
      processes: 0,
      threadsMax: 0,
      pids: [],
    });
    const text = cadvisorMetrics([sample(SANDBOX, 'POD', 'sandbox', sb), sample(ID, 'app', 'app', later)], { cgroupOf: (id) => `/docker/${id}` });
    expect(text).not.toMatch(/^container_cpu_cfs_periods_total\{container="POD"/m);
    expect(text).toMatch(/^container_oom_events_total\{container="POD",[^}]*\} 0 /m);
    expect(text).not.toMatch(/^container_fs_writes_bytes_total\{container="POD"/m);
    expect(text).toContain(`container_oom_events_total${app()} 1 `);
    expect(text).toContain(`container_cpu_cfs_throttled_seconds_total${app()} 249.116762 `);
    expect(text).toContain(`container_fs_writes_bytes_total${app(',device="/dev/block/1:0"')} 4196352 `);
    expect(promtool(text)).toBe('0');
  });
});

describe('what the processes hold, from /proc', () => {
  const fs = (fds: Record<number, string[] | undefined>, limits = 'Max open files            1024                 524288               files\n'): ProcFs => ({
    list: (p) => fds[Number(/\/proc\/(\d+)\/fd$/.exec(p)?.[1])],
    link: (p) => (p.endsWith('/3') ? 'socket:[123]' : p.endsWith('/4') ? 'anon_inode:[eventpoll]' : '/dev/null'),
    read: (p) => (p === '/proc/7/limits' ? limits : undefined),
  });

  it("counts descriptors and sockets over the processes, and the first process's open-files limit", () => {
    expect(processFigures([9, 7], fs({ 7: ['0', '1', '2', '3'], 9: ['0', '3', '4'] }))).toEqual({ fds: 7, sockets: 2, maxOpenFiles: 1024 });
    expect(processFigures([7], fs({ 7: ['0'] }, 'Max open files            unlimited            unlimited            files\n')).maxOpenFiles).toBe(-1);
  });

  it('leaves the counts out when a process cannot be read or a container holds more than the bound', () => {
    expect(processFigures([7, 9], fs({ 7: ['0'], 9: undefined }))).toEqual({ maxOpenFiles: 1024 });
    const many = Array.from({ length: MAX_FDS + 1 }, (_, i) => String(i));
    expect(processFigures([7], fs({ 7: many }))).toEqual({ maxOpenFiles: 1024 });
    expect(processFigures([], fs({}))).toEqual({});
  });
});

describe('settings', () => {
  it('are read at most once a minute per path (a quota changes only when the container is updated)', () => {
    let quota = '20000\n';
    let reads = 0;
    const read: ReadFile = () => (reads++, quota);
    expect(readSetting(read, '/q', 1000)).toBe('20000\n');
    quota = '50000\n';
    expect(readSetting(read, '/q', 60_999)).toBe('20000\n');
    expect(readSetting(read, '/q', 61_000)).toBe('50000\n');
    expect(reads).toBe(2);
  });
});

describe('devices, the machine and the resource endpoint', () => {
  it("has the machine's cores and memory with cAdvisor's labels, none for a figure not known", () => {
    const machine = { cores: 2, memoryBytes: 25275990016, machineId: 'm1', systemUuid: '', bootId: 'b1' };
    const text = cadvisorMetrics([], { cgroupOf: (id) => id, machine });
    expect(text).toContain('# TYPE machine_cpu_cores gauge\nmachine_cpu_cores{boot_id="b1",machine_id="m1",system_uuid=""} 2\n');
    expect(text).toContain('machine_memory_bytes{boot_id="b1",machine_id="m1",system_uuid=""} 25275990016\n');
    expect(cadvisorMetrics([], { cgroupOf: (id) => id, machine: { ...machine, cores: 0 } })).not.toMatch(/^machine_cpu_cores\{/m);
    expect(promtool(text)).toBe('0');
  });

  it('names a device from sysfs, by its numbers when sysfs does not say', () => {
    expect(deviceName('8:16', (p) => (p === '/sys/dev/block/8:16/uevent' ? 'MAJOR=8\nMINOR=16\nDEVNAME=sdb\nDEVTYPE=disk\n' : undefined))).toBe('/dev/sdb');
    expect(deviceName('9:99', () => undefined)).toBe('/dev/block/9:99');
  });

  it("has the kubelet's swap series for node, pod and container, and both scrape error gauges", () => {
    const s = readCgroup(v1, ID, tree(V1), at)!;
    const text = resourceMetrics(
      [sample(ID, 'app', 'app', s)],
      { time: at.toISOString(), usageCoreNanoSeconds: 1e9, workingSetBytes: 1e6, swapUsageBytes: 4096 },
      false,
    );
    expect(text).toContain(`node_swap_usage_bytes{} 4096 ${at.getTime()}`);
    expect(text).toContain(`container_swap_usage_bytes{container="app",namespace="demo",pod="web"} 0 ${at.getTime()}`);
    expect(text).toContain(`pod_swap_usage_bytes{namespace="demo",pod="web"} 0 ${at.getTime()}`);
    expect(text).toContain('# TYPE resource_scrape_error gauge\nresource_scrape_error{} 0');
    expect(text).toContain('scrape_error{} 0');
    // The Summary API's container and pod swap, the same figures.
    const [summary] = podStats([sample(ID, 'app', 'app', s)]);
    expect(summary!.containers[0]!.swap).toEqual({ time: at.toISOString(), swapUsageBytes: 0 });
    expect(summary!.swap).toEqual({ time: at.toISOString(), swapUsageBytes: 0 });
    expect(podStats([sample(ID, 'app', 'app', { ...s, cgroup: {} })])[0]).not.toHaveProperty('swap');
    // No swap reading: no swap series.
    const bare = resourceMetrics([sample(ID, 'app', 'app', { ...s, cgroup: {} })], undefined, true);
    expect(bare).not.toMatch(/^(container|pod)_swap_usage_bytes\{/m);
    expect(bare).toContain('resource_scrape_error{} 1');
    expect(promtool(text)).toBe('0');
  });
});
