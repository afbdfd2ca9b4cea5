/**
 * This build against another commit's, in one run: `BENCH_AGAINST=<rev> npm run bench`.
 *
 * The other build's `bin/podrun` is made from git under the run's directory (lib.ts `buildRev`);
 * this build is the tree's own bin/podrun, or another commit's too with BENCH_AGAINST_NEW=<rev>.
 * Measured on Docker and on a containerd of the bench's own, with the scenarios' own code run
 * with either binary: cold `apply --no-wait` of 1 and of 10 pods (wall and CPU time), and the
 * agent's restart reaction. Old and new alternate run by run, the order swapped every pair, each
 * on a state dir of its own (so each touches only its own instance's containers); every figure is
 * the ratio new / old taken pair by pair. Read against issue 43's ≤ 1.02.
 *
 *   BENCH_AGAINST_ENGINES=docker,cri   the engines (default both)
 *   BENCH_AGAINST_RUNS=41,17,41        pairs for 1 pod, 10 pods and the restart reaction
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { instanceId, LABEL } from '../src/runtime/labels.js';
import { PrivateContainerd } from '../test/integration/cri-engine.js';
import { Agent, reaction, running } from './agent.js';
import { coldNoWait } from './cold-apply.js';
import { CriAgent, criArgv, criColdNoWait, criRestart } from './cri.js';
import {
  BIN,
  buildRev,
  commitOf,
  log,
  ms,
  pairwise,
  podrun,
  QUICK,
  ratio,
  removeInstance,
  REPO,
  runCpu,
  sleep,
  stat,
  table,
  writePods,
  type Stat,
} from './lib.js';

const LIMIT = 1.02;

interface Build {
  name: 'old' | 'new';
  bin: string;
}

interface Pairs {
  old: number[];
  new: number[];
}

/** A figure of both builds: wall time, and CPU time where measured. */
interface Sample {
  ms: number;
  cpuMs?: number;
}

/**
 * `n` pairs of one measurement by each build; the first of a pair goes second in the next, so
 * neither build always runs right after the other's cleanup.
 */
async function paired(what: string, n: number, builds: [Build, Build], measure: (b: Build) => Promise<Sample>): Promise<{ wall: Pairs; cpu: Pairs }> {
  const wall: Pairs = { old: [], new: [] };
  const cpu: Pairs = { old: [], new: [] };
  for (let i = 0; i < n; i++) {
    for (const b of i % 2 ? [builds[1], builds[0]] : builds) {
      const s = await measure(b);
      wall[b.name].push(s.ms);
      if (s.cpuMs !== undefined) cpu[b.name].push(s.cpuMs);
    }
    log(`${what} ${i + 1}/${n}: old ${Math.round(wall.old[i]!)} ms, new ${Math.round(wall.new[i]!)} ms`);
  }
  return { wall, cpu };
}

interface Row {
  engine: string;
  measure: string;
  old: Stat;
  new: Stat;
  ratio: Stat;
}

function rows(engine: string, measure: string, r: { wall: Pairs; cpu: Pairs }): Row[] {
  const out: Row[] = [{ engine, measure, old: stat(r.wall.old), new: stat(r.wall.new), ratio: pairwise(r.wall.new, r.wall.old) }];
  if (r.cpu.old.length && r.cpu.old.length === r.cpu.new.length)
    out.push({ engine, measure: `${measure}, CPU time`, old: stat(r.cpu.old), new: stat(r.cpu.new), ratio: pairwise(r.cpu.new, r.cpu.old) });
  return out;
}

interface Runs {
  one: number;
  ten: number;
  restart: number;
}

