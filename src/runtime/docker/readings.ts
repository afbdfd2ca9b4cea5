import type Docker from 'dockerode';
import { isNotFound } from './engine.js';
import { statSync } from 'node:fs';
import type { ContainerDisk, ContainerReading, EngineFacts } from '../runtime-types.js';
import type { EngineCalls } from './engine.js';
import { readingFromDocker, type DockerStats } from './records.js';

// Readings (the stats role): a container's counters and disk, and the engine's facts about the node.

/**
 * One container's resource counters as the engine reads them from its cgroup. `oneShot` answers
 * at once with no previous sample (the caller keeps its own, for rates); without it the engine
 * waits about a second to include one, as `docker stats --no-stream` does.
 */
export async function containerStatsOf(e: EngineCalls, id: string, oneShot: boolean): Promise<ContainerReading | undefined> {
  const c = e.docker.getContainer(id);
  return e
    .call('stats container', () => c.stats({ stream: false, ...(oneShot ? { 'one-shot': true } : {}) } as { stream: false }))
    .then(
      (s) => readingFromDocker(s as unknown as DockerStats),
      (err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      },
    );
}

/** A container's writable layer size and log file, for filesystem usage (the engine sums the layer: call it seldom). */
export async function containerDiskOf(e: EngineCalls, id: string): Promise<ContainerDisk | undefined> {
  const info = await e
    .call('inspect container size', () => e.docker.getContainer(id).inspect({ size: true } as Docker.ContainerInspectOptions))
    .catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
  if (!info) return undefined;
  const sized = info as Docker.ContainerInspectInfo & { SizeRw?: number };
  const logBytes = info.LogPath ? logFileBytes(info.LogPath) : undefined;
  return { ...(sized.SizeRw !== undefined ? { rwBytes: sized.SizeRw } : {}), ...(logBytes !== undefined ? { logBytes } : {}) };
}

/**
 * The json-file (or local) driver's current file, where this process can see it: a local
 * engine's. A remote engine's path is not here, and a driver that writes elsewhere has none.
 */
function logFileBytes(path: string): number | undefined {
  try {
    return statSync(path).size;
  } catch {
    return undefined;
  }
}

/** What the node status says of the engine. */
export async function engineFactsOf(e: EngineCalls): Promise<EngineFacts> {
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
