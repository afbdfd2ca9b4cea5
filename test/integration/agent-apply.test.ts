import { describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LABEL } from '../../src/runtime/labels.js';
import { AgentSuite, pastRelist, sleepingPod, type AgentProcess } from './agent-helpers.js';
import { containerIds, docker, podContainers, TEST_IMAGE, unique, until } from './helpers.js';

const suite = new AgentSuite('handover');
const { world, ns } = suite;
let agent: AgentProcess | undefined;

const pod = (name: string, v = 'one'): string => sleepingPod(name, ns, v);

async function restartPolicies(name: string): Promise<string[]> {
  const list = await podContainers(ns, name);
  return Promise.all(
    list.filter((c) => c.State === 'running').map(async (c) => (await docker.getContainer(c.Id).inspect()).HostConfig.RestartPolicy?.Name ?? ''),
  );
}

describe('apply and the agent on the same state directory', () => {
  it('an agent adopts pods an earlier apply made, without restarting them, and takes over restarts from the engine', async () => {
    const name = unique('adopt');
    const file = world.write(`${name}.yaml`, pod(name));
    const applied = await world.cli('apply', file);
    expect(applied.code, applied.err).toBe(0);
    const before = await containerIds(ns, name);
    expect((await restartPolicies(name)).sort()).toEqual(['always', 'always']);

    agent = suite.run([]);
    await agent.started();
    await until('the agent to take over restarts', async () => ((await restartPolicies(name)).every((p) => p === 'no') ? true : undefined));
    expect(await containerIds(ns, name)).toEqual(before);

    // Supervised by the agent now: a container that dies is restarted by it.
    await docker.getContainer(before.a!).kill();
    const after = await until('the agent to restart the killed container', async () => {
      const ids = await containerIds(ns, name);
      const list = await podContainers(ns, name);
      return ids.a !== before.a && list.some((c) => c.Id === ids.a && c.State === 'running') ? ids : undefined;
    });
    expect(after.POD).toBe(before.POD);
    expect((await docker.getContainer(after.a!).inspect()).Config.Labels[LABEL.restartCount]).toBe('1');

    // Restart counts live on the engine, not in the agent: a new agent goes on from 1 to 2.
    await agent.stop();
    agent = suite.run([]);
    await agent.started();
    await docker.getContainer(after.a!).kill();
    const third = await until('the new agent to restart it again', async () => {
      const ids = await containerIds(ns, name);
      const list = await podContainers(ns, name);
      return ids.a !== after.a && list.some((c) => c.Id === ids.a && c.State === 'running') ? ids : undefined;
    });
    expect((await docker.getContainer(third.a!).inspect()).Config.Labels[LABEL.restartCount]).toBe('2');
    await until('get pods to show 2 restarts', async () =>
      new RegExp(`^${name}\\s+\\d/\\d\\s+\\w+\\s+2\\s`, 'm').test((await world.cli('get', 'pods', '-n', ns)).out) ? true : undefined,
    );
  });

  it('apply with an agent running hands the set over and waits; delete keeps it deleted', async () => {
    agent = suite.run([]);
    await agent.started();
    const name = unique('handed');
    const file = world.write(`${name}.yaml`, pod(name));
    const r = await world.cli('apply', file);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toContain('the agent supervising');
    expect(r.out).toContain('1 pod ready');
    const ids = await containerIds(ns, name);
    expect(await restartPolicies(name)).toEqual(['no', 'no']);

    world.write(`${name}.yaml`, pod(name, 'two'));
    expect((await world.cli('apply', file)).code).toBe(0);
    const edited = await containerIds(ns, name);
    expect(edited.POD).toBe(ids.POD);
    expect(edited.a).not.toBe(ids.a);

    const d = await world.cli('delete', '-n', ns, name);
    expect(d.code, d.err).toBe(0);
    await pastRelist(agent);
    expect(await podContainers(ns, name)).toEqual([]);
  });

  it('delete --grace-period with an agent running stops the pod with that grace period, and the agent does not bring it back', async () => {
    agent = suite.run([]);
    await agent.started();
    const name = unique('graced');
    // A container that ignores SIGTERM, with a long grace period of its own.
    const file = world.write(
      `${name}.yaml`,
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 3600
  containers:
  - {name: a, image: ${TEST_IMAGE}, command: [sh, -c, 'trap "" TERM; while true; do sleep 1; done']}
`,
    );
    expect((await world.cli('apply', file)).code).toBe(0);
    // Stopped with the deletion's 1 s (the pod's hour would outlast the test), and not brought back.
    const d = await world.cli('delete', '-n', ns, name, '--grace-period', '1');
    expect(d.code, d.err).toBe(0);
    await pastRelist(agent);
    expect(await podContainers(ns, name)).toEqual([]);
    expect(agent.logs()).toContain(`pod ${ns}/${name}: deleted`);
  });

  it('reports the same pod from two files as a conflict and keeps the running one', async () => {
    const dir = join(world.dir, unique('dup'));
    mkdirSync(dir);
    const name = unique('twice');
    writeFileSync(join(dir, 'b.yaml'), pod(name, 'from-b'));
    agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    await until('the pod to run', async () => ((await podContainers(ns, name)).filter((c) => c.State === 'running').length === 2 ? true : undefined));
    const first = await containerIds(ns, name);

    // a.yaml sorts first, but b.yaml's pod is the one running: it stays.
    writeFileSync(join(dir, 'a.yaml'), pod(name, 'from-a'));
    await agent.waitForLog(
      `conflict: pod ${ns}/${name} is also declared, differently, by ${join(dir, 'a.yaml')}; running the one from ${join(dir, 'b.yaml')} (remove the others, or make them alike, to end this)`,
    );
    await pastRelist(agent);
    expect(await containerIds(ns, name)).toEqual(first);
  });
});
