import { existsSync, readlinkSync } from 'node:fs';
import { netDev, readCgroupAt, readIfThere, type CgroupLayout, type ReadFile } from '../cgroup-stats.js';
import { hostProc, processFigures } from '../proc-stats.js';
import type { ContainerReading } from '../runtime-types.js';
import type { CriRuntimeService } from './runtime-service.js';
import { isCriNotFound } from './engine-errors.js';
import type { ContainerStatsInfo, Labels } from './messages.js';

/** How many container → cgroup answers are kept (one verbose status call each); past it the map starts afresh. */
const PLACE_CACHE_MAX = 4096;

/** Where the runtime put a container (or a sandbox's pause process): its cgroup and its first process. */
export interface CriPlace {
  /** The cgroup relative to a hierarchy's root (v1: the cpuacct hierarchy's; v2: the unified one). */
  rel: string;
  pid: number;
}

/**
 * A container's place from the runtime's verbose status (containerd and CRI-O both put the
 * runtime's pid under `info`), its cgroup then read from the process's own /proc/<pid>/cgroup:
 * that holds for any cgroup parent and either driver (systemd's `slice:prefix:id` need not be
 * decoded), and it is the kernel's word, not the runtime's. Undefined when no process runs.
 */
export function placeFromInfo(info: Labels, version: 1 | 2, read: ReadFile = readIfThere): CriPlace | undefined {
  const raw = info.info;
  if (!raw) return undefined;
  let pid: unknown;
  try {
    pid = (JSON.parse(raw) as { pid?: unknown }).pid;
  } catch {
    return undefined; // a runtime that says something else under `info`: its own stats then
  }
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return undefined;
  const rel = cgroupOfProcess(read(`/proc/${pid}/cgroup`), version);
  return rel !== undefined ? { rel, pid } : undefined;
}

/** The process's cgroup in the hierarchy podrun reads: v2's `0::/path`, v1's cpuacct line. */
export function cgroupOfProcess(text: string | undefined, version: 1 | 2): string | undefined {
  if (!text) return undefined;
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    const hit = version === 2 ? m[1] === '0' && m[2] === '' : m[2]!.split(',').includes('cpuacct');
    // `..` would walk out of the hierarchy: a path the kernel never writes, so nothing is read.
    if (hit && m[3]!.startsWith('/') && !m[3]!.split('/').includes('..')) return m[3]!.replace(/^\/+/, '');
  }
  return undefined;
}

/** The runtime's ContainerStats answer as a reading (no network, no cgroup extras: it has none). */
export function readingFromCriStats(s: ContainerStatsInfo, now: Date = new Date()): ContainerReading | undefined {
  const usage = s.cpu?.usageCoreNanoSeconds?.value;
  if (usage === undefined) return undefined;
  const m = s.memory;
  const n = (v: { value: bigint } | undefined): number | undefined => (v ? Number(v.value) : undefined);
  const memory: ContainerReading['memory'] = { workingSetBytes: n(m?.workingSetBytes) ?? 0 };
  const usageBytes = n(m?.usageBytes);
  const rss = n(m?.rssBytes);
  const faults = n(m?.pageFaults);
  const major = n(m?.majorPageFaults);
  if (usageBytes !== undefined) memory.usageBytes = usageBytes;
  if (rss !== undefined) memory.rssBytes = rss;
  if (faults !== undefined) memory.pageFaults = faults;
  if (major !== undefined) memory.majorPageFaults = major;
  const ts = s.cpu?.timestamp ? new Date(Number(s.cpu.timestamp / 1_000_000n)) : now;
  return { time: ts.toISOString(), cpu: { usageNs: Number(usage) }, memory, source: 'engine' };
}

/**
 * Container readings on a CRI runtime: from cgroupfs where the runtime runs on this machine (a
 * unix socket) and its cgroups are visible here, as the Docker engine's are read; from the
 * runtime's ContainerStats where they are not. The network is the sandbox's namespace's
 * (/proc/<pause pid>/net/dev), as an app container shares it.
 */
export class CriReadings {
  private layout: Promise<CgroupLayout | undefined> | undefined;
  private readonly places = new Map<string, CriPlace>();
  private ownNetNs: string | undefined;

  constructor(
    private readonly client: CriRuntimeService,
    private readonly options: { cgroupReadings?: boolean },
  ) {}

