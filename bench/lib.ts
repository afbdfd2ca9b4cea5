/**
 * What every benchmark scenario shares: whole-process timing, statistics, manifests, the podrun
 * binary as users run it, and cleanup that touches only what the benchmark made.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { instanceId, LABEL } from '../src/runtime/labels.js';
import { PAUSE_IMAGE, TEST_IMAGE, until } from '../test/integration/helpers.js';

export { PAUSE_IMAGE, TEST_IMAGE, until };
export { followEvents, type EngineEventRecord } from '../test/integration/churn-helpers.js';

/** The repository: the compiled bench runs from `.bench-build/bench/`. */
export const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)));
/** BENCH_PODRUN_BIN: another build's bin/podrun (an older commit's, to compare with). */
export const BIN = process.env.BENCH_PODRUN_BIN ?? join(REPO, 'bin', 'podrun');
export const docker = new Docker();
export const QUICK = process.env.BENCH_QUICK === '1';

export const log = (s: string): void => void process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${s}\n`);
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface Ran {
  code: number | null;
  out: string;
  err: string;
  ms: number;
}

/** Runs a whole process and times it from spawn to exit, as a user waits for it. */
export function run(cmd: string, args: string[], o: { env?: Record<string, string>; cwd?: string } = {}): Promise<Ran> {
  return new Promise((resolveRun, reject) => {
    const t0 = performance.now();
    const p = spawn(cmd, args, { env: { ...process.env, ...o.env }, cwd: o.cwd ?? REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (c: Buffer) => (out += c.toString()));
    p.stderr.on('data', (c: Buffer) => (err += c.toString()));
    p.on('error', reject);
    p.on('close', (code) => resolveRun({ code, out, err, ms: performance.now() - t0 }));
  });
}

/** Like `run`, but a non-zero exit is an error: a benchmark of a failing command measures nothing. */
export async function must(cmd: string, args: string[], o: { env?: Record<string, string>; cwd?: string } = {}): Promise<Ran> {
  const r = await run(cmd, args, o);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${String(r.code)}: ${r.err.trim() || r.out.trim()}`);
  return r;
}

