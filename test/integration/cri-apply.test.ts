import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import { ContainerState } from '../../src/runtime/cri/messages.js';
import { AgentProcess, pastRelist } from './agent-helpers.js';
import { CRI_PAUSE_IMAGE, PrivateContainerd } from './cri-engine.js';
import { createServer } from 'node:http';
import { copySampleManifests, freePort, TEST_IMAGE, unique, until, World } from './helpers.js';

// podrun on containerd through the CRI, with no Docker engine reachable at all (DOCKER_HOST points
// at nothing): `apply`, `get`, `logs`, `exec`, a re-apply and `delete` with grace, then the agent
// running the README's sample manifests, restarting a killed container and adopting its pods
// after a kill -9. Everything runs on a private containerd (cri-engine.ts) and the built binary.
const ctrd = new PrivateContainerd();
const world = new World();
const podLogs = join(world.dir, 'pod-logs');
const NO_DOCKER = { DOCKER_HOST: 'unix:///nonexistent/docker.sock' };
const criArgs = (): string[] => ['--container-runtime-endpoint', ctrd.endpoint, '--pod-logs-dir', podLogs];
const cri = (args: string[], input?: string): ReturnType<World['bin']> =>
  world.bin([...criArgs(), ...args], { env: NO_DOCKER, ...(input !== undefined ? { input } : {}) });

beforeAll(async () => {
  await ctrd.start();
  ctrd.importTestImages();
  // The README's samples name busybox:1.36: the engine's copy, as the Docker tests use it.
  const r = spawnSync('sh', ['-c', `docker save busybox:1.36 | ctr -a ${ctrd.socket} -n k8s.io images import -`], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`importing busybox:1.36: ${r.stderr}`);
}, 90_000);

afterAll(async () => {
  await ctrd.destroy();
  await world.cleanup();
}, 90_000);

/** podrun's containers of a pod on the runtime, by name, newest instance first. */
async function containersOf(name: string): Promise<{ id: string; name: string; attempt: number; state: number }[]> {
  const list = await ctrd.client.listContainers({ labelSelector: { [LABEL.podName]: name } });
  return list.map((c) => ({ id: c.id, name: c.metadata?.name ?? '', attempt: c.metadata?.attempt ?? 0, state: c.state })).sort((a, b) => b.attempt - a.attempt);
}

