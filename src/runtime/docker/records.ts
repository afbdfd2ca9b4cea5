import type Docker from 'dockerode';
import { LABEL } from '../labels.js';
import type { ContainerState, EngineRecord, EngineSandbox } from '../observed.js';
import { memoryReading } from '../cgroup-stats.js';
import type { ContainerEvent, ContainerReading, ContainerStatus, EngineEvent, InterfaceCounters, SandboxEvent } from '../runtime-types.js';

// Docker's answers turned into podrun's engine records (runtime-types.ts): the only place that
// knows their field names, the "never" zero time, or the status text. Pure.

/**
 * Docker writes "never" (not started, not finished, a create it did not finish) as the zero time
 * of Go, `0001-01-01T00:00:00Z`; any time before the epoch is taken as the same "unset": no
 * container of this machine was made then.
 */
export function engineTime(t: string | undefined): string | undefined {
  return t && !t.startsWith('0001-') && !(Date.parse(t) < 0) ? t : undefined;
}

/** Docker's list gives its creation in seconds since the epoch: at or before it is unset, as engineTime. */
function listedSeconds(s: number | undefined): number | undefined {
  return s !== undefined && s > 0 ? s : undefined;
}

/** An inspect's creation time in whole seconds, undefined when unset (engineTime). */
function inspectedSeconds(t: string | undefined): number | undefined {
  const set = engineTime(t);
  const ms = set ? Date.parse(set) : NaN;
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
}

/**
 * Docker's seven states in CRI's four, as cri-dockerd says them: paused is running, restarting
 * (its restart policy between two runs), dead and removing are unknown. A restarting one is
 * flagged, so it counts as alive: the engine runs it again. Podman's compatible API passes two of
 * its own through: `stopped` (the process has exited, its cleanup not run yet: about 300 ms here,
 * exit code known) is exited, and `stopping` (a stop under way, the process still there) running.
 */
export function stateOf(docker: string | undefined): { state: ContainerState; engineRestarting?: true } {
  switch (docker) {
    case 'created':
      return { state: 'created' };
    case 'running':
    case 'paused':
    case 'stopping':
      return { state: 'running' };
    case 'exited':
    case 'stopped':
      return { state: 'exited' };
    case 'restarting':
      return { state: 'unknown', engineRestarting: true };
    default:
      return { state: 'unknown' };
  }
}

/**
 * A pause container's state as its sandbox's, as cri-dockerd says a listed one
 * (core/convert.go toRuntimeAPISandboxState: Docker's "Up…", paused included, is SANDBOX_READY,
 * anything else SANDBOX_NOTREADY): ready while it runs as a container would be running. Its
 * PodSandboxStatus also wants an IP for READY; podrun does not (a host-network sandbox on Docker
 * has none, and is as ready as its pause process). Restarting is flagged, as for a container.
 */
export function sandboxStateOf(docker: string | undefined): Pick<EngineSandbox, 'state' | 'engineRestarting'> {
  const { state, engineRestarting } = stateOf(docker);
  return { state: state === 'running' ? 'ready' : 'notready', ...(engineRestarting ? { engineRestarting } : {}) };
}

/** Whether a container of Docker's is a pod's sandbox (its pause container): podrun's own label says. */
function isSandbox(labels: Record<string, string> | undefined): boolean {
  return labels?.[LABEL.containerType] === 'sandbox';
}

/** A pause container as its sandbox's record. */
function sandboxRecord(
  o: Pick<EngineSandbox, 'id' | 'name' | 'image' | 'labels'>,
  createdAt: number | undefined,
  docker: string | undefined,
  ip: string | undefined,
): EngineSandbox {
  return { kind: 'sandbox', ...o, ...(createdAt !== undefined ? { createdAt } : {}), ...sandboxStateOf(docker), ...(ip ? { network: { ip } } : {}) };
}

/** An inspect's state as podrun's container status. */
export function statusFromInspect(state: Docker.ContainerInspectInfo['State'], restartCount: number | undefined): ContainerStatus {
  const startedAt = engineTime(state.StartedAt);
  const finishedAt = engineTime(state.FinishedAt);
  return {
    state: stateOf(state.Status).state,
    exitCode: state.ExitCode,
    ...(startedAt ? { startedAt } : {}),
    ...(finishedAt ? { finishedAt } : {}),
    oomKilled: state.OOMKilled,
    ...(state.Error ? { error: state.Error } : {}),
    engineRestarts: restartCount ?? 0,
    restarting: state.Restarting,
  };
}

/** The exit code in a list entry's status text ("Exited (137) 5 seconds ago"). */
function exitCodeOf(status: string | undefined): number | undefined {
  const m = /^Exited \((-?\d+)\)/.exec(status ?? '');
  return m ? Number(m[1]) : undefined;
}

