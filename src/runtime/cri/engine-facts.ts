import { readFileSync } from 'node:fs';
import { arch, cpus, release, totalmem } from 'node:os';
import type { CriRuntimeService } from './runtime-service.js';

// What the node status says of a CRI runtime and of the node it runs on.

function osName(): string {
  try {
    return /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? 'Linux';
  } catch {
    return 'Linux';
  }
}

/** What the node status says of the runtime: its version from Version, the rest of the node itself (the runtime is local). */
export async function criEngineFacts(
  client: CriRuntimeService,
): Promise<{ version: string; rootDir: string; cpus: number; memoryBytes: number; operatingSystem: string; kernelVersion: string; architecture: string }> {
  const [v, fs] = await Promise.all([client.version(), client.imageFsInfo().catch(() => undefined)]);
  const a = arch();
  return {
    version: v.runtimeVersion,
    rootDir: fs?.imageFilesystems[0]?.fsId?.mountpoint || '/var/lib/containerd',
    cpus: cpus().length,
    memoryBytes: totalmem(),
    operatingSystem: osName(),
    kernelVersion: release(),
    architecture: a === 'x64' ? 'x86_64' : a === 'arm64' ? 'aarch64' : a,
  };
}
