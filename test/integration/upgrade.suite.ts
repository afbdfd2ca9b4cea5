import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import { AgentProcess, pastRelist } from './agent-helpers.js';
import type { EngineBed } from './engine-beds.js';
import { BIN, TEST_IMAGE, unique, until, type CliResult } from './helpers.js';

// Issues 30 and 43, "upgrades restart nothing": pods made by the previous release (by its `apply`,
// and by its agent from a manifest directory) are adopted by this build's agent on the same state
// directory and left running, on each engine. What identifies a container (Docker's names, labels
// and spec hashes; CRI's labels and annotations) must not change under a refactor of the engine:
// if it did, the new agent would see every container as changed and replace it. The previous
// release is built from git (its runner file says which commit and why), bundled in a directory of
// its own with the shared node_modules (its bundle is all bin/podrun runs).

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** Which commit is the previous release on an engine: the newest of HEAD's history before `before`. */
export interface PreviousRelease {
  /** A date and time with its zone (`git log --before`): a bare date is read at the time of day git runs. */
  before: string;
}

/** The previous release's commit: the newest ancestor of HEAD older than the cutoff. */
function previousCommit(before: string): string {
  if (!/T\d\d:\d\d(:\d\d)?(Z|[+-]\d\d:?\d\d)$/.test(before)) throw new Error(`${before}: give the cutoff's time and zone, or git reads it at this hour`);
  const commit = execFileSync('git', ['-C', REPO, 'log', `--before=${before}`, '-1', '--format=%H', 'HEAD'], { encoding: 'utf8' }).trim();
  if (!commit) throw new Error(`no commit before ${before} in HEAD's history`);
  return commit;
}

