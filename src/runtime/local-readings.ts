import { readlinkSync } from 'node:fs';
import { cgroupCandidates, netDev, readCgroup, readIfThere, type CgroupLayout, type ReadFile } from './cgroup-stats.js';
import { containerStatsOf } from './readings.js';
import type { EngineCalls, EngineStats } from './runtime-types.js';

/** How many container → pid answers are kept (one inspect each); past it the map starts afresh. */
const PID_CACHE_MAX = 4096;

export interface LocalReadingsOptions {
  read?: ReadFile;
  /** The namespace of podrun's own network, to tell a host-network sandbox (no pod network of its own). */
  hostNetNs?: () => string | undefined;
  cgroupRoot?: string;
}

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
  private readonly read: ReadFile;
  private readonly hostNetNs: () => string | undefined;
  /** Readings answered from cgroupfs and from the engine, for the bench and metrics. */
  readonly counts = { cgroup: 0, engine: 0 };

  constructor(private readonly e: EngineCalls, private readonly o: LocalReadingsOptions = {}) {
    this.read = o.read ?? readIfThere;
    this.hostNetNs = o.hostNetNs ?? (() => netNsOf('self'));
  }

  private detect(): Promise<CgroupLayout | undefined> {
    this.layout ??= (async () => {
      if (this.e.options.cgroupReadings === false) return undefined;
      if (!this.e.endpoint.startsWith('unix://') && !this.e.endpoint.startsWith('/')) return undefined;
      const info = (await this.e.call('engine info', () => this.e.docker.info()).catch(() => undefined)) as { CgroupDriver?: string; CgroupVersion?: string } | undefined;
      const driver = info?.CgroupDriver === 'systemd' ? 'systemd' : info?.CgroupDriver === 'cgroupfs' ? 'cgroupfs' : undefined;
      if (!driver) return undefined;
      return { version: info?.CgroupVersion === '2' ? 2 : 1, driver, root: this.o.cgroupRoot ?? '/sys/fs/cgroup' } satisfies CgroupLayout;
    })();
    return this.layout;
  }

  /** The layout readings use, once known (undefined: the engine's stats API). */
  async cgroupLayout(): Promise<CgroupLayout | undefined> {
    return this.detect();
  }

  /** `network`: read the namespace's counters too (a sandbox's; an app container shares them). */
  async stats(id: string, oneShot: boolean, network = true): Promise<EngineStats | undefined> {
    const layout = await this.detect();
    const first = layout ? await this.readLocal(layout, id, network) : undefined;
    if (!first) {
      this.counts.engine++;
      const s = await containerStatsOf(this.e, id, oneShot);
      return s ? { ...s, source: 'engine' } : undefined;
    }
    this.counts.cgroup++;
    if (oneShot || !layout) return first;
    // As the engine's answer without one-shot: a second reading a second later, for rates.
    await new Promise((r) => setTimeout(r, 1000));
    const second = await this.readLocal(layout, id, network);
    return second ? { ...second, precpu_stats: { cpu_usage: { total_usage: first.cpu_stats.cpu_usage.total_usage } }, preread: first.read } : first;
  }

  private async readLocal(layout: CgroupLayout, id: string, network: boolean): Promise<EngineStats | undefined> {
    const s = readCgroup(layout, id, this.read);
    if (!s || !network) return s;
    const pid = await this.pidOf(layout, id);
    if (pid === undefined) return s;
    const ns = netNsOf(String(pid));
    // A host-network sandbox shares the node's interfaces: the engine reports none for it either.
    if (ns !== undefined && ns === this.hostNetNs()) return s;
    const networks = netDev(this.read(`/proc/${pid}/net/dev`));
    return networks && Object.keys(networks).length ? { ...s, networks } : s;
  }

  private async pidOf(layout: CgroupLayout, id: string): Promise<number | undefined> {
    const procs = this.procsOf(layout, id);
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
      const text = this.read(path);
      if (text !== undefined) return text.split('\n').filter(Boolean).map(Number);
    }
    return [];
  }

  /** Forgets a container's pid (it is gone). */
  forget(id: string): void {
    this.pids.delete(id);
  }
}

function netNsOf(pid: string): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return undefined;
  }
}
