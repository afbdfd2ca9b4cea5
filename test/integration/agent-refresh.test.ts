import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import { AgentSuite } from './agent-helpers.js';
import { FaultyEngine } from './engine-helpers.js';
import { docker, podContainers, TEST_IMAGE, unique, until } from './helpers.js';

// The engine serves a list call in O(every container it holds): seconds with a pile of dead
// ones. The agent learns what happened from events and, after acting on a pod, looks at that pod's
// containers by id. A list is only the periodic safety net (here set out of the test's reach).
const suite = new AgentSuite('refresh');
const proxy = new FaultyEngine();
afterAll(() => proxy.stop());

const lists = (): number => proxy.requests.filter((r) => /^GET \/(v[\d.]+\/)?containers\/json$/.test(r)).length;

describe('the agent after acting on a pod', () => {
  it('creates pods and restarts a killed container without one list call, and answers get pods without any engine call', async () => {
    await proxy.start();
    const dir = join(suite.world.dir, 'manifests');
    mkdirSync(dir);
    const agent = suite.run(['--manifest-dir', dir, '--relist-period', '10m', '--resync-period', '10m'], { DOCKER_HOST: proxy.host });
    await agent.started();
    const atStart = lists();
    expect(atStart).toBeGreaterThan(0);

    const name = unique('nolist');
    writeFileSync(
      join(dir, 'pod.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${suite.ns}}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - {name: prepare, image: ${TEST_IMAGE}, command: ['true']}
  containers:
  - {name: app, image: ${TEST_IMAGE}, command: [sleep, '3600']}
`,
    );
    const app = async (): Promise<{ Id: string; count: number; State: string }[]> =>
      (await podContainers(suite.ns, name))
        .filter((c) => c.Labels[LABEL.containerName] === 'app')
        .map((c) => ({ Id: c.Id, State: c.State, count: Number(c.Labels[LABEL.restartCount]) }));
    const first = await until('the app to run', async () => (await app()).find((c) => c.State === 'running'), 30_000).catch((e: Error) => {
      throw new Error(`${e.message}\n${agent.logs()}`);
    });
    await docker.getContainer(first.Id).kill();
    const second = await until('the app to be restarted', async () => (await app()).find((c) => c.count === first.count + 1 && c.State === 'running'), 30_000);
    // Past the refresh that follows the restart: the agent's look at the new container, by id, after it started it.
    const path = (verb: string, what: string): RegExp => new RegExp(`^${verb} /(v[\\d.]+/)?containers/${second.Id}/${what}$`);
    await until('the look at the restarted app', async () => {
      const started = proxy.requests.findIndex((r) => path('POST', 'start').test(r));
      return started >= 0 && proxy.requests.slice(started).some((r) => path('GET', 'json').test(r)) ? true : undefined;
    });
    expect(lists()).toBe(atStart);

    // Reading the pods through the agent again asks the engine nothing: what status shows of a
    // running pod (its IP, its containers' start times) does not change, and is read once.
    const calls = (): number => proxy.requests.length;
    const get = async (): Promise<void> => {
      const r = await suite.world.cli('get', 'pods', '-n', suite.ns, name, '-o', 'json');
      const pod = JSON.parse(r.out) as { status: { phase: string; podIP?: string } };
      expect([pod.status.phase, pod.status.podIP]).toEqual(['Running', expect.stringMatching(/^\d+\.\d+\.\d+\.\d+$/)]);
    };
    await get();
    const before = calls();
    await get();
    await get();
    expect(proxy.requests.slice(before).filter((r) => !/\/events|\/_ping|\/version/.test(r))).toEqual([]);
  });
});
