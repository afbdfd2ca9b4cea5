import type Docker from 'dockerode';
import { isNotFound } from './engine.js';
import type { EngineCalls, EngineStats } from './runtime-types.js';
import { statsFromDocker } from './docker/records.js';

// Readings (the stats role): a container's counters and disk, and the engine's facts about the node.

/**
 * One container's resource counters as the engine reads them from its cgroup. `oneShot` answers
 * at once with no previous sample (the caller keeps its own, for rates); without it the engine
 * waits about a second to include one, as `docker stats --no-stream` does.
 */
export async function containerStatsOf(e: EngineCalls, id: string, oneShot: boolean): Promise<EngineStats | undefined> {
  const c = e.docker.getContainer(id);
  return e.call('stats container', () => c.stats({ stream: false, ...(oneShot ? { 'one-shot': true } : {}) } as { stream: false })).then(
    (s) => statsFromDocker(s as unknown as EngineStats),
    (err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    },
  );
}

/** A container's writable layer size and log file, for filesystem usage (the engine sums the layer: call it seldom). */
export async function containerDiskOf(e: EngineCalls, id: string): Promise<{ rwBytes?: number; logPath?: string } | undefined> {
  const info = await e.call('inspect container size', () => e.docker.getContainer(id).inspect({ size: true } as Docker.ContainerInspectOptions)).catch((err: unknown) => {
    if (isNotFound(err)) return undefined;
    throw err;
  });
  if (!info) return undefined;
  const sized = info as Docker.ContainerInspectInfo & { SizeRw?: number };
  return { ...(sized.SizeRw !== undefined ? { rwBytes: sized.SizeRw } : {}), ...(info.LogPath ? { logPath: info.LogPath } : {}) };
}

/** What the node status says of the engine. */
export async function engineFactsOf(e: EngineCalls): Promise<{ version: string; rootDir: string; cpus: number; memoryBytes: number; operatingSystem: string; kernelVersion: string; architecture: string }> {
  const [info, version] = await Promise.all([e.call('engine info', () => e.docker.info()), e.call('engine version', () => e.docker.version())]);
  return {
    version: String(version.Version),
    rootDir: String(info.DockerRootDir ?? '/var/lib/docker'),
    cpus: Number(info.NCPU ?? 0),
    memoryBytes: Number(info.MemTotal ?? 0),
    operatingSystem: String(info.OperatingSystem ?? ''),
    kernelVersion: String(info.KernelVersion ?? ''),
    architecture: String(info.Architecture ?? ''),
  };
}