async function onDocker(root: string, builds: [Build, Build], runs: Runs): Promise<Row[]> {
  const out: Row[] = [];
  for (const [pods, n] of [
    [1, runs.one],
    [10, runs.ten],
  ] as const) {
    if (n === 0) continue; // BENCH_AGAINST_RUNS=41,0,0: this measure left out
    const dir = join(root, `vs-docker-${pods}`);
    writePods(dir, `vs-${pods}`, 'bench-vs', pods, { containers: 1, hostNetwork: false });
    const stateOf = (b: Build): string => {
      const stateDir = join(root, `vs-docker-${pods}-${b.name}-state`);
      mkdirSync(stateDir, { recursive: true });
      return stateDir;
    };
    const clis = { old: podrun(stateOf(builds[0]), builds[0].bin, runCpu), new: podrun(stateOf(builds[1]), builds[1].bin, runCpu) };
    // One unmeasured run each: the first start of a bundle pays what later ones find cached.
    for (const b of builds) await coldNoWait(clis[b.name], dir, stateOf(b));
    const r = await paired(`Docker cold apply ${pods}`, n, builds, (b) => coldNoWait(clis[b.name], dir, stateOf(b)));
    out.push(...rows('Docker', `cold apply --no-wait, ${pods} pod${pods > 1 ? 's' : ''}`, r));
  }

  if (runs.restart === 0) return out;
  // Both agents run at once, each on its own state dir and its own pod (the same shape, names of
  // the same length); the kills alternate between them.
  const agents = builds.map((b) => {
    const dir = join(root, `vs-react-${b.name}`);
    const stateDir = join(root, `vs-react-${b.name}-state`);
    writePods(dir, `${b.name}-react`, 'bench-vs', 1, { containers: 1, hostNetwork: false });
    const agent = new Agent(stateDir, ['--manifest-dir', dir, '--crash-backoff-initial', '0s', '--crash-backoff-max', '0s'], {}, b.bin);
    const labels = [`${LABEL.instance}=${instanceId(stateDir)}`, `${LABEL.podName}=${b.name}-react-0`, `${LABEL.containerName}=c0`];
    return { b, agent, stateDir, labels };
  });
  try {
    for (const a of agents) {
      await a.agent.logged('agent started');
      await running(a.labels, 1);
    }
    const labelsOf = (b: Build): string[] => agents.find((a) => a.b.name === b.name)!.labels;
    const r = await paired('Docker restart reaction', runs.restart, builds, async (b) => {
      await sleep(300 + Math.random() * 700);
      return { ms: await reaction(labelsOf(b)) };
    });
    out.push(...rows('Docker', 'restart reaction (engine die → start)', r));
  } finally {
    for (const a of agents) {
      await a.agent.stop();
      await removeInstance(a.stateDir);
    }
  }
  return out;
}

async function onContainerd(root: string, builds: [Build, Build], runs: Runs): Promise<Row[]> {
  const ctrd = new PrivateContainerd();
  await ctrd.start();
  const out: Row[] = [];
  try {
    ctrd.importTestImages();
    const logs = join(root, 'vs-cri-pod-logs');
    mkdirSync(logs, { recursive: true });
    for (const [pods, n] of [
      [1, runs.one],
      [10, runs.ten],
    ] as const) {
      if (n === 0) continue;
      const dir = join(root, `vs-cri-${pods}`);
      writePods(dir, `vs-cri-${pods}`, 'bench-vs', pods, { containers: 1, hostNetwork: false });
      const stateOf = (b: Build): string => {
        const s = join(root, `vs-cri-${pods}-${b.name}-state`);
        mkdirSync(s, { recursive: true });
        return s;
      };
      const once = (b: Build): ReturnType<typeof criColdNoWait> => criColdNoWait(b.bin, criArgv(ctrd, stateOf(b), logs), dir, stateOf(b));
      for (const b of builds) await once(b);
      const r = await paired(`containerd cold apply ${pods}`, n, builds, once);
      out.push(...rows('containerd', `cold apply --no-wait, ${pods} pod${pods > 1 ? 's' : ''}`, r));
    }

    if (runs.restart === 0) return out;
    const agents = builds.map((b) => {
      const dir = join(root, `vs-cri-react-${b.name}`);
      const stateDir = join(root, `vs-cri-react-${b.name}-state`);
      mkdirSync(stateDir, { recursive: true });
      writePods(dir, `${b.name}-react`, 'bench-vs', 1, { containers: 1, hostNetwork: false });
      const filter = { labelSelector: { [LABEL.podName]: `${b.name}-react-0` } };
      return { b, agent: new CriAgent(b.bin, criArgv(ctrd, stateDir, logs), dir), filter, current: '' };
    });
    try {
      for (const a of agents) a.current = await a.agent.running(ctrd, a.filter);
      const r = await paired('containerd restart reaction', runs.restart, builds, async (b) => {
        const a = agents.find((x) => x.b.name === b.name)!;
        await sleep(300 + Math.random() * 700);
        const reacted = await criRestart(ctrd, a.filter, a.current);
        a.current = reacted.next;
        return { ms: reacted.ms };
      });
      out.push(...rows('containerd', 'restart reaction (kill → next running, listed every 20 ms)', r));
    } finally {
      for (const a of agents) await a.agent.stop();
    }
  } finally {
    // Everything either build made on it goes with the bench's own containerd.
    await ctrd.destroy();
  }
  return out;
}

