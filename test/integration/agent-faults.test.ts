import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import { AgentProcess } from './agent-helpers.js';
import { FaultyEngine } from './engine-helpers.js';
import { podContainers, TEST_IMAGE, unique, until, World } from './helpers.js';

// An engine that is sick rather than gone: every call answered with a 500, or slowly. The agent
// stays up, dials it once a second instead of hammering it, converges once it heals, and get pods never
// passes off the cache's memory as the present.
const world = new World();
const faulty = new FaultyEngine();
const ns = unique('faulty');
let agent: AgentProcess | undefined;
afterAll(async () => {
  await agent?.stop();
  await faulty.stop();
  await world.cleanup();
});

const LIST = /^GET \/(v[\d.]+\/)?containers\/json$/;
const EVENTS = /^GET \/(v[\d.]+\/)?events$/;

describe('the agent on a failing engine', () => {
  it('stays up through 500s and slow answers, dials it once a second, and converges after', async () => {
    await faulty.start();
    const dir = join(world.dir, 'manifests');
    mkdirSync(dir);
    const name = unique('sick');
    writeFileSync(
      join(dir, 'pod.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: steady, image: ${TEST_IMAGE}, command: [sleep, '3600']}
  - {name: blinker, image: ${TEST_IMAGE}, command: [sh, -c, 'sleep 2; exit 1']}
`,
    );
    agent = new AgentProcess(world.stateDir, ['--manifest-dir', dir, '--crash-backoff-initial', '1s', '--crash-backoff-max', '1s'], {
      DOCKER_HOST: faulty.host,
    });
    await agent.started();
    const instances = async (c: string): Promise<{ id: string; count: number; state: string }[]> =>
      (await podContainers(ns, name))
        .filter((x) => x.Labels[LABEL.containerName] === c)
        .map((x) => ({ id: x.Id, count: Number(x.Labels[LABEL.restartCount]), state: x.State }));
    const newest = async (c: string): Promise<number> => Math.max(-1, ...(await instances(c)).map((x) => x.count));
    await until('the blinker to have restarted once', async () => ((await newest('blinker')) >= 1 ? true : undefined), 30_000);
    const steady = (await instances('steady')).map((x) => x.id);
    expect(steady).toHaveLength(1);

    // Sick: every call fails, and the event stream is cut.
    const from = faulty.requests.length;
    const since = (what: RegExp): number => faulty.requests.slice(from).filter((r) => what.test(r)).length;
    faulty.mode = { kind: 'fail', status: 500 };
    faulty.dropConnections();
    await agent.waitForLog('engine connection lost');
    const got = await world.cli('--docker-host', faulty.host, 'get', 'pods', '-n', ns);
    expect(got.out).not.toContain('Running');
    expect(got.code).toBe(3);
    expect(got.err).toContain('podrun: the Docker engine is failing: list containers: injected fault');
    // Meanwhile the agent dials the engine once a second (a GET /events each: the kubelet's relist
    // period), one dial at a time, and its relist waits for the dial: eight dials, and no list of
    // its own, so a sick engine is asked a handful of calls, not a loop.
    await until('eight dials of the sick engine', async () => (since(EVENTS) >= 8 ? true : undefined), 60_000);
    expect(agent.proc.exitCode).toBeNull();
    expect(since(LIST)).toBeLessThanOrEqual(2);
    expect(faulty.faultedRequests).toBeLessThan(30);

    // Healed: the blinker, dead meanwhile, is restarted; the steady container was never touched.
    faulty.mode = { kind: 'pass' };
    const before = await newest('blinker');
    await until('the blinker to be restarted after the engine healed', async () => ((await newest('blinker')) > before ? true : undefined), 30_000);

    // Slow: every call takes 1.5 s. Still up, still converging.
    faulty.mode = { kind: 'slow', delayMs: 1500 };
    const slowBefore = await newest('blinker');
    await until('the blinker to be restarted on a slow engine', async () => ((await newest('blinker')) > slowBefore ? true : undefined), 45_000);
    faulty.mode = { kind: 'pass' };
    expect(agent.proc.exitCode).toBeNull();
    expect((await instances('steady')).map((x) => x.id)).toEqual(steady);
    expect((await instances('steady'))[0]?.state).toBe('running');
  });
});
