import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { V1Pod } from '../../src/status/v1.js';
import { AgentProcess } from './agent-helpers.js';
import type { EngineBed } from './engine-beds.js';
import { unique, until, type CliResult, type World } from './helpers.js';

/** What runs the CLI: a World (the Docker engine) or an engine bed. */
interface Cli {
  cli(...args: string[]): Promise<CliResult>;
}

/** The agent's view of one pod (via `podrun get pods -o json`, which asks the agent). */
export async function agentPod(world: Cli, ns: string, name: string): Promise<V1Pod | undefined> {
  const r = await world.cli('get', 'pods', '-n', ns, '-o', 'json');
  if (r.code !== 0) return undefined;
  return (JSON.parse(r.out) as { items: V1Pod[] }).items.find((p) => p.metadata.name === name);
}

export async function untilPod(world: Cli, ns: string, name: string, what: string, test: (p: V1Pod) => boolean, timeoutMs = 30_000): Promise<V1Pod> {
  return until(
    what,
    async () => {
      const p = await agentPod(world, ns, name);
      return p && test(p) ? p : undefined;
    },
    timeoutMs,
  );
}

export function container(p: V1Pod, name: string) {
  return [...(p.status.containerStatuses ?? []), ...(p.status.initContainerStatuses ?? [])].find((c) => c.name === name);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * One agent watching a manifest directory for a whole test file, and a writer of pods into it
 * (namespace and a 1 s grace period filled in). On an engine bed, the agent runs on its engine
 * and the bed cleans up.
 */
export function supervisedDirectory(
  on: World | EngineBed,
  prefix: string,
  agentArgs: string[],
): {
  ns: string;
  agent: () => AgentProcess;
  write: (name: string, spec: string) => void;
} {
  const bed = 'kind' in on ? on : undefined;
  const world = bed ? bed.world : (on as World);
  const ns = unique(prefix);
  const dir = join(world.dir, 'manifests');
  mkdirSync(dir, { recursive: true });
  let agent: AgentProcess | undefined;
  beforeAll(async () => {
    agent = bed ? bed.agent(['--manifest-dir', dir, ...agentArgs]) : new AgentProcess(world.stateDir, ['--manifest-dir', dir, ...agentArgs]);
    await agent.started();
  });
  afterAll(async () => {
    await agent?.stop();
    if (!bed) await world.cleanup();
  });
  return {
    ns,
    agent: () => {
      if (!agent) throw new Error('the agent has not started');
      return agent;
    },
    write: (name, spec) =>
      writeFileSync(
        join(dir, `${name}.yaml`),
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
${spec}`,
      ),
  };
}