/** Builds the previous release's bin/podrun from git into `dir`, without touching the repository's worktrees. */
async function buildPrevious(commit: string, dir: string): Promise<string> {
  mkdirSync(dir, { recursive: true });
  // git archive, not a worktree: nothing is registered in the shared repository.
  execFileSync('sh', ['-c', `git -C "$1" archive "$2" | tar -x -C "$3"`, 'sh', REPO, commit, dir]);
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
  // The release's own build script, step by step, but for tsc: its output (dist/) only feeds the
  // code cache's warm-up (the stand-in runtimes load it); bin/podrun runs what esbuild bundles from
  // src/. So esbuild transpiles src/ into dist/ instead: a second, where tsc took a minute of the
  // two shared cores, and the binary is the one the release's bundle step makes.
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { scripts: { build: string } };
  for (const step of pkg.scripts.build.split('&&').map((s) => s.trim())) {
    if (step.startsWith('tsc ')) {
      const src = join(dir, 'src');
      const entryPoints = readdirSync(src, { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.ts'))
        .map((f) => join(src, f));
      await build({ entryPoints, outdir: join(dir, 'dist'), outbase: src, format: 'esm', platform: 'node', target: 'node20', logLevel: 'error' });
    } else {
      execFileSync('sh', ['-c', step], { cwd: dir, stdio: 'pipe' });
    }
  }
  return join(dir, 'bin/podrun');
}

// Pods that exercise what identifies a container: an init container, two app containers with
// env, a volume, a port, a probe and resources; a host-network pod; a sandbox's DNS and hostname.
const applied = (ns: string): string => `apiVersion: v1
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

const fromDir = (ns: string): string => `apiVersion: v1
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
  /** Running, or exited (init containers, a failed first instance); a sandbox ready. */
  state: string;
  /** Absent for a CRI sandbox (the runtime tells only when it was made): its id and state tell. */
  startedAt: string;
  engineRestarts: number;
  restartCount: string;
  hash: string;
  /** On CRI the labels and annotations as podrun reads them back; on Docker the labels. */
  labels: Record<string, string>;
}

/** `get pods`' RESTARTS column, by pod name. */
function restartsOf(out: string): string[] {
  return out
    .split('\n')
    .filter((l) => l.startsWith('web') || l.startsWith('host'))
    .map((l) => `${l.split(/\s+/)[0]} ${l.split(/\s+/)[3]}`)
    .sort();
}

export function upgradeSuite(bed: EngineBed, previous: PreviousRelease): void {
  const { world } = bed;
  const ns = unique('upgrade');
  const manifests = join(world.dir, 'manifests');
  let prevAgent: AgentProcess | undefined;
  let agent: AgentProcess | undefined;
  // Before the engine and the world go (a private containerd is destroyed in the bed's cleanup).
  world.beforeCleanup.unshift(async () => {
    await prevAgent?.stop();
    await agent?.stop();
  });

  /** Every sandbox and container of this world's instance, through this build's engine interface (a read). */
  async function containersNow(): Promise<Map<string, Seen>> {
    const engine = await bed.engine();
    const out = new Map<string, Seen>();
    for (const c of await engine.listContainers()) {
      // Docker's pause container has a status of its own (its start, its restarts in place); a CRI
      // sandbox is no container: its id and state tell (a NOTREADY one is never READY again).
      const s = await engine.containerState(c.id);
      out.set(c.id, {
        id: c.id,
        name: c.name,
        state: c.state,
        startedAt: s?.startedAt ?? '',
        engineRestarts: s?.engineRestarts ?? (c.kind === 'sandbox' ? 0 : -1),
        restartCount: c.labels[LABEL.restartCount] ?? '',
        hash: c.labels[LABEL.hash] ?? '',
        labels: c.labels,
      });
    }
    return out;
  }

  /** A binary's CLI on this world's state dir and engine. */
  const runBin = (bin: string, args: string[]): Promise<CliResult> => world.bin([...bed.args, ...args], { bin, env: { ...bed.env } });

  describe(`an upgrade from the previous release ${bed.tag}`, () => {
    let prevBin = '';
    beforeAll(async () => {
      prevBin = await buildPrevious(previousCommit(previous.before), join(world.dir, 'previous'));
    }, 120_000);

    it('adopts the previous release pods and restarts nothing: same containers, labels, 0 restarts, apply says unchanged', async () => {
      const appliedFile = world.write('web.yaml', applied(ns));
      mkdirSync(manifests, { recursive: true });
      world.write('manifests/host.yaml', fromDir(ns));

      // The previous release: apply (no agent), then its agent takes both pods over and is stopped.
      const first = await runBin(prevBin, ['apply', '-f', appliedFile, '--timeout', '60s']);
      expect(first.code, first.out + first.err).toBe(0);
      prevAgent = new AgentProcess(world.stateDir, [...bed.args, '--manifest-dir', manifests], { ...bed.env }, prevBin);
      await prevAgent.started();
      let restartsBefore: string[] = [];
      const before = await until(
        'the previous agent to run both pods, main restarted once',
        async () => {
          const now = await containersNow();
          const started = [...now.values()].filter((c) => c.startedAt || c.state === 'running' || c.state === 'ready');
          // web: sandbox, setup (exited), app, side; host: sandbox, main's failed first instance and its second.
          const get = await runBin(prevBin, ['get', 'pods', '-n', ns]);
          restartsBefore = restartsOf(get.out);
          // None caught between its create and its start: the list's state and the status's start
          // time are read a moment apart, and a snapshot taken then differs from any later one.
          const settled = [...now.values()].every((c) => c.state !== 'created');
          return started.length === 7 &&
            settled &&
            [...now.values()].some((c) => c.restartCount === '1') &&
            get.out.split('\n').filter((l) => /\b1\/1|2\/2\b/.test(l)).length === 2
            ? now
            : undefined;
        },
        60_000,
      );
      expect(restartsBefore).toEqual(['host 1', 'web 0']);
      expect(await prevAgent.stop()).toBe(0);
      prevAgent = undefined;

      // This build's plan of the previous release's pods, before any agent of it acts: nothing to do.
      const plan = await runBin(BIN, ['apply', '-f', appliedFile, '--dry-run']);
      expect(plan.code, plan.out + plan.err).toBe(0);
      expect(plan.out).toContain(`pod/${ns}/web unchanged`);

      // This build's agent on the same state directory.
      agent = bed.agent(['--manifest-dir', manifests]);
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
        // 0 restarts: not by podrun (no new instance), not by the engine (in place), not stopped and
        // started; the labels (and on CRI the annotations) it was made with, read as before.
        expect({
          id,
          state: a.state,
          startedAt: a.startedAt,
          engineRestarts: a.engineRestarts,
          restartCount: a.restartCount,
          hash: a.hash,
          labels: a.labels,
        }).toEqual({
          id,
          state: b.state,
          startedAt: b.startedAt,
          engineRestarts: 0,
          restartCount: b.restartCount,
          hash: b.hash,
          labels: b.labels,
        });
      }
      // RESTARTS as the previous release counted them: none added.
      expect(restartsOf((await runBin(BIN, ['get', 'pods', '-n', ns])).out)).toEqual(restartsBefore);
      expect(agent.logs()).not.toMatch(/replac|recreat|Killing/i);
    }, 180_000);
  });
}
