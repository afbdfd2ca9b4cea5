import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import { AgentProcess, pastRelist } from './agent-helpers.js';
import { BIN, docker, TEST_IMAGE, unique, until, World, type CliResult } from './helpers.js';

// Issue 30, "upgrades restart nothing": pods made by the previous release (by its `apply`, and by
// its agent from a manifest directory) are adopted by this build's agent on the same state
// directory and left running. What identifies a container (labels, names, spec hashes) must not
// change under a refactor of the engine: if it did, the new agent would see every container as
// changed and replace it. The previous release is built from git: the last commit before
// 2026-12-01 (the release of 2026-11-30), bundled in a directory of its own with the shared
// node_modules (its bundle is all bin/podrun runs; tsc only checks types).

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const world = new World();
const ns = unique('upgrade');
const prevDir = join(world.dir, 'previous');
const manifests = join(world.dir, 'manifests');
let prevAgent: AgentProcess | undefined;
let agent: AgentProcess | undefined;

afterAll(async () => {
  await prevAgent?.stop();
  await agent?.stop();
  await world.cleanup();
});

/** The previous release's commit: the last one before the day the engine interface began to move. */
function previousCommit(): string {
  return execFileSync('git', ['-C', REPO, 'log', '--before=2026-12-01', '-1', '--format=%H'], { encoding: 'utf8' }).trim();
}

/** Builds the previous release's bin/podrun from git, without touching the repository's worktrees. */
function buildPrevious(commit: string): string {
  mkdirSync(prevDir, { recursive: true });
  // git archive, not a worktree: nothing is registered in the shared repository.
  execFileSync('sh', ['-c', `git -C "$1" archive "$2" | tar -x -C "$3"`, 'sh', REPO, commit, prevDir]);
  symlinkSync(join(REPO, 'node_modules'), join(prevDir, 'node_modules'));
  execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: prevDir, stdio: 'pipe' });
  return join(prevDir, 'bin/podrun');
}

/** A binary's CLI on this world's state dir. */
function runBin(bin: string, args: string[]): Promise<CliResult> {
  return world.bin(args, { bin });
}

// Pods that exercise what identifies a container: an init container, two app containers with
// env, a volume, a port, a probe and resources; a host-network pod; a sandbox's DNS and hostname.
const applied = `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: ${ns}, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 1
  hostname: web-host
  dnsConfig: {options: [{name: ndots, value: '2'}]}
  volumes: [{name: scratch, emptyDir: {}}]
  initContainers:
  - {name: setup, image: ${TEST_IMAGE}, command: [sh, -c, 'echo ready > /scratch/flag'], volumeMounts: [{name: scratch, mountPath: /scratch}]}
  containers:
  - name: app
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
    env: [{name: MODE, value: prod}, {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
    resources: {limits: {memory: 64Mi, cpu: 200m}}
    readinessProbe: {exec: {command: [cat, /scratch/flag]}, periodSeconds: 1}
  - {name: side, image: ${TEST_IMAGE}, command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']}
`;

const fromDir = `apiVersion: v1
kind: Pod
metadata: {name: host, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  hostNetwork: true
  restartPolicy: OnFailure
  volumes: [{name: mark, emptyDir: {}}]
  containers:
  # Fails once, so it runs as its second instance (restart count 1) when the upgrade comes.
  - name: main
    image: ${TEST_IMAGE}
    command: [sh, -c, 'test -f /mark/once || { touch /mark/once; exit 1; }; exec sleep 3600']
    volumeMounts: [{name: mark, mountPath: /mark}]
`;

interface Seen {
  id: string;
  name: string;
  startedAt: string;
  engineRestarts: number;
  restartCount: string;
  hash: string;
}

