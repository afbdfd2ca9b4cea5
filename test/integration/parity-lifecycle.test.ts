import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import { AgentSuite, pastSyncTurns } from './agent-helpers.js';
import { docker, freePort, logsOf, podContainers, TEST_IMAGE, unique, until } from './helpers.js';

// Kubelet parity for a pod's life under the agent (issue 9, items 2, 3 and 10).
const suite = new AgentSuite('parity-life');
const { world, ns } = suite;

type Instance = { id: string; name: string; count: number; state: string };
async function instances(name: string): Promise<Instance[]> {
  return (await podContainers(ns, name)).map((c) => ({
    id: c.Id,
    name: c.Labels[LABEL.containerName] ?? '',
    count: Number(c.Labels[LABEL.restartCount]),
    state: c.State,
  }));
}

function agentOn(files: Record<string, string>): string {
  const dir = join(world.dir, unique('m'));
  mkdirSync(dir);
  for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text);
  return dir;
}

const portFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

describe("a pod's life as the kubelet leads it", () => {
  it("stops a finished pod's sandbox (its hostPort is freed), under Never and under OnFailure after success", async () => {
    const port = await freePort();
    const never = unique('done-never');
    const onfail = unique('done-onfailure');
    const pod = (name: string, policy: string, extra = ''): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  restartPolicy: ${policy}
  terminationGracePeriodSeconds: 1
  containers:
  - name: job
    image: ${TEST_IMAGE}
    command: [sh, -c, 'sleep 1; exit 0']
${extra}`;
    const dir = agentOn({
      'never.yaml': pod(never, 'Never', `    ports: [{containerPort: 80, hostPort: ${port}, hostIP: 127.0.0.1}]\n`),
      'onfailure.yaml': pod(onfail, 'OnFailure'),
    });
    const agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    for (const name of [never, onfail]) {
      await until(
        `${name} to be stopped whole`,
        async () => {
          const all = await instances(name);
          return all.length === 2 && all.every((c) => c.state === 'exited') ? true : undefined;
        },
        30_000,
      );
    }
    expect(await portFree(port)).toBe(true);
    // And it stays so: no new sandbox for a finished pod, over relists and three sync turns of each.
    await pastSyncTurns(agent, 6);
    expect((await instances(never)).filter((c) => c.name === 'POD')).toHaveLength(1);
    expect((await instances(onfail)).filter((c) => c.name === 'POD')).toHaveLength(1);
    const g = await world.cli('get', 'pods', '-n', ns);
    expect(g.out).toMatch(new RegExp(`^${never}\\s+0/1\\s+Completed\\s`, 'm'));
  });

  it('keeps handling the app containers while a sidecar crash-loops in back-off', async () => {
    const name = unique('sidecar-loop');
    const dir = agentOn({
      'pod.yaml': `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - {name: side, image: ${TEST_IMAGE}, restartPolicy: Always, command: [sh, -c, 'sleep 2; exit 1']}
  containers:
  - {name: app, image: ${TEST_IMAGE}, command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']}
`,
    });
    const agent = suite.run(['--manifest-dir', dir, '--crash-backoff-initial', '20s']);
    await agent.started();
    const app = await until('the app to run', async () => (await instances(name)).find((c) => c.name === 'app' && c.state === 'running'), 20_000);
    // The sidecar has crashed twice: it is in a 20 s back-off now.
    await until(
      'the sidecar to be in back-off',
      async () => ((await instances(name)).some((c) => c.name === 'side' && c.count >= 1 && c.state === 'exited') ? true : undefined),
      20_000,
    );
    await docker.getContainer(app.id).kill();
    const again = await until(
      'the app to be restarted meanwhile',
      async () => (await instances(name)).find((c) => c.name === 'app' && c.state === 'running' && c.count === app.count + 1),
      8_000,
    ).catch(async (e: Error) => {
      throw new Error(`${e.message}\n${JSON.stringify(await instances(name))}\n${agent.logs()}`);
    });
    expect(again.id).not.toBe(app.id);
    expect((await instances(name)).filter((c) => c.name === 'side' && c.state === 'running')).toEqual([]);
  });

  it('restarts a container its liveness probe killed under OnFailure, even when it exits 0 on SIGTERM', async () => {
    const name = unique('live-onfailure');
    const dir = agentOn({
      'pod.yaml': `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  restartPolicy: OnFailure
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']
    livenessProbe: {exec: {command: [cat, /nonexistent]}, periodSeconds: 1, failureThreshold: 1, timeoutSeconds: 5}
`,
    });
    const agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    await until(
      'the killed container to be restarted',
      async () => ((await instances(name)).some((c) => c.name === 'c' && c.count >= 1) ? true : undefined),
      30_000,
    );
    const first = (await instances(name)).find((c) => c.name === 'c' && c.count === 0);
    expect((await docker.getContainer(first!.id).inspect()).State.ExitCode).toBe(0);
    await agent.waitForLog(`pod ${ns}/${name}: container c failed liveness probe, will be restarted`);
  });

  it('runs an exited Never container again when its spec is edited', async () => {
    const name = unique('edit-never');
    const pod = (v: string): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sh, -c, 'echo ${v}']}]
`;
    const dir = agentOn({ 'pod.yaml': pod('v1') });
    const agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    await until(
      'the first run to finish and the pod to stop',
      async () => {
        const all = await instances(name);
        return all.length === 2 && all.every((c) => c.state === 'exited') ? true : undefined;
      },
      20_000,
    );
    writeFileSync(join(dir, 'pod.yaml'), pod('v2'));
    const second = await until(
      'the edited container to run',
      async () => (await instances(name)).find((c) => c.name === 'c' && c.count === 1 && c.state === 'exited'),
      20_000,
    );
    expect((await logsOf(second.id)).trim()).toBe('v2');
  });
});

describe('what is left of a pod', () => {
  it('stops the containers of a Never pod whose sandbox died, and makes it no new sandbox', async () => {
    const name = unique('never-sandbox');
    const dir = agentOn({
      'pod.yaml': `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']}]
`,
    });
    const agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    const sandbox = await until('the pod to run', async () => {
      const all = await instances(name);
      return all.some((c) => c.name === 'c' && c.state === 'running') ? all.find((c) => c.name === 'POD') : undefined;
    });
    await docker.getContainer(sandbox!.id).kill();
    await until('its container to be stopped', async () => ((await instances(name)).every((c) => c.state === 'exited') ? true : undefined), 20_000);
    // Relists and three sync turns of the pod since: none made a sandbox.
    await pastSyncTurns(agent, 3);
    expect((await instances(name)).filter((c) => c.name === 'POD')).toHaveLength(1);
  });

  it('never runs an init container again once the pod is initialized, even when its dead instance is gone', async () => {
    const name = unique('init-gc');
    const dir = agentOn({
      'pod.yaml': `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  initContainers: [{name: setup, image: ${TEST_IMAGE}, command: [sh, -c, 'exit 0']}]
  containers: [{name: app, image: ${TEST_IMAGE}, command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']}]
`,
    });
    const agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    const app = await until('the app to run', async () => (await instances(name)).find((c) => c.name === 'app' && c.state === 'running'));
    // The init container's dead instance goes (as a GC or a manual cleanup would take it)...
    const setup = (await instances(name)).find((c) => c.name === 'setup')!;
    await docker.getContainer(setup.id).remove({ force: true });
    // ...and the app dies: it is restarted, the init container is not run again.
    await docker.getContainer(app.id).kill();
    await until(
      'the app to be restarted',
      async () => ((await instances(name)).some((c) => c.name === 'app' && c.count === app.count + 1 && c.state === 'running') ? true : undefined),
      20_000,
    );
    // Relists that saw the restarted app, and three sync turns of the pod since: none ran setup.
    await pastSyncTurns(agent, 3);
    expect((await instances(name)).filter((c) => c.name === 'setup')).toEqual([]);
  });
});

/**
 * A one-container pod with a host directory at /out, where its hooks and signal handlers leave
 * what they did for the test to read. `extra` is added to the container.
 */
function observedPod(name: string, out: string, grace: number, command: string, extra = ''): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: ${grace}
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: ${command}
${extra}    volumeMounts: [{name: out, mountPath: /out}]
  volumes: [{name: out, hostPath: {path: ${out}}}]
`;
}

/** Ignores SIGTERM: only the grace period's end (SIGKILL) stops it. */
const STUBBORN = `[sh, -c, 'trap "" TERM; while :; do sleep 1; done']`;

describe('the spec in force after a container-only update', () => {
  it('shows the new spec, stops with the new grace period and runs the new preStop', async () => {
    const name = unique('inforce');
    const out = join(world.dir, unique('prestop'));
    mkdirSync(out);
    const pod = (v: string, grace: number): string =>
      observedPod(
        name,
        out,
        grace,
        STUBBORN,
        `    env: [{name: V, value: ${v}}]\n    lifecycle: {preStop: {exec: {command: [sh, -c, 'echo ${v} > /out/prestop']}}}\n`,
      );
    const file = world.write(`${name}.yaml`, pod('v1', 60));
    expect((await world.cli('apply', '--timeout', '20s', file)).code).toBe(0);
    world.write(`${name}.yaml`, pod('v2', 3));
    const r = await world.cli('apply', '--timeout', '20s', file);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`pod/${ns}/${name} updated`);
    // The replaced v1 container ran its own (v1) preStop.
    expect(readFileSync(join(out, 'prestop'), 'utf8').trim()).toBe('v1');

    const g = JSON.parse((await world.cli('get', 'pods', '-n', ns, '-o', 'json')).out) as {
      items: { metadata: { name: string }; spec: { terminationGracePeriodSeconds: number; containers: { env: { value: string }[] }[] } }[];
    };
    const shown = g.items.find((p) => p.metadata.name === name)!;
    expect([shown.spec.terminationGracePeriodSeconds, shown.spec.containers[0]!.env[0]!.value]).toEqual([3, 'v2']);

    // 3 s of grace: the 60 s the sandbox was made with would outlast the test.
    const d = await world.cli('delete', '-n', ns, name);
    expect(d.code, d.err).toBe(0);
    expect(readFileSync(join(out, 'prestop'), 'utf8').trim()).toBe('v2');
  });

  it('gives every stop at least 2 s, so a SIGTERM handler runs even at terminationGracePeriodSeconds 0', async () => {
    const name = unique('floor');
    const out = join(world.dir, unique('term'));
    mkdirSync(out);
    const file = world.write(
      `${name}.yaml`,
      observedPod(name, out, 0, `[sh, -c, 'trap "sleep 0.5; echo term > /out/got; exit 0" TERM; while :; do sleep 0.1; done']`),
    );
    expect((await world.cli('apply', '--timeout', '20s', file)).code).toBe(0);
    expect((await world.cli('delete', '-n', ns, name)).code).toBe(0);
    expect(readFileSync(join(out, 'got'), 'utf8').trim()).toBe('term');
  });

  it('takes delete --grace-period as given, below the 2 s floor too, and skips preStop at 0', async () => {
    const name = unique('grace0');
    const out = join(world.dir, unique('nohook'));
    mkdirSync(out);
    const file = world.write(
      `${name}.yaml`,
      observedPod(name, out, 3600, STUBBORN, `    lifecycle: {preStop: {exec: {command: [sh, -c, 'echo ran > /out/prestop; sleep 5']}}}\n`),
    );
    expect((await world.cli('apply', '--timeout', '20s', file)).code).toBe(0);
    // Not the pod's hour of grace (it would outlast the test), and no preStop (its file would be there).
    expect((await world.cli('delete', '--grace-period', '0', '-n', ns, name)).code).toBe(0);
    expect(existsSync(join(out, 'prestop'))).toBe(false);
  });
});

describe('termination messages', () => {
  it("reads terminationMessagePath into the terminated state, and the log's tail under FallbackToLogsOnError", async () => {
    const name = unique('termmsg');
    const file = world.write(
      `${name}.yaml`,
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 1000}
  containers:
  - {name: file, image: ${TEST_IMAGE}, command: [sh, -c, 'echo "disk full" > /dev/termination-log; exit 3']}
  - {name: custom, image: ${TEST_IMAGE}, terminationMessagePath: /tmp/why, command: [sh, -c, 'printf done > /tmp/why']}
  - {name: fallback, image: ${TEST_IMAGE}, terminationMessagePolicy: FallbackToLogsOnError, command: [sh, -c, 'echo starting; echo "cannot bind :80"; exit 1']}
  - {name: long, image: ${TEST_IMAGE}, command: [sh, -c, 'head -c 10240 /dev/zero | tr "\\0" x > /dev/termination-log; printf panic-at-the-end >> /dev/termination-log; exit 2']}
`,
    );
    await world.cli('apply', '--timeout', '20s', file);
    type Status = { name: string; state: { terminated?: { exitCode: number; message?: string } } };
    const statuses = await until('all four to finish', async () => {
      const g = JSON.parse((await world.cli('get', 'pods', '-n', ns, '-o', 'json')).out) as {
        items: { metadata: { name: string }; status: { containerStatuses: Status[] } }[];
      };
      const s = g.items.find((p) => p.metadata.name === name)?.status.containerStatuses ?? [];
      return s.length === 4 && s.every((c) => c.state.terminated) ? s : undefined;
    });
    const msg = (n: string): string | undefined => statuses.find((c) => c.name === n)?.state.terminated?.message;
    expect(msg('file')).toBe('disk full\n');
    expect(msg('custom')).toBe('done');
    expect(msg('fallback')).toBe('starting\ncannot bind :80\n');
    // Longer than the kubelet's 4096 bytes: its end is kept (tail.ReadAtMost), not its start.
    expect(msg('long')).toBe(`${'x'.repeat(4096 - 'panic-at-the-end'.length)}panic-at-the-end`);
  });
});
