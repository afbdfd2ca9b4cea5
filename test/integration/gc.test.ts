import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { LABEL } from '../../src/runtime/labels.js';
import { AgentProcess } from './agent-helpers.js';
import { testRunLabels } from './suite-run.js';
import { DockerEngine } from '../../src/runtime/docker/docker-engine.js';
import { agentGetText, docker, PAUSE_IMAGE, podContainers, TEST_IMAGE, unique, until, World } from './helpers.js';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

const world = new World();
const ns = unique('gc');
const dir = join(world.dir, 'manifests');
mkdirSync(dir);
let agent: AgentProcess | undefined;
afterAll(async () => {
  await agent?.stop();
  await world.cleanup();
});

const dead = async (name: string, container: string): Promise<number> =>
  (await podContainers(ns, name)).filter((c) => c.Labels[LABEL.containerName] === container && c.State === 'exited').length;

describe('garbage collection', () => {
  it('prunes the exited instances of a crash-looping pod to the bound, and never touches foreign containers', async () => {
    const name = unique('loop');
    writeFileSync(
      join(dir, `${name}.yaml`),
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sh, -c, 'exit 1']}]
`,
    );
    const foreign = await docker.createContainer({
      Image: TEST_IMAGE,
      Cmd: ['true'],
      Labels: { 'com.example.owner': 'someone-else', ...testRunLabels() },
      HostConfig: { NetworkMode: 'none' },
    });
    await foreign.start();
    try {
      // A syncer that keeps every dead instance lets them pile up...
      agent = new AgentProcess(world.stateDir, [
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
      await agent.started();
      await until('six dead instances', async () => ((await dead(name, 'c')) >= 6 ? true : undefined), 40_000);
      await agent.stop();
      agent = undefined;
      // The last instance the agent started may still be on its way out.
      await until('the last instance to exit', async () =>
        (await podContainers(ns, name)).some((c) => c.Labels[LABEL.containerName] === 'c' && c.State !== 'exited') ? undefined : true,
      );
      const piled = await dead(name, 'c');

      // ...`podrun gc --dry-run` shows what would go, and changes nothing...
      const dry = await world.cli('gc', '--dry-run', '--no-images');
      expect(dry.code, dry.err).toBe(0);
      expect(dry.out.split('\n').filter((l) => l.startsWith(`would remove container c of pod ${ns}/${name} (more than 1 dead instance(s))`))).toHaveLength(
        piled - 1,
      );
      expect(await dead(name, 'c')).toBe(piled);

      // ...and an agent with the default bound prunes them to one.
      agent = new AgentProcess(world.stateDir, ['--manifest-dir', dir, '--crash-backoff-initial', '30s', '--gc-period', '1s']);
      await agent.started();
      await until('the pile pruned to the bound', async () => ((await dead(name, 'c')) <= 1 ? true : undefined), 20_000);
      const metrics = await until('metrics', async () => {
        const m = await agentGetText(world.stateDir, '/metrics');
        const removed = Number(/^podrun_gc_containers_removed_total (\d+)$/m.exec(m ?? '')?.[1] ?? 0);
        return removed >= piled - 1 ? m : undefined;
      });
      expect(metrics).toMatch(/^podrun_pleg_relist_duration_seconds_count [1-9]/m);
      // The foreign container is exactly as it was.
      expect((await foreign.inspect()).State.Status).toBe('exited');
    } finally {
      await foreign.remove({ force: true });
    }
  });

  it('removing a pod takes its sandbox, containers and emptyDir with it', async () => {
    agent ??= new AgentProcess(world.stateDir, ['--manifest-dir', dir, '--gc-period', '1s']);
    await agent.started();
    const name = unique('gone');
    writeFileSync(
      join(dir, `${name}.yaml`),
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sh, -c, 'echo x > /scratch/x; exec sleep 3600'], volumeMounts: [{name: s, mountPath: /scratch}]}]
  volumes: [{name: s, emptyDir: {}}]
`,
    );
    const uid = await until('the pod to run', async () => {
      const list = await podContainers(ns, name);
      return list.filter((c) => c.State === 'running').length === 2 ? list[0]!.Labels[LABEL.podUid] : undefined;
    });
    const emptyDir = join(world.stateDir, 'pods', uid!, 'volumes', 'empty-dir', 's');
    await until('the emptyDir to be written', async () => (existsSync(join(emptyDir, 'x')) ? true : undefined));
    unlinkSync(join(dir, `${name}.yaml`));
    await until('sandbox and containers to go', async () => ((await podContainers(ns, name)).length === 0 ? true : undefined));
    // The emptyDir goes right after the containers.
    await until('the emptyDir to go', async () => (existsSync(join(world.stateDir, 'pods', uid!)) ? undefined : true));
  });
});

