import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GarbageCollector } from '../../src/gc/collector.js';
import { CriEngine } from '../../src/runtime/cri/engine.js';
import { ContainerState, PodSandboxState } from '../../src/runtime/cri/messages.js';
import { LABEL } from '../../src/runtime/labels.js';
import type { V1Pod } from '../../src/status/v1.js';
import { AgentProcess } from './agent-helpers.js';
import { CRI_PAUSE_IMAGE, CRI_TEST_IMAGE, criTestBed } from './cri-engine.js';
import { podContainers, TEST_IMAGE, unique, until, World, type CliResult } from './helpers.js';
import { hasImage as dockerHasImage, LocalRegistry, untag } from './registry-helpers.js';

// Pulls with the node's credentials and container GC, written once and run on both engines: the
// shared Docker engine, and a private containerd through the CRI (no Docker engine reachable).
// Image GC with real thresholds runs on the private containerd only: on the shared Docker engine it
// would remove other sessions' images.

/** One podrun record on the engine, as the engine itself lists it. */
interface Rec {
  id: string;
  sandbox: boolean;
  name: string;
  live: boolean;
}

/**
 * An engine under test, reached as a user would reach it (the built binary, an agent process),
 * and looked at through the engine's own API. A minimal local bed, until the shared one lands.
 */
interface Bed {
  engine: 'docker' | 'cri';
  world: World;
  /** The binary on this engine, on `w`'s state dir (this bed's world by default). */
  cli(args: string[], w?: World): Promise<CliResult>;
  /** An agent on this engine, on `w`'s state dir (this bed's world by default). */
  agent(args: string[], w?: World): AgentProcess;
  hasImage(ref: string): Promise<boolean>;
  /** Lets the engine pull from a plain-HTTP loopback registry. */
  trustRegistry(host: string): void;
  /** A pod's sandboxes and containers of `w`'s instance. */
  records(ns: string, name: string, w?: World): Promise<Rec[]>;
  /** Kills a sandbox's pause process behind podrun's back (no stop through podrun or the CRI). */
  killSandbox(id: string): void;
  /** Pod addresses the engine's network holds now (undefined: not countable here). */
  addressesHeld(): number | undefined;
  /** Live sandboxes on the engine, every instance's. */
  liveSandboxes(): Promise<number>;
}

const USER = { username: 'podrun', password: 'Node-cred-S3cret' };
const registry = new LocalRegistry({ auth: USER });
const pushed: string[] = [];
beforeAll(async () => {
  await registry.start();
}, 60_000);
afterAll(async () => {
  await registry.close();
  for (const ref of pushed) await untag(ref);
});

const dockerWorld = new World();
afterAll(() => dockerWorld.cleanup(), 60_000);
const dockerBed: Bed = {
  engine: 'docker',
  world: dockerWorld,
  cli: (args, w = dockerWorld) => w.bin(args),
  agent: (args, w = dockerWorld) => new AgentProcess(w.stateDir, args),
  hasImage: dockerHasImage,
  // Docker pulls from plain HTTP on 127.0.0.0/8 as it is: loopback is an insecure registry to it.
  trustRegistry: () => undefined,
  records: async (ns, name, w = dockerWorld) =>
    (await podContainers(ns, name, w.instance)).map((c) => ({
      id: c.Id,
      sandbox: c.Labels[LABEL.containerType] === 'sandbox',
      name: c.Labels[LABEL.containerName] ?? '',
      live: c.State === 'running',
    })),
  killSandbox: (id) => {
    expect(spawnSync('docker', ['kill', id]).status).toBe(0);
  },
  // The shared engine's bridge serves every session: its addresses are not this test's to count.
  addressesHeld: () => undefined,
  liveSandboxes: async () => 0,
};