/** Every container of this world's instance, as the engine holds it. */
async function containersNow(): Promise<Map<string, Seen>> {
  const list = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${LABEL.instance}=${world.instance}`] }) });
  const out = new Map<string, Seen>();
  for (const c of list) {
    const i = await docker.getContainer(c.Id).inspect();
    out.set(c.Id, {
      id: c.Id,
      name: i.Name,
      startedAt: i.State.StartedAt,
      engineRestarts: i.RestartCount,
      restartCount: c.Labels[LABEL.restartCount] ?? '',
      hash: c.Labels[LABEL.hash] ?? '',
    });
  }
  return out;
}

/** `get pods`' RESTARTS column, by pod name. */
function restartsOf(out: string): string[] {
  return out
    .split('\n')
    .filter((l) => l.startsWith('web') || l.startsWith('host'))
    .map((l) => `${l.split(/\s+/)[0]} ${l.split(/\s+/)[3]}`)
    .sort();
}

describe('an upgrade from the previous release', () => {
  let prevBin = '';
  beforeAll(() => {
    prevBin = buildPrevious(previousCommit());
  }, 60_000);

  it('adopts the previous release pods and restarts nothing: same containers, 0 restarts, apply says unchanged', async () => {
    const appliedFile = world.write('web.yaml', applied);
    mkdirSync(manifests, { recursive: true });
    world.write('manifests/host.yaml', fromDir);

    // The previous release: apply (no agent), then its agent takes both pods over and is stopped.
    const first = await runBin(prevBin, ['apply', '-f', appliedFile, '--timeout', '40s']);
    expect(first.code, first.out + first.err).toBe(0);
    prevAgent = new AgentProcess(world.stateDir, ['--manifest-dir', manifests], {}, prevBin);
    await prevAgent.started();
    let restartsBefore: string[] = [];
    const before = await until(
      'the previous agent to run both pods, main restarted once',
      async () => {
        const now = await containersNow();
        const started = [...now.values()].filter((c) => c.startedAt && !c.startedAt.startsWith('0001-'));
        // web: sandbox, setup (exited), app, side; host: sandbox, main's failed first instance and its second.
        const get = await runBin(prevBin, ['get', 'pods', '-n', ns]);
        restartsBefore = restartsOf(get.out);
        return started.length === 7 &&
          [...now.values()].some((c) => c.restartCount === '1') &&
          get.out.split('\n').filter((l) => /\b1\/1|2\/2\b/.test(l)).length === 2
          ? now
          : undefined;
      },
      40_000,
    );
    expect(restartsBefore).toEqual(['host 1', 'web 0']);
    expect(await prevAgent.stop()).toBe(0);
    prevAgent = undefined;

    // This build's plan of the previous release's pods, before any agent of it acts: nothing to do.
    const plan = await runBin(BIN, ['apply', '-f', appliedFile, '--dry-run']);
    expect(plan.code, plan.out + plan.err).toBe(0);
    expect(plan.out).toContain(`pod/${ns}/web unchanged`);

    // This build's agent on the same state directory.
    agent = new AgentProcess(world.stateDir, ['--manifest-dir', manifests]);
    await agent.started();
    await pastRelist(agent);
    const again = await runBin(BIN, ['apply', '-f', appliedFile, '--timeout', '20s']);
    expect(again.code, again.out + again.err).toBe(0);
    expect(again.out).toContain(`pod/${ns}/web unchanged`);
    await pastRelist(agent);

    const after = await containersNow();
    // 0 containers recreated: the same engine containers, no new one.
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    for (const [id, b] of before) {
      const a = after.get(id)!;
      // 0 restarts: not by podrun (no new instance), not by the engine (in place), not stopped and started.
      expect({ id, startedAt: a.startedAt, engineRestarts: a.engineRestarts, restartCount: a.restartCount, hash: a.hash }).toEqual({
        id,
        startedAt: b.startedAt,
        engineRestarts: 0,
        restartCount: b.restartCount,
        hash: b.hash,
      });
    }
    // RESTARTS as the previous release counted them: none added.
    expect(restartsOf((await runBin(BIN, ['get', 'pods', '-n', ns])).out)).toEqual(restartsBefore);
    expect(agent.logs()).not.toMatch(/replac|recreat|Killing/i);
  }, 90_000);
});