describe('garbage collection on a fresh state directory', () => {
  it('collects dead pods that no source declares (nothing else has to be applied first)', async () => {
    const fresh = new World();
    const ns2 = unique('orphans');
    let a: AgentProcess | undefined;
    try {
      const { DockerEngine } = await import('../../src/runtime/docker/docker-engine.js');
      const { loadManifestText } = await import('../../src/manifest/load.js');
      const { identityOf } = await import('../../src/runtime/labels.js');
      const { sandboxHash } = await import('../../src/manifest/hash.js');
      const d = loadManifestText({
        file: 'x',
        source: 'file:/gone/long-ago.yaml',
        text: `apiVersion: v1
kind: Pod
metadata: {name: orphan, namespace: ${ns2}}
spec: {containers: [{name: c, image: ${TEST_IMAGE}}]}
`,
      }).pods[0]!;
      const rt = new DockerEngine({ stateDir: fresh.stateDir, pauseImage: 'podrun-test/pause:1' });
      const sandbox = await rt.createSandbox(d.pod, identityOf(d.pod, d.origin.source), 0, sandboxHash(d.pod), false);
      await rt.stopContainer(sandbox.id, 0);
      a = new AgentProcess(fresh.stateDir, ['--gc-period', '1s']);
      await a.started();
      await until('the orphan pod to be collected', async () => ((await podContainers(ns2, 'orphan')).length === 0 ? true : undefined));
    } finally {
      await a?.stop();
      await fresh.cleanup();
    }
  });
});

describe('pruning right after a death', () => {
  it('keeps a crash-looping container to one dead instance with no sweep at all', async () => {
    const name = unique('prune');
    // A world of its own: this file's other agent holds the shared state dir.
    const own = new World();
    const pdir = join(own.dir, 'manifests');
    mkdirSync(pdir);
    writeFileSync(
      join(pdir, 'pod.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sh, -c, 'sleep 0.3; exit 1']}]
`,
    );
    // The sweep runs once an hour: only the prune after each death can keep the pile down.
    const a = new AgentProcess(own.stateDir, ['--manifest-dir', pdir, '--crash-backoff-initial', '0.3s', '--crash-backoff-max', '0.3s', '--gc-period', '1h']);
    try {
      await a.started();
      let most = 0;
      const restarts = async (): Promise<number> => Math.max(0, ...(await podContainers(ns, name)).map((c) => Number(c.Labels[LABEL.restartCount])));
      await until(
        'five deaths',
        async () => {
          most = Math.max(most, await dead(name, 'c'));
          return (await restarts()) >= 5 ? true : undefined;
        },
        30_000,
      );
      // The newest dead one is kept for logs --previous; another may be seen for the moment between a death and its prune.
      expect(most).toBeLessThanOrEqual(2);
    } finally {
      await a.stop();
      await own.cleanup();
    }
  });
});

describe('image removal', () => {
  it('removes an unused image that carries several tags (by tag, then by id)', async () => {
    const c = await docker.createContainer({ Image: TEST_IMAGE, Cmd: ['true'], Labels: testRunLabels() });
    const repo = `podrun-test/gc-image-${ns}`;
    const image = (await c.commit({ repo, tag: 'a', changes: [`LABEL podrun-test-gc=${ns}`] })) as { Id: string };
    await c.remove({ force: true });
    await docker.getImage(`${repo}:a`).tag({ repo, tag: 'b' });
    await docker.getImage(`${repo}:a`).tag({ repo: `${repo}-other`, tag: 'c' });
    const rt = new DockerEngine({ stateDir: world.stateDir, pauseImage: PAUSE_IMAGE });
    await rt.removeImage(image.Id, [`${repo}:a`, `${repo}:b`, `${repo}-other:c`]);
    await expect(docker.getImage(image.Id).inspect()).rejects.toThrow(/no such image/i);
  });
});

describe('the engine door', () => {
  it('is src/runtime alone: no other module imports dockerode', () => {
    const offenders = readdirSync(SRC, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && !f.startsWith('runtime/'))
      .filter((f) => /from 'dockerode'/.test(readFileSync(join(SRC, f), 'utf8')));
    expect(offenders).toEqual([]);
  });
});
