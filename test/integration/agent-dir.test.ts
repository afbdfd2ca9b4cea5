import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { LABEL } from '../../src/runtime/labels.js';
import { AgentSuite, pastRelist, type AgentProcess } from './agent-helpers.js';
import { containerIds, docker, freePort, podContainers, podEvents, recordPodEvents, stopPodEvents, TEST_IMAGE, unique, until } from './helpers.js';

beforeAll(recordPodEvents);
afterAll(stopPodEvents);

const suite = new AgentSuite('agentdir');
const { world, ns } = suite;
let agent: AgentProcess | undefined;

function pod(name: string, env = 'one', extra = ''): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: steady
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
  - name: moving
    image: ${TEST_IMAGE}
    command: [sh, -c, 'echo $V; exec sleep 3600']
    env: [{name: V, value: ${env}}]
${extra}`;
}

async function running(name: string, names = ['POD', 'steady', 'moving']): Promise<Record<string, string>> {
  return until(`pod ${name} to run`, async () => {
    const list = await podContainers(ns, name);
    const up = list.filter((c) => c.State === 'running').map((c) => c.Labels[LABEL.containerName]);
    return names.every((n) => up.includes(n)) ? containerIds(ns, name) : undefined;
  });
}

/** Creates of app containers of the pod so far, from its labels (each create is one instance). */
async function instances(name: string, container: string): Promise<number> {
  return (await podContainers(ns, name)).filter((c) => c.Labels[LABEL.containerName] === container).length;
}

describe('the agent with a watched directory', () => {
  it("runs added files, replaces only an edited container, keeps an invalid file's pod, deletes a removed file's pod", async () => {
    const dir = join(world.dir, unique('dir'));
    mkdirSync(dir);
    const name = unique('web');
    agent = suite.run(['--manifest-dir', dir]);
    await agent.started();

    writeFileSync(join(dir, `${name}.yaml`), pod(name));
    const first = await running(name);

    writeFileSync(join(dir, `${name}.yaml`), pod(name, 'two'));
    const second = await until('the edited container to be replaced', async () => {
      const ids = await containerIds(ns, name);
      return ids.moving !== first.moving ? ids : undefined;
    });
    expect(second.POD).toBe(first.POD);
    expect(second.steady).toBe(first.steady);

    // Invalid: the pod stays exactly as it is, and the error names file, line and field.
    writeFileSync(
      join(dir, `${name}.yaml`),
      pod(name, 'three').replace("command: [sleep, '3600']", "command: [sleep, '3600']\n    ports: [{containerPort: 99999}]"),
    );
    await agent.waitForLog(`${join(dir, `${name}.yaml`)}:10:29 spec.containers[0].ports[0].containerPort: must be <= 65535 (keeping the last good version)`);
    const described = await world.cli('describe', 'pod', '-n', ns, name);
    expect(described.out).toMatch(
      /Warning\s+FailedValidation\s+.*spec\.containers\[0\]\.ports\[0\]\.containerPort: must be <= 65535 \(running the last good version\)/,
    );
    const status = JSON.parse(readFileSync(join(world.stateDir, 'agent-status.json'), 'utf8')) as { sources: { name: string; errors: string[] }[] };
    expect(status.sources.find((s) => s.name === `dir:${dir}`)?.errors[0]).toContain('containerPort: must be <= 65535');
    await pastRelist(agent); // past a rescan and a relist: still untouched
    expect(await containerIds(ns, name)).toEqual(second);
    // Emptied (as a write caught between truncate and write looks): the pod stays too.
    writeFileSync(join(dir, `${name}.yaml`), '');
    await pastRelist(agent);
    expect(await containerIds(ns, name)).toEqual(second);

    unlinkSync(join(dir, `${name}.yaml`));
    await until('the pod to be deleted', async () => ((await podContainers(ns, name)).length === 0 ? true : undefined));
  });

  it('applies a vim-style save once, ignores .bak and swap files, and a half-written file is never applied', async () => {
    const dir = join(world.dir, unique('dir'));
    mkdirSync(dir);
    const name = unique('vim');
    const other = unique('bak');
    writeFileSync(join(dir, `${name}.yaml`), pod(name));
    agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    const first = await running(name);

    // A backup copy and a swap file with other pods: never read.
    writeFileSync(join(dir, `${name}.yaml.bak`), pod(other));
    writeFileSync(join(dir, `.${name}.yaml.swp`), pod(other));
    writeFileSync(join(dir, `${name}.yaml~`), pod(other));

    // vim's save: probe file 4913, rename the original to a backup, write the new file, drop the backup.
    // Events are counted by the second: start the save on a fresh one.
    await new Promise((r) => setTimeout(r, 1010 - (Date.now() % 1000)));
    const savedSince = Math.floor(Date.now() / 1000);
    writeFileSync(join(dir, '4913'), '');
    unlinkSync(join(dir, '4913'));
    renameSync(join(dir, `${name}.yaml`), join(dir, `${name}.yaml~`));
    writeFileSync(join(dir, `${name}.yaml`), pod(name, 'saved'));
    unlinkSync(join(dir, `${name}.yaml~`));
    const saved = await until('the save to be applied', async () => {
      const ids = await containerIds(ns, name);
      return ids.moving !== first.moving ? ids : undefined;
    });
    expect(saved.POD).toBe(first.POD);
    await pastRelist(agent);
    // Applied once: the engine made exactly one new container for the save (pruning cannot hide a second).
    const vimUid = (await podContainers(ns, name))[0]!.Labels[LABEL.podUid]!;
    expect((await podEvents(vimUid, savedSince)).filter((a) => a === 'create')).toHaveLength(1);
    expect(await podContainers(ns, other)).toEqual([]);

    // An in-place write seen half-written: the prefix up to the second container is a valid pod
    // (with a different sandbox: the second container brings a host port). It must never run.
    const half = unique('half');
    const text = pod(half).replace(
      "command: [sh, -c, 'echo $V; exec sleep 3600']",
      `command: [sh, -c, 'echo $V; exec sleep 3600']\n    ports: [{containerPort: 80, hostPort: ${await freePort()}, hostIP: 127.0.0.1}]`,
    );
    const path = join(dir, `${half}.yaml`);
    const since = Math.floor(Date.now() / 1000) - 1;
    const fd = openSync(path, 'w');
    writeSync(fd, text.slice(0, text.indexOf('  - name: moving')));
    await new Promise((r) => setTimeout(r, 150));
    writeSync(fd, text.slice(text.indexOf('  - name: moving')));
    closeSync(fd);
    await running(half);
    await pastRelist(agent);
    expect(await instances(half, 'moving')).toBe(1);
    expect(await instances(half, 'POD')).toBe(1);
    // The engine saw one sandbox and one of each container made, nothing else.
    const uid = (await podContainers(ns, half))[0]!.Labels[LABEL.podUid]!;
    expect((await podEvents(uid, since)).filter((a) => a === 'create')).toHaveLength(3);
    rmSync(path);
  });

  it('survives kill -9 and adopts its pods on start without restarting them; SIGTERM leaves pods running', async () => {
    const dir = join(world.dir, unique('dir'));
    mkdirSync(dir);
    const name = unique('kill');
    writeFileSync(join(dir, `${name}.yaml`), pod(name));
    agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    const before = await running(name);
    await agent.kill9();

    agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    await pastRelist(agent);
    expect(await containerIds(ns, name)).toEqual(before);
    expect(await agent.stop()).toBe(0);
    agent = undefined;
    const states = (await podContainers(ns, name)).map((c) => c.State);
    expect(states).toEqual(['running', 'running', 'running']);
  });

  it('completes a pod half made when the agent died between its sandbox and its containers', async () => {
    const dir = join(world.dir, unique('dir'));
    mkdirSync(dir);
    const name = unique('half');
    writeFileSync(join(dir, `${name}.yaml`), pod(name));
    // Make the sandbox the way the agent would, then "die" before any container exists.
    const { DockerEngine } = await import('../../src/runtime/docker/docker-engine.js');
    const { loadManifestText } = await import('../../src/manifest/load.js');
    const { identityOf } = await import('../../src/runtime/labels.js');
    const { sandboxHash } = await import('../../src/manifest/hash.js');
    const d = loadManifestText({ file: 'x', source: `file:${join(dir, `${name}.yaml`)}`, text: pod(name) }).pods[0]!;
    const rt = new DockerEngine({ stateDir: world.stateDir, pauseImage: 'podrun-test/pause:1' });
    const sandbox = await rt.createSandbox(d.pod, identityOf(d.pod, d.origin.source), 0, sandboxHash(d.pod), false);

    agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    const ids = await running(name);
    expect(ids.POD).toBe(sandbox.id);
    await pastRelist(agent);
    const all = await podContainers(ns, name);
    expect(all.map((c) => c.Labels[LABEL.containerName]).sort()).toEqual(['POD', 'moving', 'steady']);
    expect(all.every((c) => c.State === 'running')).toBe(true);
    // Containers made by the agent leave restarts to it, not to the engine.
    expect((await docker.getContainer(ids.moving!).inspect()).HostConfig.RestartPolicy?.Name).toBe('no');
  });

  it('waits for a missing directory instead of failing', async () => {
    const dir = join(world.dir, unique('later'));
    const name = unique('late');
    agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    // Relists and a rescan of the missing directory, and it lives on.
    await pastRelist(agent);
    expect(agent.proc.exitCode).toBeNull();
    mkdirSync(dir);
    writeFileSync(join(dir, 'pod.yaml'), pod(name));
    await running(name);
  });
});
