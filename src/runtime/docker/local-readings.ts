import { readlinkSync } from 'node:fs';
import { cgroupCandidates, netDev, readCgroup, readIfThere, type CgroupLayout } from '../cgroup-stats.js';
import { hostProc, processFigures } from '../proc-stats.js';
import { containerStatsOf } from './readings.js';
import type { ContainerReading } from '../runtime-types.js';
import type { EngineCalls } from './engine.js';

/** How many container → pid answers are kept (one inspect each); past it the map starts afresh. */
const PID_CACHE_MAX = 4096;

/**
 * Container readings from cgroupfs when the engine runs on this machine (its socket is local and
 * its cgroups are under /sys/fs/cgroup), as cAdvisor reads them; the engine's stats API when it
 * does not (a remote engine, a layout podrun does not know). The network comes from the
 * namespace's /proc/<pid>/net/dev, the pid asked of the engine once per container and checked
 * against the cgroup's own process list at every use (pids are reused).
 */
export class LocalReadings {
  private layout: Promise<CgroupLayout | undefined> | undefined;
  private readonly pids = new Map<string, number>();
  /** podrun's own network namespace, read once: a process does not change its own. */
  private ownNetNs: string | undefined;

  constructor(private readonly e: EngineCalls) {}

  /** Where the engine keeps containers' cgroups, asked once (undefined: readings use its stats API). */
  cgroupLayout(): Promise<CgroupLayout | undefined> {
    this.layout ??= (async () => {
      if (this.e.options.cgroupReadings === false) return undefined;
      if (!this.e.endpoint.startsWith('unix://') && !this.e.endpoint.startsWith('/')) return undefined;
      const info = (await this.e.call('engine info', () => this.e.docker.info()).catch(() => undefined)) as
        { CgroupDriver?: string; CgroupVersion?: string } | undefined;
      const driver = info?.CgroupDriver === 'systemd' ? 'systemd' : info?.CgroupDriver === 'cgroupfs' ? 'cgroupfs' : undefined;
      if (!driver) return undefined;
      return { version: info?.CgroupVersion === '2' ? 2 : 1, driver, root: '/sys/fs/cgroup' } satisfies CgroupLayout;
    })();
    return this.layout;
  }

  /** `network`: read the namespace's counters too (a sandbox's; an app container shares them). */
  async stats(id: string, oneShot: boolean, network = true): Promise<ContainerReading | undefined> {
    const layout = await this.cgroupLayout();
    const first = layout ? await this.readLocal(layout, id, network) : undefined;
    if (!layout || !first) {
      return containerStatsOf(this.e, id, oneShot);
    }
    if (oneShot) return first;
    // As the engine's answer without one-shot: a second reading a second later, for rates.
    await new Promise((r) => setTimeout(r, 1000));
    const second = await this.readLocal(layout, id, network);
    return second ? { ...second, earlier: { time: first.time, cpuUsageNs: first.cpu.usageNs } } : first;
  }

  private async readLocal(layout: CgroupLayout, id: string, network: boolean): Promise<ContainerReading | undefined> {
    const raw = readCgroup(layout, id);
    const s = withProcesses(raw);
    if (!s || !network) return s;
    const pid = await this.pidOf(layout, id, raw?.cgroup?.pids);
    if (pid === undefined) return s;
    const ns = netNsOf(String(pid));
    // A host-network sandbox shares the node's interfaces: the engine reports none for it either.
    this.ownNetNs ??= netNsOf('self');
    if (ns !== undefined && ns === this.ownNetNs) return s;
    const networks = netDev(readIfThere(`/proc/${pid}/net/dev`));
    return networks && Object.keys(networks).length ? { ...s, networks } : s;
  }

  private async pidOf(layout: CgroupLayout, id: string, listed: readonly number[] | undefined): Promise<number | undefined> {
    const procs = listed ?? this.procsOf(layout, id);
    const known = this.pids.get(id);
    if (known !== undefined && procs.includes(known)) return known;
    this.pids.delete(id);
    const info = await this.e.call(`inspect container ${id}`, () => this.e.docker.getContainer(id).inspect()).catch(() => undefined);
    const pid = info?.State?.Pid;
    if (!pid || !procs.includes(pid)) return undefined;
    if (this.pids.size >= PID_CACHE_MAX) this.pids.clear();
    this.pids.set(id, pid);
    return pid;
  }

  /** The processes in the container's cgroup (the pid cache is trusted only while its pid is one). */
  private procsOf(layout: CgroupLayout, id: string): number[] {
    for (const rel of cgroupCandidates(layout.driver, id)) {
      const path = layout.version === 2 ? `${layout.root}/${rel}/cgroup.procs` : `${layout.root}/cpuacct/${rel}/cgroup.procs`;
      const text = readIfThere(path);
      if (text !== undefined) return text.split('\n').filter(Boolean).map(Number);
    }
    return [];
  }
}

/** The reading with what its processes hold (/proc), their pids then dropped: a reading is kept a while. */
function withProcesses(s: ContainerReading | undefined): ContainerReading | undefined {
  if (!s?.cgroup?.pids) return s;
  const { pids, ...rest } = s.cgroup;
  return { ...s, cgroup: { ...rest, ...processFigures(pids, hostProc) } };
}

function netNsOf(pid: string): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return undefined;
  }
}