const { ctrd, world: criWorld, criArgs, noDocker, podLogs } = criTestBed();
const criBed: Bed = {
  engine: 'cri',
  world: criWorld,
  cli: (args, w = criWorld) => w.bin([...criArgs(), ...args], { env: noDocker }),
  agent: (args, w = criWorld) =>
    new AgentProcess(w.stateDir, args, { ...noDocker, PODRUN_CONTAINER_RUNTIME_ENDPOINT: ctrd.endpoint, PODRUN_POD_LOGS_DIR: podLogs }),
  hasImage: async (ref) => (await ctrd.client.imageStatus(ref)) !== undefined,
  trustRegistry: (host) => ctrd.trustPlainHttpRegistry(host),
  records: async (ns, name, w = criWorld) => {
    const labelSelector = { [LABEL.podNamespace]: ns, [LABEL.podName]: name, [LABEL.instance]: w.instance };
    const [sandboxes, containers] = await Promise.all([ctrd.client.listPodSandbox({ labelSelector }), ctrd.client.listContainers({ labelSelector })]);
    return [
      ...sandboxes.map((s) => ({ id: s.id, sandbox: true, name: s.metadata?.name ?? '', live: s.state === PodSandboxState.READY })),
      ...containers.map((c) => ({
        id: c.id,
        sandbox: false,
        name: c.metadata?.name ?? '',
        live: c.state === ContainerState.RUNNING || c.state === ContainerState.CREATED,
      })),
    ];
  },
  killSandbox: (id) => {
    expect(spawnSync('ctr', ['-a', ctrd.socket, '-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', id]).status).toBe(0);
  },
  // host-local IPAM keeps one file per address it gave out, named for the address.
  addressesHeld: () => readdirSync(join(ctrd.dir, 'ipam', ctrd.network)).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f)).length,
  liveSandboxes: async () => (await ctrd.client.listPodSandbox()).filter((s) => s.state === PodSandboxState.READY).length,
};

const podYaml = (ns: string, name: string, image: string, command = 'echo up; exec sleep 3600', restartPolicy = 'Always'): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: ${restartPolicy}
  containers:
  - {name: app, image: ${image}, command: [sh, -c, '${command}']}
