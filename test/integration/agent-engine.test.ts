import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LABEL } from '../../src/runtime/labels.js';
import { AgentProcess, metricGrown } from './agent-helpers.js';
import { PrivateEngine } from './engine-helpers.js';
import { TEST_IMAGE, unique, until, World } from './helpers.js';

const world = new World();
const engine = new PrivateEngine();
let agent: AgentProcess | undefined;
afterAll(async () => {
  await agent?.stop();
  await engine.destroy();
  await world.cleanup();
});

describe('the agent when the engine restarts', () => {
  it('survives dockerd stopping and starting, and converges again', async () => {
    await engine.start();
    engine.loadTestImages();
    const dir = join(world.dir, 'manifests');
    mkdirSync(dir);
    const name = unique('phoenix');
    writeFileSync(
      join(dir, 'pod.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: a, image: ${TEST_IMAGE}, command: [sleep, '3600']}
  - {name: b, image: ${TEST_IMAGE}, command: [sleep, '3600']}
`,
    );
    agent = new AgentProcess(world.stateDir, ['--manifest-dir', dir], { DOCKER_HOST: engine.host, PODRUN_NETWORK: 'none' });
    await agent.started();
    const runningNames = async (): Promise<string[]> =>
      (await engine.docker.listContainers({ filters: JSON.stringify({ label: [`${LABEL.podName}=${name}`] }) }))
        .map((c) => c.Labels[LABEL.containerName] ?? '')
        .sort();
    await until('the pod on the private engine', async () => ((await runningNames()).join() === 'POD,a,b' ? true : undefined));

    await engine.stop();
    await agent.waitForLog('engine connection lost');
    // Two of its reconnects refused (failed engine calls, on its own metrics), and it lives on.
    await metricGrown(agent, 'podrun_runtime_operations_errors_total', 2);
    expect(agent.proc.exitCode).toBeNull();
    // get pods must not show what the cache last saw as if it were now.
    const g = await world.cli('--docker-host', engine.host, 'get', 'pods');
    expect(g.out).not.toContain('Running');
    expect(g.code).toBe(3);
    expect(g.err).toContain(`podrun: cannot reach the Docker engine at ${engine.host}`);

    await engine.start();
    await until('the pod to run again', async () => ((await runningNames()).join() === 'POD,a,b' ? true : undefined), 40_000);
    expect(agent.proc.exitCode).toBeNull();
    // No duplicates: exactly one running instance of each, the old ones dead.
    const all = await engine.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${LABEL.podName}=${name}`] }) });
    expect(all.filter((c) => c.State === 'running')).toHaveLength(3);
  });
});