const uptime = (): string => {
  try {
    return execFileSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    return `load average: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(', ')}`;
  }
};

export async function againstScenario(root: string): Promise<string> {
  const rev = process.env.BENCH_AGAINST;
  if (!rev) throw new Error('BENCH_AGAINST=<git rev> names the build to compare with');
  const newRev = process.env.BENCH_AGAINST_NEW;
  const [one, ten, restart] = (process.env.BENCH_AGAINST_RUNS ?? (QUICK ? '2,1,2' : '41,17,41')).split(',').map(Number);
  const runs: Runs = { one: one ?? 41, ten: ten ?? 17, restart: restart ?? 41 };
  const engines = (process.env.BENCH_AGAINST_ENGINES ?? 'docker,cri').split(',');
  const oldName = commitOf(rev);
  const dirty = execFileSync('git', ['-C', REPO, 'status', '--porcelain', '--', 'src', 'scripts', 'package.json'], { encoding: 'utf8' }).trim() !== '';
  const newName = newRev ? commitOf(newRev) : `this tree (${commitOf('HEAD')}${dirty ? ', with uncommitted changes' : ''})`;
  log(`building ${oldName}${newRev ? ` and ${newName}` : ''} from git`);
  const builds: [Build, Build] = [
    { name: 'old', bin: buildRev(rev, join(root, 'build-old')) },
    { name: 'new', bin: newRev ? buildRev(newRev, join(root, 'build-new')) : BIN },
  ];
  const t0 = Date.now();
  const before = uptime();
  const out: Row[] = [];
  if (engines.includes('docker')) out.push(...(await onDocker(root, builds, runs)));
  if (engines.includes('cri')) out.push(...(await onContainerd(root, builds, runs)));
  const after = uptime();
  for (const r of out) log(`${r.engine} ${r.measure}: old ${ms(r.old)}, new ${ms(r.new)}, new / old ${ratio(r.ratio)}`);
  return `### ${newName} against ${oldName}, in one run (BENCH_AGAINST)

Old and new alternated run by run (the order swapped every pair), each on its own state dir;
every ratio is new / old, pair by pair: median (min–max), ${runs.one} pairs for 1 pod, ${runs.ten}
for 10 pods, ${runs.restart} restarts each. Pods: busybox, one container, bridge network. Cold
apply is \`podrun apply --no-wait\` of pods new to the build (wall time, and the CPU time of the
whole process beside it); restart reaction is the agent's (crash back-off off), both builds' agents
running at once and killed in turn. ${Math.round((Date.now() - t0) / 60_000)} min. Load before: \`${before}\`; after: \`${after}\`.

${table(
  ['engine', 'measure', `old: ${oldName}`, `new: ${newRev ? newName : 'this tree'}`, 'new / old', `≤ ${LIMIT}`],
  out.map((r) => [
    r.engine,
    r.measure,
    ms(r.old),
    ms(r.new),
    `**${ratio(r.ratio)}**`,
    `${r.ratio.median <= LIMIT ? 'met' : 'missed'} (${r.ratio.median.toFixed(3)})`,
  ]),
)}`;
}