export function onPath(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

export interface Stat {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function stat(xs: number[]): Stat {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  return { median: mid, min: s[0] ?? NaN, max: s[s.length - 1] ?? NaN, n: s.length };
}

/** Milliseconds as a table cell: median, then min–max when there were several runs. */
export function ms(s: Stat | undefined): string {
  if (!s || Number.isNaN(s.median)) return '—';
  const f = (x: number): string => (x >= 10_000 ? `${(x / 1000).toFixed(1)} s` : `${Math.round(x).toLocaleString('en-US')} ms`);
  return s.n > 1 ? `${f(s.median)} (${f(s.min)}–${f(s.max)})` : f(s.median);
}

export function ratio(s: Stat | undefined): string {
  if (!s || Number.isNaN(s.median)) return '—';
  return s.n > 1 ? `${s.median.toFixed(2)} (${s.min.toFixed(2)}–${s.max.toFixed(2)})` : s.median.toFixed(2);
}

/** Ratios run by run (a[i] / b[i]), so a drift in the machine's speed hits both sides alike. */
export function pairwise(a: number[], b: number[]): Stat {
  return stat(a.map((x, i) => x / b[i]!));
}

export function table(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

export interface PodShape {
  containers: number;
  hostNetwork: boolean;
  /** Main process ignores SIGTERM, so a stop takes the whole grace period. */
  ignoreTerm?: boolean;
  grace?: number;
  probes?: boolean;
  command?: string;
}

/** One Pod manifest; every benchmark pod is plain Kubernetes. */
export function podYaml(name: string, namespace: string, s: PodShape): string {
  const cmd =
    s.command ??
    (s.probes
      ? 'mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www'
      : s.ignoreTerm
        ? "trap '' TERM; while :; do sleep 1; done"
        : 'exec sleep 3600');
  const probes = s.probes
    ? `
    livenessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 10}
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 10}`
    : '';
  const containers = Array.from({ length: s.containers }, (_, i) => {
    const c = i === 0 ? cmd : 'exec sleep 3600';
    return `  - name: c${i}
    image: ${TEST_IMAGE}
    command: [sh, -c, ${JSON.stringify(c)}]${i === 0 ? probes : ''}`;
  }).join('\n');
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: ${namespace}
spec:
  terminationGracePeriodSeconds: ${s.grace ?? 1}
${s.hostNetwork ? '  hostNetwork: true\n' : ''}  containers:
${containers}
`;
}

/** A directory of `n` pod files named `<prefix>-<i>`. */
export function writePods(dir: string, prefix: string, namespace: string, n: number, s: PodShape): string[] {
  mkdirSync(dir, { recursive: true });
  const names: string[] = [];
  for (let i = 0; i < n; i++) {
    const name = `${prefix}-${i}`;
    writeFileSync(join(dir, `${name}.yaml`), podYaml(name, namespace, s));
    names.push(name);
  }
  return names;
}

/**
 * A cold apply's files are new to podrun: the manifests a run before applied are forgotten
 * (`apply` keeps what it loaded, src/cli/manifest-cache.ts), so each run parses and checks them.
 */
export function forgetManifests(stateDir: string): void {
  rmSync(join(stateDir, 'manifest-cache.json'), { force: true });
}

/** How a scenario starts a process: `run`, or `runCpu` where CPU time is wanted too. */
export type Runner = (cmd: string, args: string[], o?: { env?: Record<string, string> }) => Promise<Ran & { cpuMs?: number }>;

/**
 * `podrun` as users run it, on a state dir of the benchmark's own (so its own instance). `bin`
 * is another build's binary where two builds are compared (BENCH_AGAINST).
 */
export function podrun(stateDir: string, bin = BIN, runner: Runner = run): (args: string[], env?: Record<string, string>) => Promise<Ran & { cpuMs?: number }> {
  return (args, env) => runner(bin, ['--state-dir', stateDir, '--pause-image', PAUSE_IMAGE, '--node-ip', '127.0.0.1', ...args], env ? { env } : {});
}

let cpuRuns = 0;
/**
 * `run`, with the CPU time (user+sys, ms) the process and its children used, from bash's `times`:
 * on a machine shared with other work, CPU time is what a busy neighbour does not inflate.
 */
export async function runCpu(cmd: string, args: string[], o: { env?: Record<string, string> } = {}): Promise<Ran & { cpuMs: number }> {
  const file = join(tmpdir(), `podrun-bench-cpu-${process.pid}-${cpuRuns++}`);
  try {
    const r = await run('bash', ['-c', '"$@"; rc=$?; times > "$PODRUN_BENCH_TIMES"; exit $rc', 'bash', cmd, ...args], {
      env: { ...o.env, PODRUN_BENCH_TIMES: file },
    });
    // `times`: the shell's own user and sys, then its children's (the command's).
    const m = /(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s\s*$/.exec(readFileSync(file, 'utf8').trim());
    if (!m) throw new Error(`no CPU times from bash for ${cmd}`);
    return { ...r, cpuMs: (Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4])) * 1000 };
  } finally {
    rmSync(file, { force: true });
  }
}

/**
 * Another commit's `bin/podrun`, built from git under `dir` much as the upgrade test builds the
 * previous release: `git archive` (nothing registered in the shared repository, no worktree), the
 * shared node_modules, then that commit's own build steps. tsc first: since the CRI stand-in
 * (scripts/cri-stand-in.mjs) the bundler's code-cache warm-up imports tsc's output from dist/.
 */
export function buildRev(rev: string, dir: string): string {
  mkdirSync(dir, { recursive: true });
  execFileSync('sh', ['-c', 'git -C "$1" archive "$2" | tar -x -C "$3"', 'sh', REPO, rev, dir]);
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
  const step = (args: string[]): void => void execFileSync(process.execPath, args, { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  step([join(REPO, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json']);
  step(['scripts/bundle.mjs']);
  // Outside a git repository it records the commit as unknown; only `podrun version` reads it.
  if (existsSync(join(dir, 'scripts/build-info.mjs'))) step(['scripts/build-info.mjs']);
  return join(dir, 'bin', 'podrun');
}

/** The commit a rev names, for the report. */
export function commitOf(rev: string): string {
  return execFileSync('git', ['-C', REPO, 'rev-parse', '--short', `${rev}^{commit}`], { encoding: 'utf8' }).trim();
}

/** Removes what one podrun state dir made on the engine, and nothing else. */
export async function removeInstance(stateDir: string, engine: Docker = docker): Promise<void> {
  await removeLabelled(`${LABEL.instance}=${instanceId(stateDir)}`, engine);
}

export async function removeLabelled(label: string, engine: Docker = docker): Promise<void> {
  const list = await engine.listContainers({ all: true, filters: JSON.stringify({ label: [label] }) });
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < list.length) {
        const c = list[next++]!;
        // An engine wedged on one container (it happens to Docker 20.10) must not hang the benchmark.
        await Promise.race([
          engine
            .getContainer(c.Id)
            .remove({ force: true })
            .catch(() => undefined),
          sleep(60_000),
        ]);
      }
    }),
  );
}

/** Resident set and CPU seconds of a process, from /proc. */
export function procUsage(pid: number): { rssKiB: number; cpuSeconds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKiB = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? NaN);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of /proc/PID/stat (1-based), 12 and 13 after the name.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { rssKiB, cpuSeconds: ticks / 100 };
}
