import type Docker from 'dockerode';
import type { ContainerState, EngineContainer } from '../observed.js';
import type { ContainerStatus, EngineEvent, EngineStats } from '../runtime-types.js';

// Docker's answers turned into podrun's engine records (runtime-types.ts): the only place that
// knows their field names, the "never" zero time, or the status text. Pure.

/** Docker writes "never" (not started, not finished) as the zero time of Go. */
export function engineTime(t: string | undefined): string | undefined {
  return t && !t.startsWith('0001-') ? t : undefined;
}

/** An inspect's state as podrun's container status. */
export function statusFromInspect(state: Docker.ContainerInspectInfo['State'], restartCount: number | undefined): ContainerStatus {
  const startedAt = engineTime(state.StartedAt);
  const finishedAt = engineTime(state.FinishedAt);
  return {
    state: state.Status as ContainerState,
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

/** A list entry as podrun's record. */
export function recordFromListed(info: Docker.ContainerInfo): EngineContainer {
  const exitCode = exitCodeOf(info.Status);
  const ip = ipOf(info.NetworkSettings?.Networks);
  return {
    id: info.Id,
    name: (info.Names?.[0] ?? '').replace(/^\//, ''),
    image: info.Image,
    labels: info.Labels ?? {},
    state: info.State as ContainerState,
    ...(exitCode !== undefined ? { exitCode } : {}),
    created: info.Created,
    ...(ip ? { ip } : {}),
  };
}

/** An inspect answer as the record a list would have given, so the cache keeps one kind whichever call told it. */
export function recordFromInspect(i: Docker.ContainerInspectInfo): EngineContainer {
  const state = i.State.Status as ContainerState;
  const ip = ipOf(i.NetworkSettings?.Networks);
  return {
    id: i.Id,
    name: i.Name.replace(/^\//, ''),
    image: i.Config.Image,
    labels: i.Config.Labels ?? {},
    state,
    ...(state === 'exited' || state === 'dead' ? { exitCode: i.State.ExitCode } : {}),
    created: Math.floor(Date.parse(i.Created) / 1000),
    ...(ip ? { ip } : {}),
  };
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
const KINDS: Readonly<Record<string, EngineEvent['kind']>> = {
  create: 'created',
  start: 'started',
  unpause: 'started',
  restart: 'started',
  pause: 'paused',
  die: 'exited',
  destroy: 'removed',
  remove: 'removed',
};

/**
 * A Docker event as podrun's, or undefined for news that changes no container's life (execs,
 * kills before the die, renames, updates). Docker mixes its own attributes into the labels:
 * those it adds are taken out.
 */
export function eventFromDocker(raw: DockerEvent): EngineEvent | undefined {
  const kind = Object.hasOwn(KINDS, raw.Action ?? '') ? KINDS[raw.Action!] : undefined;
  const id = raw.Actor?.ID ?? raw.id ?? '';
  if (!kind || !id) return undefined;
  const { name, image, exitCode, ...labels } = raw.Actor?.Attributes ?? {};
  const code = exitCode !== undefined && exitCode !== '' ? Number(exitCode) : NaN;
  return {
    kind,
    id,
    labels,
    ...(name !== undefined ? { name } : {}),
    ...(image !== undefined ? { image } : {}),
    ...(Number.isInteger(code) ? { exitCode: code } : {}),
    timeMs: raw.timeNano ? Math.floor(raw.timeNano / 1e6) : (raw.time ?? 0) * 1000,
  };
}

/**
 * A stats answer as podrun's reading: a one-shot answer (or a container's first) has no previous
 * sample, which Docker writes as the zero time and zero counters; the reading then has none.
 */
export function statsFromDocker(s: EngineStats): EngineStats {
  if (engineTime(s.preread)) return s;
  const { preread: _preread, precpu_stats: _precpu, ...rest } = s;
  return rest;
}