`;

/** A config.json as `docker login` writes it, for the registry of this file. */
const credentialsJson = (password: string): string =>
  `${JSON.stringify({ auths: { [registry.host]: { auth: Buffer.from(`${USER.username}:${password}`).toString('base64') } } })}\n`;

async function push(repo: string): Promise<string> {
  const ref = await registry.push(TEST_IMAGE, repo);
  pushed.push(ref);
  return ref;
}

async function podOf(bed: Bed, ns: string, name: string): Promise<V1Pod | undefined> {
  const r = await bed.cli(['get', 'pods', '-n', ns, '-o', 'json']);
  if (r.code !== 0) return undefined;
  return (JSON.parse(r.out) as { items: V1Pod[] }).items.find((p) => p.metadata.name === name);
}

const waiting = (p: V1Pod | undefined): { reason?: string; message?: string } | undefined => p?.status.containerStatuses?.[0]?.state.waiting;

/**
 * The agent and a pod whose image only an auth-protected registry has: with a wrong credential in
 * the node's config.json, ErrImagePull then ImagePullBackOff, naming the registry's reason; the
 * right credential written while the agent runs is used at the next attempt, and the pod runs; a
 * missing tag then backs off naming it. The password is never printed.
 */
async function pullBackOffThenCredentialFixed(bed: Bed): Promise<void> {
  const ns = unique(`pull-${bed.engine}`);
  bed.trustRegistry(registry.host);
  const locked = await push(`node/${unique('locked')}:1`);
  const absent = `${registry.host}/node/${unique('absent')}:nope`;
  expect(await bed.hasImage(locked)).toBe(false);
  const dir = join(bed.world.dir, `${ns}-manifests`);
  mkdirSync(dir, { recursive: true });
  mkdirSync(bed.world.stateDir, { recursive: true });
  // The node's credentials, where the kubelet reads them first (<root-dir>/config.json): wrong.
  writeFileSync(join(bed.world.stateDir, 'config.json'), credentialsJson('not-the-password'));
  writeFileSync(join(dir, 'locked.yaml'), podYaml(ns, 'locked', locked));
  writeFileSync(join(dir, 'absent.yaml'), podYaml(ns, 'absent', absent));
  const agent = bed.agent(['--manifest-dir', dir]);
  try {
    await agent.started();
    const pulled = await until(
      'ErrImagePull, then ImagePullBackOff for both pods',
      async () => {
        const [l, a] = await Promise.all([podOf(bed, ns, 'locked'), podOf(bed, ns, 'absent')]);
        return waiting(l)?.reason === 'ImagePullBackOff' && waiting(a)?.reason === 'ImagePullBackOff' ? { l, a } : undefined;
      },
      40_000,
    );
    expect(waiting(pulled.l)?.message).toMatch(
      new RegExp(`Back-off pulling image .*${locked.split('/').pop()?.replace(/[.:]/g, '\\$&')}.*(unauthorized|authentication required|no basic auth)`, 'i'),
    );
    const described = await bed.cli(['describe', 'pod', 'locked', '-n', ns]);
    expect(described.out).toMatch(/Warning\s+Failed\s+.*Failed to pull image/);
    expect(described.out).toMatch(/Error: ErrImagePull/);
    expect(described.out).toMatch(/Normal\s+BackOff\s+.*Back-off pulling image/);
    expect(await bed.hasImage(locked)).toBe(false);

    // The right credential, written while the agent runs: the next attempt (after the back-off) pulls.
    writeFileSync(join(bed.world.stateDir, 'config.json'), credentialsJson(USER.password));
    await until(
      'the locked pod to run',
      async () => ((await podOf(bed, ns, 'locked'))?.status.containerStatuses?.[0]?.state.running ? true : undefined),
      60_000,
    );
    expect(await bed.hasImage(locked)).toBe(true);
    // Issue 22's back-off: the second attempt came 10 s after the first failed (the fix was written before it).
    const attempts = agent
      .logs()
      .split('\n')
      .filter((l) => l.includes(`INFO  pulling image ${locked}`))
      .map((l) => Date.parse(l.slice(0, 24)));
    const failedAt = Date.parse(
      agent
        .logs()
        .split('\n')
        .find((l) => l.includes(`WARN  failed to pull image ${locked}`))
        ?.slice(0, 24) ?? '',
    );
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    const gap = ((attempts[1] ?? 0) - failedAt) / 1000;
    // Waited out, and not the next back-off (20 s): a back-off a step longer fails the upper
    // bound; a machine's speed cannot (it would take 10 s late).
    expect(gap).toBeGreaterThanOrEqual(9.5);
    expect(gap).toBeLessThan(20);
    // With the credential right, the missing tag's attempts say what is wrong now: no such tag.
    const gone = await until(
      "the missing tag's reason",
      async () => {
        const w = waiting(await podOf(bed, ns, 'absent'));
        return w?.reason === 'ImagePullBackOff' && /not found|manifest unknown/i.test(w.message ?? '') ? w : undefined;
      },
      60_000,
    );
    expect(gone.message).toMatch(/Back-off pulling image .*absent.*:nope/);
    for (const text of [agent.logs(), described.out]) expect(text).not.toContain(USER.password);
    expect(agent.logs()).not.toContain('not-the-password');
  } catch (err) {
    throw new Error(`${(err as Error).message}\nagent log:\n${agent.logs().slice(-3000)}`);
  } finally {
    await agent.stop();
    await bed.cli(['delete', '-f', dir, '--grace-period', '0']);
  }
}

/**
 * Without an agent: `apply` pulls with the node's credentials (the state dir's config.json);
 * `podrun pull -f` has every image of a set; a wrong --image-credentials and a missing tag fail
 * as ErrImagePull with the registry's reason, and `get` says so.
 */
async function applyAndPullWithCredentials(bed: Bed): Promise<void> {
  const ns = unique(`apply-${bed.engine}`);
  bed.trustRegistry(registry.host);
  mkdirSync(bed.world.stateDir, { recursive: true });
  writeFileSync(join(bed.world.stateDir, 'config.json'), credentialsJson(USER.password));
  const app = await push(`node/${unique('app')}:1`);
  const r = await bed.cli(['apply', '-f', bed.world.write(`${ns}-app.yaml`, podYaml(ns, 'app', app)), '--timeout', '60s']);
  expect(r.code, r.err).toBe(0);
  expect(r.err).toContain(`Pulled image ${app} in`);
  expect(await bed.hasImage(app)).toBe(true);
  expect((await bed.cli(['get', 'pods', '-n', ns])).out).toMatch(/app\s+1\/1\s+Running/);

  const baked = await push(`node/${unique('bake')}:1`);
  const set = join(bed.world.dir, `${ns}-set`);
  mkdirSync(set);
  writeFileSync(join(set, 'baked.yaml'), podYaml(ns, 'baked', baked));
  const pull = await bed.cli(['pull', '-f', set]);
  expect(pull.code, pull.err).toBe(0);
  expect(pull.out).toContain('2 of 2 images present');
  expect(await bed.hasImage(baked)).toBe(true);

  const wrong = join(bed.world.dir, `${ns}-wrong.json`);
  writeFileSync(wrong, credentialsJson('wrong-password'));
  const denied = await push(`node/${unique('denied')}:1`);
  const d = await bed.cli([
    '--image-credentials',
    wrong,
    'apply',
    '-f',
    bed.world.write(`${ns}-denied.yaml`, podYaml(ns, 'denied', denied)),
    '--timeout',
    '20s',
  ]);
  expect(d.code).toBe(1);
  expect(d.err).toMatch(/failed to pull image .*denied.*(unauthorized|authentication required|no basic auth)/i);
  expect((await bed.cli(['get', 'pods', '-n', ns, 'denied'])).out).toMatch(/denied\s+0\/1\s+ErrImagePull/);
  // Two credentials match, the repository's own (wrong) before the registry's (right): each is
  // tried in turn, as the kubelet's PullImage does, and the second pulls.
  const two = join(bed.world.dir, `${ns}-two.json`);
  const basic = (password: string): { auth: string } => ({ auth: Buffer.from(`${USER.username}:${password}`).toString('base64') });
  writeFileSync(two, `${JSON.stringify({ auths: { [`${registry.host}/node`]: basic('wrong-password'), [registry.host]: basic(USER.password) } })}\n`);
  const second = await push(`node/${unique('second')}:1`);
  const s = await bed.cli(['--image-credentials', two, 'apply', '-f', bed.world.write(`${ns}-second.yaml`, podYaml(ns, 'second', second)), '--timeout', '60s']);
  expect(s.code, s.err).toBe(0);
  expect(s.err).toContain(`Pulled image ${second} in`);
  const missing = await bed.cli([
    'apply',
    '-f',
    bed.world.write(`${ns}-missing.yaml`, podYaml(ns, 'missing', `${registry.host}/node/${unique('nothing')}:nope`)),
    '--timeout',
    '20s',
  ]);
  expect(missing.code).toBe(1);
  expect(missing.err).toMatch(/failed to pull image .*:nope.*(not found|manifest unknown)/i);
  for (const text of [r.err, pull.out, pull.err, d.err, s.err, missing.err]) expect(text).not.toContain(USER.password);
  await bed.cli(['delete', 'pods', '--all', '-n', ns, '--grace-period', '0']);
}

/**
 * Container GC: a pod whose sandbox died behind podrun's back (its pause killed, no stop) is made
 * again and the dead sandbox removed (the prune after a sync, the engine's removeSandbox: on CRI
 * StopPodSandbox then RemovePodSandbox, as the kubelet's GC), its network given back; a
 * crash-looping pod's dead instances piled up under a permissive agent, then `podrun gc` (no agent)
 * removes those beyond the kubelet's bound of one, and nothing of another podrun instance.
 */
async function deadContainersAndSandboxes(bed: Bed): Promise<void> {
  const ns = unique(`gc-${bed.engine}`);
  const dir = join(bed.world.dir, `${ns}-manifests`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'loop.yaml'), podYaml(ns, 'loop', TEST_IMAGE, 'exit 1'));
  writeFileSync(join(dir, 'victim.yaml'), podYaml(ns, 'victim', TEST_IMAGE));
  // Another podrun instance on the same engine, with a pile of dead instances of its own.
  const other = new World();
  const otherDir = join(other.dir, 'manifests');
  mkdirSync(otherDir, { recursive: true });
  writeFileSync(join(otherDir, 'theirs.yaml'), podYaml(ns, 'theirs', TEST_IMAGE, 'exit 1'));
  const theirAgent = bed.agent(
    [
      '--manifest-dir',
      otherDir,
      '--crash-backoff-initial',
      '0.2s',
      '--crash-backoff-max',
      '0.2s',
      '--maximum-dead-containers-per-container',
      '1000',
      '--gc-period',
      '1h',
    ],
    other,
  );
  try {
    await theirAgent.started();
    await until(
      "three dead instances of the other instance's crash loop",
      async () => ((await bed.records(ns, 'theirs', other)).filter((c) => !c.sandbox && !c.live).length >= 3 ? true : undefined),
      60_000,
    );
  } finally {
    await theirAgent.stop();
  }
  await until('their crash loop to be all dead', async () => ((await bed.records(ns, 'theirs', other)).some((c) => !c.sandbox && c.live) ? undefined : true));
  const theirs = await bed.records(ns, 'theirs', other);
  const agent = bed.agent([
    '--manifest-dir',
    dir,
    '--crash-backoff-initial',
    '0.2s',
    '--crash-backoff-max',
    '0.2s',
    '--maximum-dead-containers-per-container',
    '1000',
    '--gc-period',
    '1h',
  ]);
  try {
    await agent.started();
    const first = await until(
      'the victim to run',
      async () => {
        const rs = await bed.records(ns, 'victim');
        return rs.some((c) => !c.sandbox && c.live) ? rs.find((c) => c.sandbox && c.live) : undefined;
      },
      40_000,
    );
    bed.killSandbox(first.id);
    await until(
      'the victim in a new sandbox, the dead one removed',
      async () => {
        const rs = await bed.records(ns, 'victim');
        const sandboxes = rs.filter((c) => c.sandbox);
        return sandboxes.length === 1 && sandboxes[0]?.live && sandboxes[0].id !== first.id && rs.some((c) => !c.sandbox && c.live) ? true : undefined;
      },
      60_000,
    );
    // The dead sandbox's address went back to the network: only live sandboxes hold one.
    const held = bed.addressesHeld();
    if (held !== undefined) expect(held).toBe(await bed.liveSandboxes());
    await until(
      'five dead instances of the crash loop',
      async () => ((await bed.records(ns, 'loop')).filter((c) => !c.sandbox && !c.live).length >= 5 ? true : undefined),
      60_000,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}\nagent log:\n${agent.logs().slice(-3000)}`);
  } finally {
    await agent.stop();
  }
  // The last instance the agent started may still be on its way out.
  await until('the crash loop to be all dead', async () => ((await bed.records(ns, 'loop')).some((c) => !c.sandbox && c.live) ? undefined : true));
  const piled = (await bed.records(ns, 'loop')).filter((c) => !c.sandbox && !c.live).length;
  const victimBefore = await bed.records(ns, 'victim');

  const dry = await bed.cli(['gc', '--dry-run', '--no-images']);
  expect(dry.code, dry.err).toBe(0);
  expect(dry.out.split('\n').filter((l) => l.startsWith(`would remove container app of pod ${ns}/loop (more than 1 dead instance(s))`))).toHaveLength(
    piled - 1,
  );
  expect((await bed.records(ns, 'loop')).filter((c) => !c.sandbox && !c.live)).toHaveLength(piled);

  const gc = await bed.cli(['gc', '--no-images']);
  expect(gc.code, `${gc.out}\n${gc.err}`).toBe(0);
  expect(gc.out).not.toMatch(/failed/);
  expect((await bed.records(ns, 'loop')).filter((c) => !c.sandbox && !c.live)).toHaveLength(1);
  const victimAfter = await bed.records(ns, 'victim');
  expect(victimAfter.filter((c) => c.sandbox).map((c) => [c.id, c.live])).toEqual([[victimBefore.find((c) => c.sandbox && c.live)?.id, true]]);
  expect(victimAfter.some((c) => !c.sandbox && c.live)).toBe(true);
  // The other instance's dead instances are exactly where they were.
  expect((await bed.records(ns, 'theirs', other)).map((c) => c.id).sort()).toEqual(theirs.map((c) => c.id).sort());
  await bed.cli(['delete', 'pods', '--all', '-n', ns, '--grace-period', '0'], other);
  await bed.cli(['delete', '-f', dir, '--grace-period', '0']);
  await other.cleanup();
}

