import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import { AgentProcess, agentMetric, probesGrown } from './agent-helpers.js';
import { PodmanService } from './engine-helpers.js';
import { testRunLabels } from './suite-run.js';
import { PassThrough } from 'node:stream';
import { DockerEngine } from '../../src/runtime/docker/docker-engine.js';
import type { ExecRef } from '../../src/runtime/runtime-types.js';
import { PAUSE_IMAGE, TEST_IMAGE, unique, until, World } from './helpers.js';

// podrun on Podman's Docker-compatible socket (Debian's podman 4.3, `podman system service`):
// apply, an agent adopting what apply made, a restart after a kill, events, and delete. Podman is
// installed by scripts/setup; a machine without it fails here rather than skipping.
const world = new World();
const podman = new PodmanService();
const ns = unique('podman');
let agent: AgentProcess | undefined;
afterAll(async () => {
  await agent?.stop();
  const mine = await podman.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${LABEL.instance}=${world.instance}`] }) }).catch(() => []);
  // Sandboxes last: Podman refuses to remove one that others joined.
  const remove = (list: typeof mine): Promise<unknown> =>
    Promise.all(
      list.map((c) =>
        podman.docker
          .getContainer(c.Id)
          .remove({ force: true })
          .catch(() => undefined),
      ),
    );
  await remove(mine.filter((c) => c.Labels[LABEL.containerType] !== 'sandbox'));
  await remove(mine.filter((c) => c.Labels[LABEL.containerType] === 'sandbox'));
  await podman.stop();
  await world.cleanup();
});

describe('podrun on Podman', () => {
  it('applies a pod, lets an agent adopt it, restarts a killed container, and deletes it whole', { timeout: 150_000 }, async () => {
    expect(PodmanService.installed()).toBe(true);
    await podman.start();
    const env = { DOCKER_HOST: podman.host, ...podman.env };
    const name = unique('pm');
    const file = join(world.dir, 'pod.yaml');
    writeFileSync(
      file,
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: web, image: ${TEST_IMAGE}, command: [sh, -c, 'mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www'], readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}}
  - {name: side, image: ${TEST_IMAGE}, command: [sh, -c, 'while [ ! -f /tmp/stop ]; do sleep 0.2; done; rm /tmp/stop; exit 1']}
`,
    );
    const applied = await world.bin(['apply', '-f', file], { env });
    expect(applied.err).toBe('');
    expect(applied.code).toBe(0);
    // `podrun version` names Podman's version and API version as its /version does (read from its ping).
    const v = await podman.docker.version();
    expect((await world.bin(['version'], { env })).out).toContain(`engine ${v.Version} (API ${v.ApiVersion})`);
    const ours = async (): Promise<{ Id: string; name: string; count: number; state: string; type: string }[]> =>
      (
        await podman.docker.listContainers({
          all: true,
          filters: JSON.stringify({ label: [`${LABEL.instance}=${world.instance}`, `${LABEL.podName}=${name}`] }),
        })
      ).map((c) => ({
        Id: c.Id,
        name: c.Labels[LABEL.containerName] ?? '',
        count: Number(c.Labels[LABEL.restartCount]),
        state: c.State,
        type: c.Labels[LABEL.containerType] ?? '',
      }));
    expect(
      (await ours())
        .filter((c) => c.state === 'running')
        .map((c) => c.name)
        .sort(),
    ).toEqual(['POD', 'side', 'web']);

    // The agent adopts the pod as it is: nothing replaced.
    const before = (await ours()).map((c) => c.Id).sort();
    // The agent takes the pod over from apply's record. No relist within the test: what it
    // knows of deletions comes from Podman's events.
    agent = new AgentProcess(world.stateDir, ['--crash-backoff-initial', '1s', '--relist-period', '10m'], env);
    await agent.started();
    // Its adoption turn is done: a sync turn of the declared pod ran to its end (a turn begun
    // before the applied set loaded is a deletion's, and deletes nothing before it has)...
    const adopter = agent;
    await until(
      'the adoption turn',
      async () => ((await agentMetric(adopter, 'podrun_pod_worker_duration_seconds_count', { labels: ['operation="sync"'] })) >= 1 ? true : undefined),
      30_000,
    );
    // ...and two probe periods of the adopted web since, counted by the prober: the turn its own
    // calls brought about (Podman's events of them) has had its time too.
    await probesGrown(agent, 2, ['container="web"', `namespace="${ns}"`, `pod="${name}"`]);
    expect((await ours()).map((c) => c.Id).sort()).toEqual(before);
    expect(agent.logs(), agent.logs()).not.toMatch(/no such container|not found|ERROR/i);

    // A killed container comes back (a new instance, as podrun restarts them).
    const web = (await ours()).find((c) => c.name === 'web')!;
    await podman.docker.getContainer(web.Id).kill();
    // A new instance, not the killed one: under load Podman can still list the killed container
    // as running for a moment after the kill returned.
    await until(
      'a new web to run',
      async () => ((await ours()).some((c) => c.name === 'web' && c.state === 'running' && c.Id !== web.Id) ? true : undefined),
      30_000,
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n${agent?.logs() ?? ''}`);
    });
    const after = await ours();
    expect(
      after.filter((c) => c.name === 'web' && c.state === 'running').map((c) => c.count),
      `${JSON.stringify(after)}\n${agent.logs()}`,
    ).toEqual([1]);
    // Ready again once its readiness probe passes.
    let shown = '';
    await until(
      'the pod to be 2/2 with one restart',
      async () => {
        shown = (await world.bin(['get', 'pods', '-n', ns, name, '--no-headers'], { env })).out;
        return new RegExp(`^${name}\\s+2/2\\s+Running\\s+1\\s`).test(shown) ? true : undefined;
        // Ready only once the new container's first readiness probe passed (no longer assumed at
        // once): beside the whole suite that has taken over 20 s.
      },
      45_000,
    ).catch(async (e: Error) => {
      const pod = (await world.bin(['get', 'pods', '-n', ns, name, '-o', 'json'], { env })).out;
      throw new Error(`${e.message}\nlast: ${shown}\n${pod}\n${agent?.logs() ?? ''}`);
    });

    // A container that exits by itself is restarted in place by Podman (its policy from apply,
    // which Podman cannot hand over), and that restart counts in RESTARTS too.
    // Podman under load has listed a running container as not running for a moment (CI once):
    // the exec is tried again while podrun says it found no running `side`, and the list shown.
    let exec = await world.bin(['exec', name, '-n', ns, '-c', 'side', '--', 'touch', '/tmp/stop'], { env });
    for (let i = 0; i < 20 && exec.code === 1 && /not found or not running/.test(exec.err); i++) {
      await new Promise((r) => setTimeout(r, 500));
      exec = await world.bin(['exec', name, '-n', ns, '-c', 'side', '--', 'touch', '/tmp/stop'], { env });
    }
    expect(exec.code, `${exec.err}\n${JSON.stringify(await ours())}`).toBe(0);
    let listed = '';
    await until(
      'the pod to be 2/2 with two restarts',
      async () => {
        listed = (await world.bin(['get', 'pods', '-n', ns, name, '--no-headers'], { env })).out;
        return new RegExp(`^${name}\\s+2/2\\s+Running\\s+2\\s`).test(listed) ? true : undefined;
      },
      20_000,
    ).catch(async (e: Error) => {
      const side = (await ours()).find((c) => c.name === 'side');
      const inspected = side ? await podman.docker.getContainer(side.Id).inspect() : undefined;
      throw new Error(
        `${e.message}\nlast: ${listed}\nside: ${JSON.stringify({ restarts: inspected?.RestartCount, state: inspected?.State.Status })}\n${agent?.logs() ?? ''}`,
      );
    });

    // Deleted whole, sandbox included (Podman refuses to remove a sandbox others joined), and the
    // agent's view follows Podman's events (remove, not destroy), not a relist.
    const deleted = await world.bin(['delete', 'pod', name, '-n', ns], { env });
    expect(deleted, deleted.err).toMatchObject({ code: 0, err: '' });
    expect(await ours()).toEqual([]);
    await until(
      'the pod to be gone from the agent',
      async () => ((await world.bin(['get', 'pods', '-n', ns, name], { env })).code === 1 ? true : undefined),
      10_000,
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n${agent?.logs() ?? ''}`);
    });
  });

  it("ends an exec and the children it started, as on Docker: Podman reports the exec's pid, its cgroup names the container", async () => {
    // The service was started by the test above.
    const c = await podman.docker.createContainer({
      name: unique('pm-exec'),
      Image: TEST_IMAGE,
      Labels: testRunLabels(),
      Cmd: ['sh', '-c', 'trap "exit 0" TERM; while :; do sleep 1; done'],
    });
    const left = async (): Promise<string[][]> => {
      const top = (await c.top({ ps_args: '-o pid,stat,args' })) as { Processes?: string[][] };
      // Podman answers each process as one string of the columns ("7 S    sleep 1001"), Docker as an array.
      const rows = (top.Processes ?? []).map((r) => /^\s*(\d+)\s+(\S+)\s+(.*)$/.exec(r.join(' ')) ?? []);
      return rows.filter(([, , stat, args]) => /^(sleep 100[0-3]|yes|\{yes\} .*)$/.test(args ?? '') && !stat?.startsWith('Z')).map((r) => r.slice(1));
    };
    try {
      await c.start();
      const rt = new DockerEngine({ host: podman.host, stateDir: world.stateDir, pauseImage: PAUSE_IMAGE });
      // Podman itself ends an exec whose attached connection closes (Docker does not): a probe past
      // its deadline leaves nothing there either way.
      expect(await rt.exec(c.id, ['sh', '-c', 'sleep 1000 & yes >/dev/null & sleep 1001'], 1000)).toBe('timeout');
      expect(await left()).toEqual([]);
      // The kill itself, on an exec still attached (what a dead `podrun exec`'s guard does).
      let ref: ExecRef | undefined;
      const out = new PassThrough().resume();
      const session = rt.execAttached(
        c.id,
        ['sh', '-c', 'sleep 1002 & sleep 1003'],
        { tty: false, stdin: false, onCreated: (r) => (ref = r) },
        { stdin: new PassThrough(), stdout: out, stderr: out },
      );
      await until('the exec to run', async () => ((await left()).length === 2 ? true : undefined), 10_000);
      expect(await rt.endAbandonedExec(ref!)).toEqual({ killed: 2 });
      await session;
      expect(await left()).toEqual([]);
    } finally {
      await c.remove({ force: true });
    }
  });
});