  cgroupLayout(): Promise<CgroupLayout | undefined> {
    this.layout ??= (async () => {
      if (this.options.cgroupReadings === false) return undefined;
      if (!this.client.endpoint.startsWith('unix://') && !this.client.endpoint.startsWith('/')) return undefined;
      const version = existsSync('/sys/fs/cgroup/cgroup.controllers') ? 2 : 1;
      // The driver names where Docker-shaped paths would be; on CRI each place is asked, not guessed.
      return { version, driver: 'cgroupfs', root: '/sys/fs/cgroup' } satisfies CgroupLayout;
    })();
    return this.layout;
  }

  /** cAdvisor's name for a container: the cgroup podrun found it in (containerd's default place before a first reading). */
  cgroupName(id: string): string {
    const p = this.places.get(id);
    return p ? `/${p.rel}` : `/k8s.io/${id}`;
  }

  async stats(id: string, oneShot: boolean, network: boolean): Promise<ContainerReading | undefined> {
    const layout = await this.cgroupLayout();
    const first = layout ? await this.readLocal(layout, id, network) : undefined;
    if (!first) return this.fromRuntime(id, oneShot);
    if (oneShot) return first;
    await new Promise((r) => setTimeout(r, 1000));
    const second = await this.readLocal(layout!, id, network);
    return second ? { ...second, earlier: { time: first.time, cpuUsageNs: first.cpu.usageNs } } : first;
  }

  /** The container's writable layer as the runtime measures it (ContainerStats; undefined where it says nothing). */
  async writableLayerBytes(id: string): Promise<number | undefined> {
    const s = await this.client.containerStats(id).catch(() => undefined);
    const used = s?.writableLayer?.usedBytes?.value;
    return used !== undefined ? Number(used) : undefined;
  }

  /** The runtime's ContainerStats (a sandbox has none: undefined). */
  private async fromRuntime(id: string, oneShot: boolean): Promise<ContainerReading | undefined> {
    const once = async (): Promise<ContainerReading | undefined> => {
      const s = await this.client.containerStats(id).catch((err: unknown) => {
        if (isCriNotFound(err)) return undefined;
        throw err;
      });
      return s ? readingFromCriStats(s) : undefined;
    };
    const first = await once();
    if (!first || oneShot) return first;
    await new Promise((r) => setTimeout(r, 1000));
    const second = await once();
    return second ? { ...second, earlier: { time: first.time, cpuUsageNs: first.cpu.usageNs } } : first;
  }

  private async readLocal(layout: CgroupLayout, id: string, network: boolean): Promise<ContainerReading | undefined> {
    const place = await this.placeOf(layout, id);
    if (!place) return undefined;
    const raw = readCgroupAt(layout, place.rel);
    if (!raw) {
      this.places.delete(id); // gone, or a new instance under the same id: asked again next time
      return undefined;
    }
    const procs = raw.cgroup?.pids ?? [];
    const { pids: _pids, ...rest } = raw.cgroup ?? {};
    const s: ContainerReading = raw.cgroup?.pids ? { ...raw, cgroup: { ...rest, ...processFigures(raw.cgroup.pids, hostProc) } } : raw;
    // The pid is trusted only while it is still in the cgroup (pids are reused).
    if (!network || !procs.includes(place.pid)) return s;
    const ns = netNsOf(String(place.pid));
    this.ownNetNs ??= netNsOf('self');
    if (ns !== undefined && ns === this.ownNetNs) return s; // host network: the node's, not the pod's
    const networks = netDev(readIfThere(`/proc/${place.pid}/net/dev`));
    return networks && Object.keys(networks).length ? { ...s, networks } : s;
  }

  /** The container's (or sandbox's) place, asked of the runtime once. */
  private async placeOf(layout: CgroupLayout, id: string): Promise<CriPlace | undefined> {
    const known = this.places.get(id);
    if (known) return known;
    const info = await this.client
      .containerStatusVerbose(id)
      .then((r) => r.info)
      .catch(() => this.client.podSandboxStatusVerbose(id).then((r) => r.info))
      .catch(() => undefined);
    const place = info ? placeFromInfo(info, layout.version) : undefined;
    if (!place) return undefined;
    if (this.places.size >= PLACE_CACHE_MAX) this.places.clear();
    this.places.set(id, place);
    return place;
  }
}

function netNsOf(pid: string): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return undefined;
  }
}
