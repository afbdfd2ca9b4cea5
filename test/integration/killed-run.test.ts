import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { instanceId, LABEL } from '../../src/runtime/labels.js';
import { copySampleManifests, docker, freePort, until, unique, World } from './helpers.js';

// A suite run killed midway (as a CI timeout kills it: the runner and its worker, SIGKILL, no
// cleanup) leaves pods, an agent, a private containerd with its sandbox, network and cgroup, and
// its directory. The next run's global setup removes all of that, and nothing else: the sample
// manifests running in a user's own instance and the README demo (when it runs beside) keep
// their containers, unrestarted.
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const VITEST = join(REPO, 'node_modules/vitest/vitest.mjs');
const CONFIG = 'test/fixtures/killed-run/vitest.config.ts';
const DEMO_INSTANCE = instanceId('/var/lib/podrun');

const user = new World();
afterAll(() => user.cleanup(), 60_000);

interface Made {
  root: string;
  pids: number[];
  ctrdDir: string;
  bridge: string;
  bridge2: string;
  instances: string[];
  criInstance: string;
  cri2Instance: string;
  podmanInstance: string;
  raw: string;
  stray: number;
}

function vitestRun(file: string, env: Record<string, string> = {}): { proc: ChildProcess; out: () => string; exited: Promise<number | null> } {
  const proc = spawn(process.execPath, [VITEST, 'run', '--config', CONFIG], {
    cwd: REPO,
    env: { ...process.env, KILLED_RUN_FILE: file, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  return { proc, out: () => out, exited: new Promise((r) => proc.on('exit', (code) => r(code))) };
}

/** Running containers by id, with their restart counts: what must not change. */
async function running(instance: string): Promise<Record<string, string>> {
  const list = await docker.listContainers({ filters: JSON.stringify({ label: [`${LABEL.instance}=${instance}`] }) });
  return Object.fromEntries(list.map((c) => [c.Id, c.Labels[LABEL.restartCount] ?? '']));
}

/** Whether `pid` is still the run's stray `sleep 3600`, alive (not a zombie). */
function strayRuns(pid: number, runMark: string): boolean {
  try {
    if (/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))) return false;
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8') === 'sleep\u00003600\u0000' && readFileSync(`/proc/${pid}/environ`, 'latin1').includes(runMark);
  } catch {
    return false;
  }
}

/** Processes whose command line names `root`. */
function namingProcesses(root: string): number[] {
  const out: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (/^State:\s+Z/m.test(readFileSync(`/proc/${p}/status`, 'utf8'))) continue;
      if (readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(`${root}/`)) out.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

const linkExists = (name: string): boolean => spawnSync('ip', ['link', 'show', name], { stdio: 'ignore' }).status === 0;

/** Podman's containers of a podrun instance, and the conmon processes that watch them. */
function onPodman(instance: string): { ids: string[]; conmons: number[] } {
  const ps = spawnSync('podman', ['ps', '-a', '--no-trunc', '--filter', `label=${LABEL.instance}=${instance}`, '--format', '{{.ID}}'], { encoding: 'utf8' });
  const ids = ps.stdout.split('\n').filter(Boolean);
  const conmons: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      if (argv[0]?.endsWith('conmon') && ids.includes(argv[argv.indexOf('-c') + 1] ?? '')) conmons.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return { ids, conmons };
}

async function byInstances(instances: string[]): Promise<string[]> {
  const list = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [LABEL.instance] }) });
  return list.filter((c) => instances.includes(c.Labels[LABEL.instance] ?? '')).map((c) => c.Id);
}

it('a killed run leaves things; the next run removes them and nothing else', { timeout: 300_000 }, async () => {
  // A user's pods: the sample manifests, in a state dir that is no suite run's.
  mkdirSync(user.manifests);
  copySampleManifests(user.manifests, {
    demo: unique('user'),
    system: unique('user-sys'),
    web: await freePort(),
    etcd: await freePort(),
    data: join(user.dir, 'data'),
  });
  const applied = await user.cli('apply', '-f', user.manifests, '--timeout', '90s');
  expect(applied.code, applied.err).toBe(0);
  const userBefore = await running(user.instance);
  expect(Object.keys(userBefore).length).toBeGreaterThanOrEqual(3);
  const demoBefore = await running(DEMO_INSTANCE);

  const reportFile = join(user.dir, 'killed-run.json');
  const killed = vitestRun('leaves', { KILLED_RUN_REPORT: reportFile });
  await Promise.race([
    until('the run to make its things', async () => (existsSync(reportFile) ? true : undefined), 240_000),
    killed.exited.then((code) => {
      throw new Error(`the run ended (${code}) before making its things:\n${killed.out()}`);
    }),
  ]);
  const made = JSON.parse(readFileSync(reportFile, 'utf8')) as Made;
  for (const pid of [killed.proc.pid!, ...made.pids]) process.kill(pid, 'SIGKILL');
  await killed.exited;

  // What the killed run left.
  expect(existsSync(made.root)).toBe(true);
  expect((await byInstances(made.instances)).length, 'two pods on Docker, a sandbox and a container each').toBe(4);
  expect((await docker.getContainer(made.raw).inspect()).State.Running).toBe(true);
  expect(namingProcesses(made.root).length, 'the shims of its containerd, at least').toBeGreaterThan(0);
  expect(linkExists(made.bridge)).toBe(true);
  expect(linkExists(made.bridge2), "containerd 2's bridge").toBe(true);
  const podmanLeft = onPodman(made.podmanInstance);
  expect(podmanLeft.ids.length, "Podman's sandbox and container").toBe(2);
  expect(podmanLeft.conmons.length, 'a conmon for each').toBe(2);
  const runMark = `PODRUN_TEST_RUN=${made.root.slice(made.root.lastIndexOf('-') + 1)}\0`;
  expect(strayRuns(made.stray, runMark), 'a process it started that names nothing of its directory').toBe(true);

  const next = vitestRun('next');
  expect(await next.exited, next.out()).toBe(0);
  expect(next.out()).toContain('removed what killed suite runs left: 1 run dir(s)');

  expect(await byInstances(made.instances)).toEqual([]);
  await expect(docker.getContainer(made.raw).inspect()).rejects.toThrow(/no such container/i);
  expect(namingProcesses(made.root)).toEqual([]);
  expect(strayRuns(made.stray, runMark)).toBe(false);
  expect(linkExists(made.bridge)).toBe(false);
  expect(linkExists(made.bridge2)).toBe(false);
  expect(onPodman(made.podmanInstance)).toEqual({ ids: [], conmons: [] });
  // Podman's conmons are gone with their containers: none of them names the run's directory.
  for (const pid of podmanLeft.conmons)
    expect(existsSync(`/proc/${pid}/cmdline`) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('conmon'), `conmon ${pid}`).toBe(false);
  expect(existsSync(made.root)).toBe(false);
  for (const h of readdirSync('/sys/fs/cgroup'))
    for (const inst of [made.criInstance, made.cri2Instance]) expect(existsSync(join('/sys/fs/cgroup', h, 'podrun', inst)), `${h} ${inst}`).toBe(false);
  expect(readFileSync('/proc/mounts', 'utf8')).not.toContain(made.root);

  // Nothing else: the user's pods and the demo run on, in the same containers.
  expect(await running(user.instance)).toEqual(userBefore);
  expect(await running(DEMO_INSTANCE)).toEqual(demoBefore);
});
