import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mountsUnder } from '../../src/runtime/safe-mount.js';
import { AgentSuite } from './agent-helpers.js';
import type { EngineBed } from './engine-beds.js';
import { TEST_IMAGE, unique, until } from './helpers.js';

// The pod boundary (issue 18): nothing outside a volume, or outside the node's allowed host paths,
// is ever mounted into a container, whatever a container plants in a volume it can write.
export function podBoundarySuite(bed: EngineBed): void {
  const suite = new AgentSuite('boundary', bed);
  const { ns } = suite;
  const world = { dir: bed.world.dir, stateDir: bed.world.stateDir, write: (name: string, text: string): string => bed.world.write(name, text), cli: bed.cli };

  /** A host directory with a file a pod must never see. */
  function hostSecret(): string {
    const dir = join(world.dir, unique('host'));
    mkdirSync(dir);
    writeFileSync(join(dir, 'secret'), 'node secret\n');
    return dir;
  }

  interface Waiting {
    reason?: string;
    message?: string;
  }

  async function waitingOf(name: string, container: string): Promise<Waiting | undefined> {
    const r = await world.cli('get', 'pods', '-n', ns, name, '-o', 'json');
    if (r.code !== 0) return undefined;
    const pod = JSON.parse(r.out) as { status?: { containerStatuses?: { name: string; state?: { waiting?: Waiting } }[] } };
    return pod.status?.containerStatuses?.find((c) => c.name === container)?.state?.waiting;
  }

  /** Every host path the engine mounts into the pod's containers. */
  async function mountSources(name: string): Promise<string[]> {
    const out: string[] = [];
    for (const c of await bed.containers(ns, name)) out.push(...(await bed.mountSources(c.id)));
    return out;
  }

  function manifestDir(): string {
    const dir = join(world.dir, unique('m'));
    mkdirSync(dir);
    return dir;
  }

  describe(`${bed.tag} subPath cannot leave its volume`, () => {
    it('refuses a subPath that a container made a symlink to a host directory (absolute and with ..), and the other pods run on', async () => {
      const secret = hostSecret();
      const dir = manifestDir();
      const evil = unique('evil');
      const fine = unique('fine');
      // Two ways out: a symlink to the host path, and a relative one that climbs with '..' to /.
      writeFileSync(
        join(dir, 'evil.yaml'),
        `apiVersion: v1
kind: Pod
metadata: {name: ${evil}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: plant
    image: ${TEST_IMAGE}
    command: [sh, -c, 'rm -rf /v/escape /v/up; ln -s ${secret} /v/escape; ln -s ../../../../../../../../../../.. /v/up']
    volumeMounts: [{name: v, mountPath: /v}]
  containers:
  - name: app
    image: ${TEST_IMAGE}
    command: [sh, -c, 'touch /x/written-by-pod; exec sleep 3600']
    volumeMounts: [{name: v, mountPath: /x, subPath: escape}]
  - name: climb
    image: ${TEST_IMAGE}
    command: [sh, -c, 'ls /y > /dev/null; exec sleep 3600']
    volumeMounts: [{name: v, mountPath: /y, subPath: up}]
  volumes: [{name: v, emptyDir: {}}]
`,
      );
      writeFileSync(
        join(dir, 'fine.yaml'),
        `apiVersion: v1
kind: Pod
metadata: {name: ${fine}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: prepare
    image: ${TEST_IMAGE}
    command: [sh, -c, 'mkdir -p /v/real/sub && echo inside > /v/real/sub/f && ln -sfn real /v/link']
    volumeMounts: [{name: v, mountPath: /v}]
  containers:
  - name: app
    image: ${TEST_IMAGE}
    command: [sh, -c, 'cat /x/sub/f && exec sleep 3600']
    volumeMounts: [{name: v, mountPath: /x, subPath: link}]
  volumes: [{name: v, emptyDir: {}}]
`,
      );
      suite.run(['--manifest-dir', dir]);
      const app = await until(
        'the app container to be refused',
        async () => {
          const w = await waitingOf(evil, 'app');
          return w?.reason === 'CreateContainerConfigError' ? w : undefined;
        },
        30_000,
      );
      expect(app.message).toMatch(/^volume "v": escape is a symlink to .*host.*, outside the volume/);
      const climb = await until('the climbing container to be refused', async () => {
        const w = await waitingOf(evil, 'climb');
        return w?.reason === 'CreateContainerConfigError' ? w : undefined;
      });
      expect(climb.message).toMatch(/up is a symlink to \/, outside the volume/);
      // A symlink that stays inside the volume is fine, as the kubelet allows it.
      const ok = await until('the well-behaved pod to run', async () =>
        (await bed.containers(ns, fine)).find((c) => c.name === 'app' && c.state === 'running'),
      );
      expect(ok).toBeDefined();
      expect(existsSync(join(secret, 'written-by-pod'))).toBe(false);
      const sources = await mountSources(evil);
      // The engine's record was read: the init container's volume is there (an empty list would prove nothing).
      expect(sources.some((s) => s.startsWith(world.stateDir))).toBe(true);
      expect(sources.filter((s) => s === secret || s === '/' || s.startsWith(`${secret}/`))).toEqual([]);
    });

    it('never mounts a symlink swapped in while the container is being made: a racer flips it for many restarts', { timeout: 120_000 }, async () => {
      const secret = hostSecret();
      const dir = manifestDir();
      const name = unique('race');
      writeFileSync(
        join(dir, 'race.yaml'),
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: setup
    image: ${TEST_IMAGE}
    command: [sh, -c, 'mkdir -p /v/a/sw /v/b && ln -sfn ${secret} /v/b/sw && ln -sfn a /v/p']
    volumeMounts: [{name: v, mountPath: /v}]
  containers:
  - name: racer
    image: ${TEST_IMAGE}
    # p flips atomically (rename), every 20-80 ms, between a/, where sw is a real directory, and b/, where sw is a
    # symlink to the host: every path always resolves, to inside or to outside, at any instant.
    command: [sh, -c, 'while true; do ln -sfn a /v/p.a; mv -T /v/p.a /v/p; usleep $((20000 + RANDOM % 60000)); ln -sfn b /v/p.b; mv -T /v/p.b /v/p; usleep $((20000 + RANDOM % 60000)); done']
    volumeMounts: [{name: v, mountPath: /v}]
  - name: victim
    image: ${TEST_IMAGE}
    command: [sh, -c, 'touch /x/written-by-pod; exit 1']
    volumeMounts: [{name: v, mountPath: /x, subPath: p/sw}]
  volumes: [{name: v, emptyDir: {}}]
`,
      );
      const agent = suite.run(['--manifest-dir', dir, '--crash-backoff-initial', '100ms', '--crash-backoff-max', '200ms']);
      // Each restart of the victim checks and pins the path again while the racer flips it.
      await until(
        'the victim to have been made many times',
        async () => {
          const victims = (await bed.containers(ns, name)).filter((c) => c.name === 'victim');
          return victims.some((c) => c.restartCount >= 5) ? true : undefined;
        },
        60_000,
      );
      // The race went both ways: some makes found the symlink and were refused.
      await agent.waitForLog(/victim: CreateContainerConfigError: .*(p\/sw is a symlink to|resolves to) .*, outside the volume/, 30_000);
      expect(existsSync(join(secret, 'written-by-pod'))).toBe(false);
      expect((await mountSources(name)).filter((s) => s === secret)).toEqual([]);
    });
  });

  describe(`${bed.tag} --allowed-host-paths judges where a path really leads`, () => {
    it('refuses a hostPath under an allowed path that a container turned into a symlink elsewhere; .. is refused outright', async () => {
      const allowed = join(world.dir, unique('allowed'));
      mkdirSync(allowed);
      const secret = hostSecret();
      const dir = manifestDir();
      const planter = unique('planter');
      const user = unique('user');
      // One pod may write the allowed directory and plants a symlink out of it...
      writeFileSync(
        join(dir, 'planter.yaml'),
        `apiVersion: v1
kind: Pod
metadata: {name: ${planter}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sh, -c, 'ln -sfn ${secret} /a/link; mkdir -p /a/data/sub; ln -sfn ${secret} /a/data/out; exec sleep 3600']
    volumeMounts: [{name: a, mountPath: /a}]
  volumes: [{name: a, hostPath: {path: ${allowed}}}]
`,
      );
      const agent = suite.run(['--manifest-dir', dir], { PODRUN_ALLOWED_HOST_PATHS: allowed });
      {
        await until(
          'the planter to run',
          async () => (existsSync(join(allowed, 'link')) && existsSync(join(allowed, 'data', 'out')) ? true : undefined),
          30_000,
        );
        // ...and another pod names the symlink, whose text is under the allowed path.
        writeFileSync(
          join(dir, 'user.yaml'),
          `apiVersion: v1
kind: Pod
metadata: {name: ${user}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: whole
    image: ${TEST_IMAGE}
    command: [sh, -c, 'touch /h/written-by-pod; exec sleep 3600']
    volumeMounts: [{name: h, mountPath: /h}]
  - name: sub
    image: ${TEST_IMAGE}
    command: [sh, -c, 'touch /s/written-by-pod; exec sleep 3600']
    volumeMounts: [{name: d, mountPath: /s, subPath: out}]
  - name: good
    image: ${TEST_IMAGE}
    command: [sh, -c, 'touch /g/written-by-pod; exec sleep 3600']
    volumeMounts: [{name: d, mountPath: /g, subPath: sub}]
  volumes:
  - {name: h, hostPath: {path: ${allowed}/link}}
  - {name: d, hostPath: {path: ${allowed}/data}}
`,
        );
        const whole = await until(
          'the hostPath through the symlink to be refused',
          async () => {
            const w = await waitingOf(user, 'whole');
            return w?.reason === 'CreateContainerConfigError' ? w : undefined;
          },
          30_000,
        );
        expect(whole.message).toContain(`resolves to ${secret}, which is not under an allowed host path (--allowed-host-paths=${allowed})`);
        const sub = await until('the subPath out of it to be refused', async () => {
          const w = await waitingOf(user, 'sub');
          return w?.reason === 'CreateContainerConfigError' ? w : undefined;
        });
        expect(sub.message).toMatch(/out is a symlink to .*, outside the volume/);
        await until('the allowed subPath to be written', async () => (existsSync(join(allowed, 'data', 'sub', 'written-by-pod')) ? true : undefined));
        // A path that does not exist yet is not created through the symlink either.
        const creator = unique('creator');
        writeFileSync(
          join(dir, 'creator.yaml'),
          `apiVersion: v1
kind: Pod
metadata: {name: ${creator}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sleep, '3600'], volumeMounts: [{name: h, mountPath: /h}]}]
  volumes: [{name: h, hostPath: {path: ${allowed}/link/made, type: DirectoryOrCreate}}]
`,
        );
        await agent.waitForLog(`${allowed}/link/made would be created at ${secret}/made, which is not under an allowed host path`, 30_000);
        expect(existsSync(join(secret, 'made'))).toBe(false);
        expect(existsSync(join(secret, 'written-by-pod'))).toBe(false);
        expect(agent.logs()).toContain('not under an allowed host path');
      }
      const v = await world.cli(
        '--allowed-host-paths',
        allowed,
        'validate',
        world.write(
          'dotdot.yaml',
          `apiVersion: v1
kind: Pod
metadata: {name: dotdot}
spec:
  containers: [{name: c, image: ${TEST_IMAGE}, volumeMounts: [{name: h, mountPath: /h}]}]
  volumes: [{name: h, hostPath: {path: ${allowed}/../${secret.split('/').pop()}}}]
`,
        ),
      );
      expect(v.code).toBe(1);
      expect(v.err).toContain("spec.volumes[0].hostPath.path: must not contain '..'");
    });

    it('detaches pinned mounts before removing a pod: the host directory behind a subPath keeps its files', async () => {
      const host = join(world.dir, unique('keep'));
      mkdirSync(join(host, 'sub'), { recursive: true });
      writeFileSync(join(host, 'sub', 'precious'), 'keep me\n');
      const name = unique('pinned');
      const file = world.write(
        `${name}.yaml`,
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sh, -c, 'cat /s/precious && exec sleep 3600']
    volumeMounts: [{name: h, mountPath: /s, subPath: sub}]
  volumes: [{name: h, hostPath: {path: ${host}}}]
`,
      );
      const a = await world.cli('--allowed-host-paths', world.dir, 'apply', '--timeout', '20s', file);
      expect(a.code, a.err).toBe(0);
      const podDir = join(world.stateDir, 'pods', (await bed.containers(ns, name))[0]!.podUid);
      expect(mountsUnder(podDir).length).toBeGreaterThan(0);
      const d = await world.cli('delete', '-f', file);
      expect(d.code, d.err).toBe(0);
      expect(mountsUnder(podDir)).toEqual([]);
      expect(existsSync(podDir)).toBe(false);
      expect(readFileSync(join(host, 'sub', 'precious'), 'utf8')).toBe('keep me\n');
    });
  });

  describe(`${bed.tag} without an agent`, () => {
    it('apply refuses a subPath a container made a symlink to a host file, naming the pod, container and reason', async () => {
      const secret = hostSecret();
      const name = unique('applied');
      const file = world.write(
        `${name}.yaml`,
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: plant
    image: ${TEST_IMAGE}
    command: [sh, -c, 'ln -sfn ${secret}/secret /v/file']
    volumeMounts: [{name: v, mountPath: /v}]
  containers:
  - name: app
    image: ${TEST_IMAGE}
    command: [sh, -c, 'cat /x; exec sleep 3600']
    volumeMounts: [{name: v, mountPath: /x, subPath: file}]
  volumes: [{name: v, emptyDir: {}}]
`,
      );
      const r = await world.cli('apply', '--timeout', '8s', file);
      expect(r.code).toBe(1);
      expect(r.err).toContain(
        `pod/${ns}/${name}: CreateContainerConfigError: container app: volume "v": file is a symlink to ${secret}/secret, outside the volume`,
      );
    });
  });
}
