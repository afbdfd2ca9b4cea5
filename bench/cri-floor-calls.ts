/**
 * The CRI floor's calls, shared by the floor (bench/cri-floor.ts) and the whole-process Node tool
 * (bench/cri-tool.ts): a pod's sandbox and one container, made with nothing podrun adds.
 */
import { join } from 'node:path';
import type { CriClient } from '../src/runtime/cri/client.js';
import type { ContainerConfigInput, PodSandboxConfigInput } from '../src/runtime/cri/messages.js';
import { Slots } from '../src/runtime/slots.js';

/** `label` is `key=value`, put on every sandbox and container (the bench removes by it). */
export function floorSandbox(name: string, uid: string, label: string, logDir: string): PodSandboxConfigInput {
  const [key, value] = label.split('=') as [string, string];
  return {
    metadata: { name, uid, namespace: 'bench-floor', attempt: 0 },
    hostname: name,
    logDirectory: join(logDir, `bench-floor_${name}_${uid}`),
    labels: { [key]: value },
    linux: { securityContext: { namespaceOptions: { pid: 1 } } },
  };
}

export function floorContainer(attempt: number, label: string, image: string): ContainerConfigInput {
  const [key, value] = label.split('=') as [string, string];
  return {
    metadata: { name: 'c0', attempt },
    image: { image },
    command: ['sh', '-c', 'exec sleep 3600'],
    labels: { [key]: value },
    logPath: `c0/${attempt}.log`,
  };
}

/** Each pod's RunPodSandbox, CreateContainer and StartContainer, 4 calls at once, as podrun's bound. */
export async function coldCalls(client: CriClient, names: string[], label: string, logDir: string, image: string): Promise<void> {
  const slots = new Slots(4);
  const value = label.split('=')[1] ?? '';
  await Promise.all(
    names.map(async (name, i) => {
      const cfg = floorSandbox(name, `${value}-${i}-${Date.now()}`, label, logDir);
      const sb = await slots.run(() => client.runPodSandbox(cfg));
      const id = await slots.run(() => client.createContainer(sb, floorContainer(0, label, image), cfg));
      await slots.run(() => client.startContainer(id));
    }),
  );
}