for (const bed of [dockerBed, criBed]) {
  describe(`pulls and GC on ${bed.engine}`, () => {
    it(
      "the agent: ErrImagePull → ImagePullBackOff with the registry's reason; a credential fixed while it runs is used at the next attempt",
      () => pullBackOffThenCredentialFixed(bed),
      150_000,
    );
    it("apply and pull -f with the node's credentials; a wrong one and a missing tag are ErrImagePull", () => applyAndPullWithCredentials(bed), 120_000);
    it(
      'a sandbox whose pause was killed is replaced and removed, its address given back; gc removes dead instances beyond the bound, nothing of another instance',
      () => deadContainersAndSandboxes(bed),
      180_000,
    );
  });
}

/** An image of its own id (the test busybox with a label of its own) in the private containerd's k8s.io namespace. */
function importDistinctImage(ref: string, label: string): void {
  const local = ref.replace(/^docker\.io\//, '');
  const r = spawnSync(
    'sh',
    [
      '-c',
      `cid=$(docker create ${TEST_IMAGE} true) && docker commit -c 'LABEL podrun-test-gc=${label}' $cid ${local} >/dev/null && docker rm $cid >/dev/null && docker save ${local} | ctr -a ${ctrd.socket} -n k8s.io images import - >/dev/null; rc=$?; docker rmi ${local} >/dev/null; exit $rc`,
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`making ${ref}: ${r.stderr}`);
}

describe('image GC on containerd (ImageService)', () => {
  it("below the high threshold nothing goes; above it, unused images go and never one a container uses nor the runtime's sandbox image", async () => {
    const ns = unique('imggc');
    const tag = (n: string): string => `docker.io/podrun-test/gc-${ns}:${n}`;
    for (const n of ['unused-a', 'unused-b', 'dead', 'running']) importDistinctImage(tag(n), `${ns}-${n}`);
    const other = new World();
    try {
      // A dead container of this instance, and a running one of another podrun instance.
      const dead = await criBed.cli(['apply', '-f', criWorld.write(`${ns}-dead.yaml`, podYaml(ns, 'dead', tag('dead'), 'true', 'Never')), '--timeout', '30s']);
      expect(dead.code, dead.err).toBe(0);
      await until("the dead pod's container to exit", async () => ((await criBed.records(ns, 'dead')).some((c) => !c.sandbox && !c.live) ? true : undefined));
      const running = await criBed.cli(['apply', '-f', other.write('running.yaml', podYaml(ns, 'running', tag('running'))), '--timeout', '30s'], other);
      expect(running.code, running.err).toBe(0);

      // `podrun gc` on the runtime measures the image file system (a dry run: nothing goes).
      const dry = await criBed.cli(['gc', '--dry-run']);
      expect(dry.code, dry.err).toBe(0);
      expect(dry.out).toMatch(/^images: disk at \d+\.\d%; \d+ to remove$/m);

      // podrun's --pause-image is not the runtime's sandbox_image here: the runtime's own must be kept all the same.
      const engine = new CriEngine({
        stateDir: criWorld.stateDir,
        pauseImage: 'docker.io/podrun-test/not-the-sandbox-image:1',
        runtimeEndpoint: ctrd.endpoint,
        podLogsDir: podLogs,
      });
      try {
        const gcAt = (highPercent: number, lowPercent: number): GarbageCollector =>
          new GarbageCollector(engine, {
            stateDir: criWorld.stateDir,
            pauseImage: 'docker.io/podrun-test/not-the-sandbox-image:1',
            images: { highPercent, lowPercent, minAgeMs: 0 },
          });
        const fs = await ctrd.client.imageFsInfo();
        const mountpoint = fs.imageFilesystems[0]?.fsId?.mountpoint ?? '';
        expect(mountpoint.startsWith(ctrd.dir)).toBe(true);
        const st = statfsSync(mountpoint);
        const percent = ((st.blocks - st.bfree) / st.blocks) * 100;

        // Below the high threshold nothing goes, however low the low one.
        const below = await gcAt(100, 0).collectImages(false);
        expect(below.removed).toBe(0);
        // The usage measured is the image file system's (ImageFsInfo's mountpoint), as the kubelet's.
        expect(Math.abs(below.usagePercent - percent)).toBeLessThan(2);
        // Above the high threshold, but under the low one already: nothing to free.
        expect((await gcAt(1, 100).collectImages(false)).removed).toBe(0);
        for (const n of ['unused-a', 'unused-b']) expect(await criBed.hasImage(tag(n))).toBe(true);

        const above = await gcAt(1, 0).collectImages(false);
        const removed = above.candidates.flatMap((c) => c.tags);
        expect(removed).toEqual(expect.arrayContaining([tag('unused-a'), tag('unused-b')]));
        for (const n of ['unused-a', 'unused-b']) expect(await criBed.hasImage(tag(n))).toBe(false);
        for (const kept of [tag('dead'), tag('running'), CRI_PAUSE_IMAGE]) {
          expect(removed).not.toContain(kept);
          expect(await criBed.hasImage(kept)).toBe(true);
        }
        // The sandbox image kept, a new pod still starts, and the running one ran on.
        const after = await criBed.cli(['apply', '-f', criWorld.write(`${ns}-new.yaml`, podYaml(ns, 'new', tag('running'))), '--timeout', '30s']);
        expect(after.code, after.err).toBe(0);
        expect((await criBed.records(ns, 'running', other)).filter((c) => c.live)).toHaveLength(2);
      } finally {
        engine.close();
      }
    } finally {
      await criBed.cli(['delete', 'pods', '--all', '-n', ns, '--grace-period', '0']);
      await criBed.cli(['delete', 'pods', '--all', '-n', ns, '--grace-period', '0'], other);
      await other.cleanup();
      // The shared busybox may have been collected too (nothing used it): the other tests' copy back.
      if (!(await criBed.hasImage(CRI_TEST_IMAGE))) ctrd.importTestImages();
    }
  }, 180_000);
});