describe('podrun on containerd (CRI), no Docker engine', () => {
  it('apply → Running and Ready; get, logs, exec; re-apply unchanged; delete with grace', async () => {
    const ns = unique('cri');
    const name = unique('two');
    const out = join(world.dir, `${name}-out`);
    const manifest = world.write(
      `${name}.yaml`,
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: web
    image: ${TEST_IMAGE}
    command: [sh, -c, 'echo hello-from-web; echo to-stderr >&2; mkdir -p /www; echo ok > /www/index.html; exec httpd -f -p 8080 -h /www']
    env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}, {name: GREETING, value: hi-$(POD_NAME)}]
    readinessProbe: {exec: {command: [cat, /www/index.html]}, periodSeconds: 1}
  - name: side
    image: ${TEST_IMAGE}
    command: [sh, -c, 'trap "echo got-term > /out/term; exit 0" TERM; echo side-up; while true; do sleep 0.2; done']
    volumeMounts: [{name: out, mountPath: /out}]
  volumes:
  - {name: out, hostPath: {path: ${out}, type: DirectoryOrCreate}}
`,
    );
    const applied = await cri(['apply', '-f', manifest, '--timeout', '60s']);
    expect(applied.code, `${applied.out}\n${applied.err}\n${ctrd.recentLog}`).toBe(0);
    expect(applied.out).toMatch(/ready/);

    // The runtime holds one sandbox and two running containers, with podrun's identity and the kubelet's log layout.
    const sandboxes = await ctrd.client.listPodSandbox({ labelSelector: { [LABEL.podName]: name } });
    expect(sandboxes).toHaveLength(1);
    const sb = await ctrd.client.podSandboxStatus(sandboxes[0]!.id);
    expect(sb.metadata?.namespace).toBe(ns);
    expect(sb.labels[LABEL.podNamespace]).toBe(ns);
    expect(JSON.parse(sb.annotations[LABEL.podSpec] ?? '{}').metadata?.name).toBe(name);
    const cs = await containersOf(name);
    expect(cs.map((c) => [c.name, c.state]).sort()).toEqual([
      ['side', ContainerState.RUNNING],
      ['web', ContainerState.RUNNING],
    ]);
    const uid = sb.metadata?.uid ?? '';
    const logDir = join(podLogs, `${ns}_${name}_${uid}`);
    expect(readdirSync(logDir).sort()).toEqual(['side', 'web']);
    expect(readFileSync(join(logDir, 'web', '0.log'), 'utf8')).toMatch(/^\S+ stdout F hello-from-web$/m);

    const got = await cri(['get', 'pods', '-n', ns]);
    expect(got.code, got.err).toBe(0);
    expect(got.out).toMatch(new RegExp(`${name}\\s+2/2\\s+Running\\s+0`));
    const json = JSON.parse((await cri(['get', 'pod', name, '-n', ns, '-o', 'json'])).out) as {
      status: { podIP: string; containerStatuses: { containerID: string; ready: boolean }[] };
    };
    expect(json.status.podIP).toMatch(new RegExp(`^${ctrd.subnet.replace(/\./g, '\\.')}\\.`));
    expect(json.status.containerStatuses.map((c) => [c.ready, c.containerID.split('://')[0]])).toEqual([
      [true, 'containerd'],
      [true, 'containerd'],
    ]);

    const logs = await cri(['logs', name, '-n', ns, '-c', 'web']);
    expect(logs.code, logs.err).toBe(0);
    expect(logs.out).toBe('hello-from-web\n');
    expect(logs.err).toContain('to-stderr');

    const ex = await cri(['exec', name, '-n', ns, '-c', 'web', '--', 'sh', '-c', 'echo $GREETING; exit 3']);
    expect(ex.out.trim()).toBe(`hi-${name}`);
    expect(ex.code).toBe(3);

    const again = await cri(['apply', '-f', manifest, '--timeout', '60s']);
    expect(again.code, again.err).toBe(0);
    expect(again.out).toMatch(/unchanged/);
    expect((await containersOf(name)).map((c) => c.id).sort()).toEqual(cs.map((c) => c.id).sort());

    const del = await cri(['delete', 'pod', name, '-n', ns]);
    expect(del.code, del.err).toBe(0);
    // Graceful: the stop signal reached the container and its TERM trap ran; then everything of
    // the pod is gone, its logs too.
    expect(readFileSync(join(out, 'term'), 'utf8')).toBe('got-term\n');
    expect(await ctrd.client.listPodSandbox({ labelSelector: { [LABEL.podName]: name } })).toHaveLength(0);
    expect(await containersOf(name)).toHaveLength(0);
    expect(existsSync(logDir)).toBe(false);
  }, 180_000);

  it('the agent runs the sample manifests on containerd, restarts a killed container, and adopts its pods after kill -9', async () => {
    // The README's samples, made this test's own (namespaces, ports, hostPath).
    const demo = unique('cri-demo');
    const system = unique('cri-sys');
    const [web, etcd] = [await freePort(), await freePort()];
    const dir = join(world.dir, 'agent-manifests');
    const data = join(world.dir, 'podrun-examples');
    mkdirSync(dir, { recursive: true });
    copySampleManifests(dir, { demo, system, web, etcd, data });
    // The engine chosen from the environment, as a unit file's Environment= lines would set it.
    const env = { ...NO_DOCKER, PODRUN_CONTAINER_RUNTIME_ENDPOINT: ctrd.endpoint, PODRUN_POD_LOGS_DIR: podLogs };
    const start = (): AgentProcess => new AgentProcess(world.stateDir, ['--manifest-dir', dir], env);
    let agent = start();
    let first = '';
    try {
      await agent.started();
      const running = async (ns: string, pattern: RegExp): Promise<true | undefined> =>
        pattern.test((await cri(['get', 'pods', '-n', ns])).out) ? true : undefined;
      await until('the web pod to be Running and Ready', () => running(demo, /^web\s+2\/2\s+Running\s+0\s/m), 90_000);
      await until('etcd-lite to be Running and Ready', () => running(system, /^etcd-lite\s+1\/1\s+Running\s+0\s/m), 90_000);
      // The sample works: its sidecar writes the page that its server serves, on the pod's CNI address.
      const ip = (JSON.parse((await cri(['get', 'pod', 'web', '-n', demo, '-o', 'json'])).out) as { status: { podIP: string } }).status.podIP;
      const page = await until(
        'the page',
        async () =>
          (
            await fetch(`http://${ip}:8080/`).then(
              (r) => r.text(),
              () => undefined,
            )
          )?.match(/Hello from web/) ?? undefined,
        30_000,
      );
      expect(page).toBeTruthy();
      expect(await fetch(`http://127.0.0.1:${etcd}/healthz`).then((r) => r.text())).toBe('ok\n');

      // A container killed under the agent is made again, as the kubelet restarts it.
      const before = await containersOf('web');
      const content = before.find((c) => c.name === 'content')!;
      expect(spawnSync('ctr', ['-a', ctrd.socket, '-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', content.id]).status).toBe(0);
      await until(
        'content to run again',
        async () => ((await containersOf('web')).some((c) => c.name === 'content' && c.attempt === 1 && c.state === ContainerState.RUNNING) ? true : undefined),
        90_000,
      );
      await until('get to show the restart', () => running(demo, /^web\s+2\/2\s+Running\s+1\s/m), 60_000);

      // kill -9: no shutdown at all. The next agent adopts from the runtime's labels: nothing restarts.
      await agent.kill9();
      first = agent.logs();
      const held = (await Promise.all(['web', 'etcd-lite'].map(containersOf))).flat().filter((c) => c.state === ContainerState.RUNNING);
      agent = start();
      await agent.started();
      await agent.waitForLog(/engine connected/);
      // Past relists, resyncs and rescans of the new agent (twice): whatever it would do to the pods, it has done.
      await pastRelist(agent);
      await pastRelist(agent);
      const after = (await Promise.all(['web', 'etcd-lite'].map(containersOf))).flat().filter((c) => c.state === ContainerState.RUNNING);
      expect(after.map((c) => c.id).sort()).toEqual(held.map((c) => c.id).sort());
      expect((await cri(['get', 'pods', '-n', demo])).out).toMatch(/^web\s+2\/2\s+Running\s+1\s/m);
      expect((await cri(['get', 'pods', '-n', system])).out).toMatch(/^etcd-lite\s+1\/1\s+Running\s+0\s/m);
      // Neither agent replaced anything but the killed container, nor failed at anything.
      for (const log of [first, agent.logs()]) expect(log).not.toMatch(/recreating|replacing|ERROR|never started/);
    } catch (err) {
      throw new Error(
        `${(err as Error).message}\nfirst agent's log:\n${first.slice(-4000)}\nagent log:\n${agent.logs().slice(-4000)}\ncontainerd:\n${ctrd.recentLog}`,
      );
    } finally {
      await agent.stop();
    }
  }, 300_000);

  it('says what is wrong with an endpoint that is not a CRI runtime, a containerd without its CRI plugin, a missing sandbox image', async () => {
    const pod = world.write(
      'lonely.yaml',
      `apiVersion: v1\nkind: Pod\nmetadata: {name: ${unique('lonely')}, namespace: default}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers: [{name: a, image: ${TEST_IMAGE}, command: [sleep, '60']}]\n`,
    );
    const applyAt = (endpoint: string): ReturnType<World['bin']> =>
      world.bin(['--container-runtime-endpoint', endpoint, '--pod-logs-dir', podLogs, 'apply', '-f', pod, '--timeout', '20s'], { env: NO_DOCKER });

    // An HTTP server on a unix socket: it answers, but not gRPC.
    const sock = join(world.dir, 'http.sock');
    const server = createServer((_, res) => res.end('hello'));
    await new Promise<void>((r) => server.listen(sock, r));
    try {
      const r = await applyAt(`unix://${sock}`);
      expect(r.code).toBe(3);
      expect(r.err).toMatch(/is not a CRI runtime/);
    } finally {
      server.close();
    }

    const noSocket = await applyAt(`unix://${join(world.dir, 'nothing.sock')}`);
    expect(noSocket.code).toBe(3);
    expect(noSocket.err).toMatch(/no such socket.*is the runtime running/);

    const plain = new PrivateContainerd({ criDisabled: true });
    await plain.start();
    try {
      const r = await applyAt(plain.endpoint);
      expect(r.code).toBe(3);
      expect(r.err).toMatch(/CRI plugin is disabled/);
      expect(r.err).toContain('disabled_plugins in /etc/containerd/config.toml');
    } finally {
      await plain.destroy();
    }

    // The runtime's sandbox image gone, and its registry (docker.io, sent to a closed loopback port) unreachable.
    const certs = join(ctrd.dir, 'certs.d', 'docker.io');
    mkdirSync(certs, { recursive: true });
    writeFileSync(join(certs, 'hosts.toml'), 'server = "http://127.0.0.1:1"\n[host."http://127.0.0.1:1"]\n  capabilities = ["pull", "resolve"]\n');
    expect(spawnSync('ctr', ['-a', ctrd.socket, '-n', 'k8s.io', 'images', 'rm', CRI_PAUSE_IMAGE]).status).toBe(0);
    const r = await cri(['apply', '-f', pod, '--timeout', '20s']);
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/sandbox \(pause\) image docker\.io\/podrun-test\/pause:1 is missing/);
    expect(r.err).toContain('sandbox_image');
  }, 120_000);
});
