import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess } from './agent-helpers.js';
import { LABEL } from '../../src/runtime/labels.js';
import { agentGetText, BIN, docker, followEvents, PAUSE_IMAGE, podContainers, TEST_IMAGE, unique, until, World } from './helpers.js';
import { agentPod, untilPod } from './lifecycle-helpers.js';
import { buildLayeredImage, dockerConfig, hasImage, LocalRegistry, untag } from './registry-helpers.js';

// Pulls as a node makes them, from a real registry (Debian's docker-registry, the CNCF distribution
// server) on a loopback port of each test's own: TLS with a CA the test made, htpasswd auth.

const world = new World();
const ns = unique('reg');
const USER = { username: 'podrun', password: 'S3cret-pw-never-logged' };
let secure: LocalRegistry;

beforeAll(async () => {
  secure = await new LocalRegistry({ auth: USER, tls: true }).start();
}, 60_000);

afterAll(async () => {
  await world.cleanup();
  await secure.close();
});

const podYaml = (name: string, image: string, extra = ''): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: ${image}
    command: [sh, -c, 'echo up; sleep 3600']
${extra}`;

/** A config.json with these auths, as `docker login` writes it. */
function credentials(auths: Record<string, { username: string; password: string }>): string {
  return join(dockerConfig(world.dir, auths), 'config.json');
}

describe('pulls from a registry with TLS and basic auth', () => {
  it("wrong credentials: apply fails with the registry's reason, get says ErrImagePull, describe has the events, the secret is never printed", async () => {
    const ref = await secure.push(TEST_IMAGE, 'team/wrong:1');
    const creds = credentials({ [secure.host]: { username: USER.username, password: 'not-the-password' } });
    const file = world.write('wrong.yaml', podYaml('wrong', ref));
    const r = await world.cli('--image-credentials', creds, 'apply', '-f', file, '--timeout', '20s');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/failed to pull image .*team\/wrong:1.*(unauthorized|authentication required|no basic auth)/i);
    const get = await world.cli('get', 'pods', '-n', ns);
    expect(get.out).toMatch(/wrong\s+0\/1\s+ErrImagePull/);
    const desc = await world.cli('describe', 'pod', 'wrong', '-n', ns);
    expect(desc.out).toMatch(/Warning\s+Failed\s+.*Failed to pull image/);
    expect(desc.out).toMatch(/Error: ErrImagePull/);
    for (const text of [r.out, r.err, get.out, desc.out]) expect(text).not.toContain('not-the-password');
  }, 60_000);

  it("credentials scoped to a repository path (registry:port/team) pull that path only; the state dir's config.json is read with no flag", async () => {
    const ok = await secure.push(TEST_IMAGE, 'team/app:1');
    const other = await secure.push(TEST_IMAGE, 'elsewhere/app:1');
    // The node's credentials, where the kubelet keeps them (<root-dir>/config.json): team only.
    const w = new World();
    const cfg = dockerConfig(w.dir, { [`${secure.host}/team`]: USER });
    try {
      mkdirSync(w.stateDir, { recursive: true });
      copyFileSync(join(cfg, 'config.json'), join(w.stateDir, 'config.json'));
      const r = await w.cli('apply', '-f', w.write('ok.yaml', podYaml('scoped', ok)), '--timeout', '30s');
      expect(r.err).not.toMatch(/podrun:|warning/);
      expect(r.err).toContain(`Pulled image ${ok} in`);
      expect(r.code).toBe(0);
      expect(await hasImage(ok)).toBe(true);
      const denied = await w.cli('apply', '-f', w.write('other.yaml', podYaml('unscoped', other)), '--timeout', '20s');
      expect(denied.code).toBe(1);
      // Without credentials the engine tries HTTPS (401), then, loopback being an insecure registry
      // to it, plain HTTP: its message is about the latter. What matters: no pull, and the reason.
      expect(denied.err).toMatch(
        /failed to pull image .*elsewhere\/app:1: .*(unauthorized|authentication required|no basic auth|HTTP request to an HTTPS server)/i,
      );
      expect(denied.err).not.toContain(USER.password);
    } finally {
      await w.cleanup();
    }
  }, 90_000);

  it('a missing tag fails as ErrImagePull, naming the tag', async () => {
    await secure.push(TEST_IMAGE, 'team/tagged:1');
    const creds = credentials({ [secure.host]: USER });
    const file = world.write('missing.yaml', podYaml('missing', `${secure.host}/team/tagged:nope`));
    const r = await world.cli('--image-credentials', creds, 'apply', '-f', file, '--timeout', '20s');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/tagged:nope.*(manifest unknown|not found)/i);
    expect((await world.cli('get', 'pods', '-n', ns, 'missing')).out).toMatch(/ErrImagePull/);
  }, 60_000);

  it('podrun images lists what a set needs; podrun pull has it all, with credentials; a docker-loaded image runs with the registry gone', async () => {
    const a = await secure.push(TEST_IMAGE, 'bake/a:1');
    const b = await secure.push(TEST_IMAGE, 'bake/b:1');
    const creds = credentials({ [secure.host]: USER });
    const dir = join(world.dir, 'bake');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'a.yaml'), podYaml('bake-a', a));
    writeFileSync(join(dir, 'b.yaml'), podYaml('bake-b', b, `  initContainers:\n  - {name: init, image: ${a}, command: ["true"]}\n`));
    const listed = await world.cli('images', '-f', dir);
    expect(listed.code).toBe(0);
    expect(listed.out.split('\n')[0]).toMatch(/IMAGE\s+PULL POLICY\s+PRESENT\s+USED BY/);
    expect(listed.out).toMatch(new RegExp(`${PAUSE_IMAGE}\\s+IfNotPresent\\s+yes\\s+\\(pod sandbox\\)`));
    expect(listed.out).toMatch(new RegExp(`${a.replace(/[.:/]/g, '\\$&')}\\s+IfNotPresent\\s+no\\s+${ns}/bake-a/app,${ns}/bake-b/init`));
    expect((await world.cli('images', '-f', dir, '-o', 'name')).out.split('\n')).toEqual([PAUSE_IMAGE, a, b]);
    const pulled = await world.cli('--image-credentials', creds, 'pull', '-f', dir);
    expect(pulled.err).not.toContain(USER.password);
    expect(pulled.code).toBe(0);
    expect(pulled.out).toContain('3 of 3 images present');
    expect(await hasImage(a)).toBe(true);
    expect(await hasImage(b)).toBe(true);

    // The air-gapped box: the image arrives as a tarball (docker save | docker load), no registry.
    const saved = await docker.getImage(a).get();
    const chunks: Buffer[] = [];
    for await (const c of saved) chunks.push(c as Buffer);
    await untag(a);
    await untag(b);
    await secure.stop();
    try {
      const tarball = join(world.dir, 'images.tar');
      writeFileSync(tarball, Buffer.concat(chunks));
      const load = await docker.loadImage(tarball);
      await new Promise<void>((resolve, reject) => docker.modem.followProgress(load, (err: Error | null) => (err ? reject(err) : resolve())));
      expect(await hasImage(a)).toBe(true);
      const r = await world.cli('apply', '-f', join(dir, 'a.yaml'), '--timeout', '30s');
      expect(r.err).toBe('');
      expect(r.code).toBe(0);
      const failed = await world.cli('pull', '-f', dir);
      expect(failed.code).toBe(1);
      expect(failed.out).toContain('2 of 3 images present');
      // The policies as the kubelet reads them, with no registry: Always must reach it even for an
      // image the node has; Never never does, and says so for one it lacks.
      const always = await world.cli(
        'apply',
        '-f',
        world.write('always.yaml', podYaml('always', a).replace(`image: ${a}`, `image: ${a}\n    imagePullPolicy: Always`)),
        '--timeout',
        '20s',
      );
      expect(always.code).toBe(1);
      expect((await world.cli('get', 'pods', '-n', ns, 'always')).out).toMatch(/always\s+0\/1\s+ErrImagePull/);
      const never = await world.cli(
        'apply',
        '-f',
        world.write('never.yaml', podYaml('never', b).replace(`image: ${b}`, `image: ${b}\n    imagePullPolicy: Never`)),
        '--timeout',
        '20s',
      );
      expect(never.code).toBe(1);
      expect(never.err).toContain('is not present and its imagePullPolicy is Never');
      expect((await world.cli('get', 'pods', '-n', ns, 'never')).out).toMatch(/never\s+0\/1\s+ErrImageNeverPull/);
    } finally {
      await secure.start(secure.port);
    }
  }, 120_000);
});

describe('the pause image', () => {
  it("one the engine lacks is pulled (with the node's credentials) when the sandbox is made, and the pod runs", async () => {
    const pause = await secure.push(PAUSE_IMAGE, `infra/pause-${ns}:1`);
    await untag(pause);
    expect(await hasImage(pause)).toBe(false);
    const creds = credentials({ [secure.host]: USER });
    const file = world.write('own-pause.yaml', podYaml('own-pause', TEST_IMAGE));
    try {
      const r = await world.cli('--pause-image', pause, '--image-credentials', creds, 'apply', '-f', file, '--timeout', '30s');
      expect(r.err).not.toContain('podrun:');
      expect(r.code).toBe(0);
      expect(await hasImage(pause)).toBe(true);
      const sandbox = (await podContainers(ns, 'own-pause')).find((c) => c.Labels[LABEL.containerName] === 'POD');
      expect(sandbox?.Image).toBe(pause);
    } finally {
      await world.cli('--pause-image', pause, 'delete', '-f', file, '--grace-period', '0');
      await untag(pause);
    }
  }, 60_000);
});

describe('pull progress', () => {
  it("on a terminal, apply redraws each pull's layers and bytes in place and ends with its total; off a terminal, plain lines", async () => {
    const local = `podrun-test/layered-${ns}:1`;
    await buildLayeredImage(local, 4, 12);
    const plain = new LocalRegistry();
    await plain.start();
    try {
      const ref = await plain.push(local, 'layers/app:1');
      await untag(local);
      const file = world.write('layers.yaml', podYaml('layers', ref));
      // `script` gives podrun a pseudo-terminal, as a user's shell would.
      const tty = await new Promise<string>((resolve) => {
        const p = spawn(
          'script',
          ['-qfec', `${BIN} --state-dir ${world.stateDir} --pause-image ${PAUSE_IMAGE} --node-ip 127.0.0.1 apply -f ${file} --timeout 60s`, '/dev/null'],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let out = '';
        p.stdout.on('data', (c: Buffer) => (out += c.toString()));
        p.on('close', () => resolve(out));
      });
      expect(tty).toMatch(new RegExp(`\\r\\x1b\\[KPulling ${ref.replace(/[.:/]/g, '\\$&')}: \\d/5 layers, [\\d.]+ [kM]B/[\\d.]+ MB`));
      expect(tty).toMatch(new RegExp(`Pulled image ${ref.replace(/[.:/]/g, '\\$&')} in [\\d.]+s \\(5 layers, 5\\d\\.\\d MB\\)`));
      expect(tty).toMatch(/1 pod ready/);
      // Off a terminal the same pull prints lines a log keeps.
      await world.cli('delete', '-f', file, '--grace-period', '0');
      await untag(ref);
      const r = await world.bin(['apply', '-f', file, '--timeout', '60s']);
      expect(r.code).toBe(0);
      expect(r.err).not.toContain('\x1b[');
      expect(r.err).toContain(`Pulling image ${ref}\n`);
      expect(r.err).toMatch(/Pulled image .* in [\d.]+s \(5 layers/);
    } finally {
      // The pod goes first: an image a container uses cannot be untagged.
      await world.cli('delete', '-f', world.dir + '/layers.yaml', '--grace-period', '0');
      await plain.close();
      await untag(local);
    }
  }, 180_000);
});

describe('the agent and a registry that goes away', () => {
  it('an update whose registry is down keeps the running version; attempts back off 10 s then 20 s; the update lands once the registry is back', async () => {
    const reg = new LocalRegistry();
    await reg.start();
    const w = new World();
    mkdirSync(w.manifests, { recursive: true });
    const v1 = await reg.push(TEST_IMAGE, 'outage/app:1');
    const v2 = await reg.push(TEST_IMAGE, 'outage/app:2');
    const agent = new AgentProcess(w.stateDir, ['--manifest-dir', w.manifests]);
    let pulls: Awaited<ReturnType<typeof followEvents>> | undefined;
    try {
      writeFileSync(join(w.manifests, 'p.yaml'), podYaml('outage', v1));
      await agent.started();
      const running = await untilPod(w, ns, 'outage', 'v1 running', (p) => p.status.containerStatuses?.[0]?.state.running !== undefined, 40_000);
      const v1Id = running.status.containerStatuses?.[0]?.containerID;
      await reg.stop();
      // Followed live: the engine keeps only its last 256 events for a since/until query.
      pulls = await followEvents([], undefined, { type: ['image'], image: [v2] });
      writeFileSync(join(w.manifests, 'p.yaml'), podYaml('outage', v2));
      // A new pod from the same registry has nothing to keep running: kubectl's reasons show.
      writeFileSync(join(w.manifests, 'new.yaml'), podYaml('fresh', `${reg.host}/outage/fresh:1`));
      await agent.waitForLog(/failed to pull image .*outage\/app:2/, 20_000);
      const fresh = await untilPod(
        w,
        ns,
        'fresh',
        'ImagePullBackOff',
        (p) => p.status.containerStatuses?.[0]?.state.waiting?.reason === 'ImagePullBackOff',
        15_000,
      );
      expect(fresh.status.containerStatuses?.[0]?.state.waiting?.message).toMatch(/Back-off pulling image .*outage\/fresh:1.*connection refused/);
      const freshEvents = (await w.cli('describe', 'pod', 'fresh', '-n', ns)).out;
      expect(freshEvents).toMatch(/Warning\s+Failed\s+.*Failed to pull image/);
      expect(freshEvents).toMatch(/Normal\s+BackOff\s+.*Back-off pulling image/);
      expect(await agentGetText(w.stateDir, '/metrics')).toMatch(/podrun_image_pull_duration_seconds_count\{result="error"\} [1-9]/);
      // Through the first attempt and its back-off, v1 runs on, untouched.
      const during = await untilPod(w, ns, 'outage', 'the update to be seen', (p) => (p.spec.containers?.[0]?.image ?? '') === v2, 10_000);
      const held = (await podContainers(ns, 'outage', w.instance)).filter((c) => c.State === 'running' && c.Labels[LABEL.containerName] === 'app');
      expect(held.map((c) => c.Image)).toEqual([v1]);
      expect(`docker://${held[0]?.Id}`).toBe(v1Id);
      expect(during.status.phase).toBe('Running');
      const describe = await w.cli('describe', 'pod', 'outage', '-n', ns);
      expect(describe.out).toMatch(/Failed to pull image .*outage\/app:2/);
      // Second attempt at ~10 s; the registry comes back after it, the third (at ~30 s) succeeds.
      await until('the second failed attempt', async () => (failedAttempts(agent.logs(), 'outage/app:2').length >= 2 ? true : undefined), 25_000);
      await reg.start(reg.port);
      const upAt = Date.now();
      const pulledAt = await until('the engine to pull v2', async () => pulls?.events.find((e) => e.action === 'pull')?.timeMs, 40_000);
      const attempts = failedAttempts(agent.logs(), 'outage/app:2');
      expect(attempts.length).toBe(2);
      const gap1 = (attempts[1]! - attempts[0]!) / 1000;
      const gap2 = (pulledAt - attempts[1]!) / 1000;
      // Each back-off waited out, and not the next one: 10 s, not 20; 20 s, not 40. A back-off a
      // step longer fails the upper bounds; a machine's speed cannot (it would take 10 s late).
      expect(gap1).toBeGreaterThanOrEqual(9.5);
      expect(gap1).toBeLessThan(20);
      expect(gap2).toBeGreaterThanOrEqual(19.5);
      expect(gap2).toBeLessThan(40);
      expect(pulledAt).toBeGreaterThan(upAt);
      await untilPod(
        w,
        ns,
        'outage',
        'v2 running',
        (p) => p.status.containerStatuses?.[0]?.image === v2 && p.status.containerStatuses?.[0]?.state.running !== undefined,
        20_000,
      );
      const pod = await agentPod(w, ns, 'outage');
      expect(pod?.status.containerStatuses?.[0]?.restartCount).toBeGreaterThanOrEqual(0);
      expect(agent.logs()).not.toContain(USER.password);
    } finally {
      pulls?.stop();
      await agent.stop();
      await w.cleanup();
      await reg.close();
    }
  }, 150_000);
});

function failedAttempts(log: string, image: string): number[] {
  return (
    log
      .split('\n')
      // The pull's own record (one per attempt), not the pod worker's line about it.
      .filter((l) => /^\S+ WARN\s+failed to pull image /.test(l) && l.includes(image))
      .map((l) => Date.parse(l.slice(0, 24)))
  );
}