function ipOf(networks: Record<string, { IPAddress?: string }> | undefined): string | undefined {
  return Object.values(networks ?? {}).find((n) => n.IPAddress)?.IPAddress || undefined;
}

/** Seconds in each unit of Docker's uptime text (go-units' HumanDuration). */
const UNIT_S: Readonly<Record<string, number>> = { second: 1, minute: 60, hour: 3600, day: 86_400, week: 604_800, month: 2_592_000, year: 31_536_000 };

/**
 * How long a running container has been up at least, in ms, by its list entry's status text
 * ("Up 5 seconds", "Up About a minute (healthy)", "Up Less than a second"), which Docker writes
 * from its instance's start (a restart in place starts it anew), on its own clock. Undefined for
 * any other text. Seconds and minutes are rounded down; hours are rounded to the nearest, and days
 * and longer counted from those, so from an hour on, half an hour less (and never under an hour).
 */
export function upAtLeastMs(status: string | undefined): number | undefined {
  const m = /^Up (Less than a second|About a minute|About an hour|(\d+) (second|minute|hour|day|week|month|year)s?)(?: \(|$)/.exec(status ?? '');
  if (!m) return undefined;
  if (m[1] === 'Less than a second') return 0;
  if (m[1] === 'About a minute') return 60_000;
  if (m[1] === 'About an hour') return 3_600_000;
  const n = Number(m[2]);
  const unit = UNIT_S[m[3] ?? ''] ?? 0;
  const s = unit < 3600 ? n * unit : Math.max(3600, n * unit - 1800);
  return s * 1000;
}

/**
 * A list entry as podrun's record, a sandbox's for a pause container; `now`: when the answer came
 * (its uptime counts to then at most).
 */
export function recordFromListed(info: Docker.ContainerInfo, now = Date.now()): EngineRecord {
  const ip = ipOf(info.NetworkSettings?.Networks);
  const name = (info.Names?.[0] ?? '').replace(/^\//, '');
  const created = listedSeconds(info.Created);
  if (isSandbox(info.Labels)) return sandboxRecord({ id: info.Id, name, image: info.Image, labels: info.Labels }, created, info.State, ip);
  const exitCode = exitCodeOf(info.Status);
  const up = info.State === 'running' || info.State === 'stopping' ? upAtLeastMs(info.Status) : undefined;
  const { state, engineRestarting } = stateOf(info.State);
  return {
    kind: 'container',
    id: info.Id,
    name,
    image: info.Image,
    labels: info.Labels ?? {},
    state,
    ...(engineRestarting ? { engineRestarting } : {}),
    ...(exitCode !== undefined ? { exitCode } : {}),
    ...(created !== undefined ? { created } : {}),
    ...(ip ? { ip } : {}),
    ...(up !== undefined ? { startedBy: now - up } : {}),
  };
}

/** An inspect answer as the record a list would have given, so the cache keeps one kind whichever call told it. */
export function recordFromInspect(i: Docker.ContainerInspectInfo): EngineRecord {
  const ip = ipOf(i.NetworkSettings?.Networks);
  const name = i.Name.replace(/^\//, '');
  const created = inspectedSeconds(i.Created);
  if (isSandbox(i.Config.Labels)) return sandboxRecord({ id: i.Id, name, image: i.Config.Image, labels: i.Config.Labels }, created, i.State.Status, ip);
  const { state, engineRestarting } = stateOf(i.State.Status);
  return {
    kind: 'container',
    id: i.Id,
    name,
    image: i.Config.Image,
    labels: i.Config.Labels ?? {},
    state,
    ...(engineRestarting ? { engineRestarting } : {}),
    ...(state === 'exited' || (state === 'unknown' && !engineRestarting) ? { exitCode: i.State.ExitCode } : {}),
    ...(created !== undefined ? { created } : {}),
    ...(ip ? { ip } : {}),
  };
}

/** The engine's clock in its info answer (`SystemTime`, RFC 3339 to the nanosecond), in ms; undefined when it tells none. */
export function engineClockMs(info: unknown): number | undefined {
  const time = (info as { SystemTime?: unknown } | null | undefined)?.SystemTime;
  const ms = typeof time === 'string' ? Date.parse(time) : NaN;
  return Number.isFinite(ms) ? ms : undefined;
}

/** One line of Docker's event stream, as it comes. */
export interface DockerEvent {
  Action?: string;
  id?: string;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
  timeNano?: number;
  time?: number;
}

/** Docker's actions that change a container's life (Podman's compatible API says remove for destroy). */
const KINDS: Readonly<Record<string, ContainerEvent['kind']>> = {
  create: 'created',
  start: 'started',
  unpause: 'started',
  restart: 'started',
  die: 'exited',
  destroy: 'removed',
  remove: 'removed',
};

/**
 * What a pause container's change says of its sandbox: running is ready, its end (or never a
 * start) not ready, as sandboxStateOf; its create says nothing yet (SandboxEvent).
 */
const SANDBOX_STATES: Readonly<Record<ContainerEvent['kind'], SandboxEvent['state'] | undefined>> = {
  created: undefined,
  started: 'ready',
  exited: 'notready',
  removed: 'removed',
};

/**
 * A Docker event as podrun's, or undefined for news that changes no container's life (execs,
 * kills before the die, renames, updates); a pause container's as its sandbox's. Docker mixes its
 * own attributes into the labels: those it adds are taken out.
 */
export function eventFromDocker(raw: DockerEvent): EngineEvent | undefined {
  const kind = Object.hasOwn(KINDS, raw.Action ?? '') ? KINDS[raw.Action!] : undefined;
  const id = raw.Actor?.ID ?? raw.id ?? '';
  if (!kind || !id) return undefined;
  const { name, image, exitCode, ...labels } = raw.Actor?.Attributes ?? {};
  const timeMs = raw.timeNano ? Math.floor(raw.timeNano / 1e6) : (raw.time ?? 0) * 1000;
  if (isSandbox(labels)) {
    const state = SANDBOX_STATES[kind];
    if (!state) return undefined;
    return { kind: 'sandbox', state, id, labels, ...(name !== undefined ? { name } : {}), ...(image !== undefined ? { image } : {}), timeMs };
  }
  const code = exitCode !== undefined && exitCode !== '' ? Number(exitCode) : NaN;
  return {
    kind,
    id,
    labels,
    ...(name !== undefined ? { name } : {}),
    ...(image !== undefined ? { image } : {}),
    ...(Number.isInteger(code) ? { exitCode: code } : {}),
    timeMs,
  };
}

/** The parts of Docker's stats answer podrun reads (cgroup v1 and v2 alike). */
export interface DockerStats {
  read: string;
  cpu_stats: { cpu_usage: { total_usage: number; usage_in_usermode?: number; usage_in_kernelmode?: number }; system_cpu_usage?: number; online_cpus?: number };
  precpu_stats?: { cpu_usage?: { total_usage?: number }; system_cpu_usage?: number };
  memory_stats: { usage?: number; limit?: number; stats?: Record<string, number> };
  networks?: Record<
    string,
    {
      rx_bytes: number;
      rx_errors: number;
      tx_bytes: number;
      tx_errors: number;
      rx_packets?: number;
      tx_packets?: number;
      rx_dropped?: number;
      tx_dropped?: number;
    }
  >;
  pids_stats?: { current?: number };
  preread?: string;
}

function interfaceFromDocker(n: NonNullable<DockerStats['networks']>[string]): InterfaceCounters {
  return {
    rxBytes: n.rx_bytes,
    rxErrors: n.rx_errors,
    txBytes: n.tx_bytes,
    txErrors: n.tx_errors,
    ...(n.rx_packets !== undefined ? { rxPackets: n.rx_packets } : {}),
    ...(n.tx_packets !== undefined ? { txPackets: n.tx_packets } : {}),
    ...(n.rx_dropped !== undefined ? { rxDropped: n.rx_dropped } : {}),
    ...(n.tx_dropped !== undefined ? { txDropped: n.tx_dropped } : {}),
  };
}

/**
 * A stats answer as podrun's reading. A one-shot answer (or a container's first) has no previous
 * sample, which Docker writes as the zero time and zero counters: the reading then has none.
 */
export function readingFromDocker(s: DockerStats): ContainerReading {
  const u = s.cpu_stats.cpu_usage;
  const before = s.precpu_stats?.cpu_usage?.total_usage;
  const earlier = engineTime(s.preread) && before !== undefined ? { time: s.preread!, cpuUsageNs: before } : undefined;
  return {
    time: s.read,
    source: 'engine',
    cpu: {
      usageNs: u.total_usage,
      ...(u.usage_in_usermode !== undefined ? { userNs: u.usage_in_usermode } : {}),
      ...(u.usage_in_kernelmode !== undefined ? { systemNs: u.usage_in_kernelmode } : {}),
    },
    ...(earlier ? { earlier } : {}),
    memory: memoryReading(s.memory_stats.usage, s.memory_stats.limit, s.memory_stats.stats),
    ...(s.networks ? { networks: Object.fromEntries(Object.entries(s.networks).map(([name, n]) => [name, interfaceFromDocker(n)])) } : {}),
    ...(s.pids_stats?.current !== undefined ? { processes: s.pids_stats.current } : {}),
  };
}
