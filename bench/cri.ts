/**
 * podrun on a CRI runtime (a private containerd 1.6, as the engine tests start it) against the
 * CRI floor: a Node process on podrun's own CriClient making the same runtime calls. Cold apply of
 * 1 and 10 pods (`podrun apply` until every container runs), and the restart reaction (a
 * container's process killed → the agent's next container running; the floor relists at the same
 * 1 s and recreates). Every figure is paired with its floor in the same run.
 */
import { build } from 'esbuild';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { LABEL } from '../src/runtime/labels.js';
import { ContainerState } from '../src/runtime/cri/messages.js';
import { CRI_TEST_IMAGE, PrivateContainerd } from '../test/integration/cri-engine.js';
import {
  BIN,
  forgetManifests,
  log,
  must,
  ms,
  pairwise,
  PAUSE_IMAGE,
  QUICK,
  ratio,
  REPO,
  run,
  runCpu,
  sleep,
  stat,
  table,
  TEST_IMAGE,
  writePods,
  type Ran,
  type Stat,
} from './lib.js';

const FLOOR = join(REPO, '.bench-build/bench/cri-floor.js');

/** bench/cri-tool.ts bundled into one CommonJS file under `root`, as podrun's own code is. */
async function bundleTool(root: string): Promise<string> {
  const outfile = join(root, 'cri-tool.cjs');
  await build({ entryPoints: [join(REPO, 'bench/cri-tool.ts')], bundle: true, platform: 'node', format: 'cjs', target: 'node20', outfile, logLevel: 'error' });
  return outfile;
}

/** The running container of a pod (podrun's by pod label, the floor's by sandbox), polled every 20 ms until one other than `not` runs. */
async function nextRunning(
  ctrd: PrivateContainerd,
  filter: Parameters<PrivateContainerd['client']['listContainers']>[0],
  not: string,
  timeoutMs = 60_000,
): Promise<string> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const cs = await ctrd.client.listContainers(filter);
    const c = cs.find((x) => x.state === ContainerState.RUNNING && x.id !== not);
    if (c) return c.id;
    await sleep(20);
  }
  throw new Error('no replacement container within a minute');
}

async function killProcess(ctrd: PrivateContainerd, id: string): Promise<void> {
  const { info } = await ctrd.client.containerStatusVerbose(id);
  const pid = (JSON.parse(info.info ?? '{}') as { pid?: number }).pid;
  if (!pid) throw new Error(`no pid for ${id}`);
  process.kill(pid, 'SIGKILL');
}

interface ColdRow {
  pods: number;
  /** `podrun apply --no-wait`: create and start, as the floor does. */
  podrun: Stat;
  floorEngine: Stat;
  strict: Stat;
  vsStrict: Stat;
  /** `podrun apply` (its Ready wait and 1 s hold included), and its time beyond the strict floor, run by run. */
  applied: Stat;
  beyond: Stat;
  /** CPU time (user+sys): the whole `apply --no-wait` process, and the floor's over its calls plus `node -e 0`'s. */
  podrunCpu: Stat;
  strictCpu: Stat;
  vsStrictCpu: Stat;
  /** The Node tool (bench/cri-tool.ts) as a whole process: the floor's calls, then also checking its files first. */
  tool: Stat;
  vsTool: Stat;
  checkingTool: Stat;
  vsCheckingTool: Stat;
  vsCheckingStrict: Stat;
}

/** podrun's argv on the private containerd, with its own state dir and pod logs. */
export function criArgv(ctrd: PrivateContainerd, stateDir: string, logs: string): (args: string[]) => string[] {
  return (args) => [
    '--state-dir',
    stateDir,
    '--pause-image',
    PAUSE_IMAGE,
    '--node-ip',
    '127.0.0.1',
    '--container-runtime-endpoint',
    ctrd.endpoint,
    '--pod-logs-dir',
    logs,
    ...args,
  ];
}

/** No Docker for podrun on CRI: a call that reached Docker would fail, not quietly pass. */
export const CRI_ENV = { DOCKER_HOST: 'unix:///nonexistent/docker.sock' };

/**
 * One cold `podrun apply --no-wait` of `dir` by `bin` (the pods new to it: its manifest cache
 * forgotten), timed with its CPU, then the pods deleted again.
 */
export async function criColdNoWait(bin: string, argv: (args: string[]) => string[], dir: string, stateDir: string): Promise<Ran & { cpuMs: number }> {
  forgetManifests(stateDir);
  const started = await runCpu(bin, argv(['apply', '--no-wait', dir]), { env: CRI_ENV });
  if (started.code !== 0) throw new Error(`podrun apply --no-wait on CRI failed: ${started.err}`);
  await run(bin, argv(['delete', '-f', dir, '--grace-period', '0']), { env: CRI_ENV });
  return started;
}

async function cold(ctrd: PrivateContainerd, root: string, logs: string, tool: string, pods: number, runs: number): Promise<ColdRow> {
  const dir = join(root, `cri-cold-${pods}`);
  writePods(dir, `cri-cold-${pods}`, 'bench-cri', pods, { containers: 1, hostNetwork: false });
  const stateDir = join(root, `cri-cold-${pods}-state`);
  mkdirSync(stateDir, { recursive: true });
  const env = CRI_ENV;
  const argv = criArgv(ctrd, stateDir, logs);
  const cli = (args: string[]): ReturnType<typeof run> => run(BIN, argv(args), { env });
  const t = {
    podrun: [] as number[],
    floor: [] as number[],
    strict: [] as number[],
    applied: [] as number[],
    podrunCpu: [] as number[],
    strictCpu: [] as number[],
    tool: [] as number[],
    checkingTool: [] as number[],
  };
  const removeLabelled = async (label: string): Promise<void> => {
    const [k, v] = label.split('=') as [string, string];
    for (const sb of await ctrd.client.listPodSandbox({ labelSelector: { [k]: v } })) {
      await ctrd.client.stopPodSandbox(sb.id);
      await ctrd.client.removePodSandbox(sb.id);
    }
  };
  for (let r = 0; r < runs; r++) {
    // Like with like: create and start, as the floor and `docker compose up -d` (the ratio);
    // then the default apply with its Ready wait and hold (reported as time beyond the floor).
    const started = await criColdNoWait(BIN, argv, dir, stateDir);
    t.podrun.push(started.ms);
    t.podrunCpu.push(started.cpuMs);
    forgetManifests(stateDir);
    const applied = await cli(['apply', dir]);
    if (applied.code !== 0) throw new Error(`podrun apply on CRI failed: ${applied.err}`);
    t.applied.push(applied.ms);
    await cli(['delete', '-f', dir, '--grace-period', '0']);

    const label = `podrun-bench.cri-floor=p${pods}r${r}`;
    const floor = await must('node', [FLOOR, 'cold', ctrd.endpoint, String(pods), label, logs]);
    const [floorMs, floorCpuMs] = floor.out.trim().split(' ').map(Number) as [number, number];
    const bare = await runCpu('node', ['-e', '0']);
    t.floor.push(floorMs);
    t.strict.push(floorMs + bare.ms);
    t.strictCpu.push(floorCpuMs + bare.cpuMs);
    await removeLabelled(label);

    // The same calls from a Node tool as a whole process, then from one that checks its files first.
    for (const [k, checking] of [
      ['tool', false],
      ['checkingTool', true],
    ] as const) {
      const toolLabel = `podrun-bench.cri-tool=p${pods}r${r}${checking ? 'c' : ''}`;
      const args = [tool, ctrd.endpoint, dir, toolLabel, logs, CRI_TEST_IMAGE, ...(checking ? [join(REPO, 'dist/bundle')] : [])];
      t[k].push((await must('node', args)).ms);
      await removeLabelled(toolLabel);
    }
  }
  const row = {
    pods,
    podrun: stat(t.podrun),
    floorEngine: stat(t.floor),
    strict: stat(t.strict),
    vsStrict: pairwise(t.podrun, t.strict),
    applied: stat(t.applied),
    beyond: stat(t.applied.map((x, i) => x - t.strict[i]!)),
    podrunCpu: stat(t.podrunCpu),
    strictCpu: stat(t.strictCpu),
    vsStrictCpu: pairwise(t.podrunCpu, t.strictCpu),
    tool: stat(t.tool),
    vsTool: pairwise(t.podrun, t.tool),
    checkingTool: stat(t.checkingTool),
    vsCheckingTool: pairwise(t.podrun, t.checkingTool),
    vsCheckingStrict: pairwise(t.checkingTool, t.strict),
  };
  log(
    `CRI cold apply ${pods}: --no-wait ${ms(row.podrun)}, floor engine ${ms(row.floorEngine)}, strict ${ms(row.strict)}, ratio ${ratio(row.vsStrict)}; CPU ${ms(row.podrunCpu)} against ${ms(row.strictCpu)}, ratio ${ratio(row.vsStrictCpu)}; apply ${ms(row.applied)}, beyond the strict floor ${ms(row.beyond)}; Node tool ${ms(row.tool)} (podrun / tool ${ratio(row.vsTool)}), checking its files ${ms(row.checkingTool)} (${ratio(row.vsCheckingTool)})`,
  );
  return row;
}

/** `podrun run` of `bin` on the private containerd, crash back-off off (podrun's own path is measured). */
export class CriAgent {
  private readonly proc: ChildProcess;
  private out = '';
  private readonly exited: Promise<unknown>;

  constructor(bin: string, argv: (args: string[]) => string[], manifestDir: string) {
    this.proc = spawn(bin, argv(['run', '--manifest-dir', manifestDir, '--crash-backoff-initial', '0s', '--crash-backoff-max', '0s', '--v', '4']), {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...CRI_ENV },
    });
    this.proc.stdout?.on('data', (c: Buffer) => (this.out += c.toString()));
    this.proc.stderr?.on('data', (c: Buffer) => (this.out += c.toString()));
    this.exited = new Promise((r) => this.proc.on('exit', r));
  }

  /** Its pod's running container, once it has made it (its log in the error if it never does). */
  running(ctrd: PrivateContainerd, filter: Parameters<PrivateContainerd['client']['listContainers']>[0]): Promise<string> {
    return nextRunning(ctrd, filter, '', 90_000).catch((e: unknown) => {
      throw new Error(`${(e as Error).message}\n${this.out.slice(-3000)}`);
    });
  }

  /** When it saw the container's death: its log's `engine event exited` line after `since`. */
  saw(since: number): number | undefined {
    for (const line of this.out.split('\n').reverse()) {
      if (!line.includes('engine event exited of container c0')) continue;
      const at = Date.parse((JSON.parse(line) as { time: string }).time);
      return at >= since ? at : undefined;
    }
    return undefined;
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode === null) this.proc.kill('SIGTERM');
    await this.exited;
  }
}

/** A restart: the container's process SIGKILLed, until another container of `filter` runs (listed every 20 ms). */
export async function criRestart(
  ctrd: PrivateContainerd,
  filter: Parameters<PrivateContainerd['client']['listContainers']>[0],
  current: string,
): Promise<{ ms: number; next: string }> {
  const t0 = performance.now();
  await killProcess(ctrd, current);
  const next = await nextRunning(ctrd, filter, current);
  return { ms: performance.now() - t0, next };
}

/** The agent's reaction and the floor's, interleaved run by run. */
async function restartReaction(
  ctrd: PrivateContainerd,
  root: string,
  logs: string,
  runs: number,
): Promise<{ podrun: Stat; floor: Stat; vs: Stat; podrunAfter: Stat; floorAfter: Stat }> {
  const dir = join(root, 'cri-restart');
  writePods(dir, 'cri-target', 'bench-cri', 1, { containers: 1, hostNetwork: false });
  const stateDir = join(root, 'cri-restart-state');
  mkdirSync(stateDir, { recursive: true });
  const agent = new CriAgent(BIN, criArgv(ctrd, stateDir, logs), dir);
  const t = { podrun: [] as number[], floor: [] as number[], podrunAfter: [] as number[], floorAfter: [] as number[] };
  try {
    const podFilter = { labelSelector: { [LABEL.podName]: 'cri-target-0' } };
    let current = await agent.running(ctrd, podFilter);
    // The floor's own pod, made through the CRI as its tool would.
    const label = 'podrun-bench.cri-floor=restart';
    const [k, v] = label.split('=') as [string, string];
    await must('node', [FLOOR, 'cold', ctrd.endpoint, '1', label, logs]);
    const [sb] = await ctrd.client.listPodSandbox({ labelSelector: { [k]: v } });
    let floorCurrent = (await ctrd.client.listContainers({ podSandboxId: sb!.id }))[0]!.id;
    for (let r = 0; r < runs; r++) {
      await sleep(500 + Math.random() * 1000); // a random phase against the 1 s relist of either
      const killedAt = Date.now();
      const reacted = await criRestart(ctrd, podFilter, current);
      current = reacted.next;
      t.podrun.push(reacted.ms);
      const saw = agent.saw(killedAt - 5);
      if (saw !== undefined) t.podrunAfter.push(Date.now() - saw);

      const floor = spawn('node', [FLOOR, 'restart', ctrd.endpoint, sb!.id, label, logs], { stdio: ['ignore', 'pipe', 'inherit'] });
      let floorOut = '';
      floor.stdout.on('data', (c: Buffer) => (floorOut += c.toString()));
      // Its exit is awaited from the start: it ends as soon as it has started the replacement.
      const exited = new Promise((r2) => floor.on('exit', r2));
      await Promise.race([
        new Promise<void>((resolve) => floor.stdout.on('data', (c: Buffer) => c.toString().includes('ready') && resolve())),
        exited.then(() => {
          throw new Error('the CRI floor ended before it was ready');
        }),
      ]);
      await sleep(Math.random() * 1000);
      const t0 = performance.now();
      await killProcess(ctrd, floorCurrent);
      floorCurrent = await nextRunning(ctrd, { podSandboxId: sb!.id }, floorCurrent);
      t.floor.push(performance.now() - t0);
      const seen = Number(/seen (\d+)/.exec(floorOut)?.[1]);
      if (seen) t.floorAfter.push(Date.now() - seen);
      await exited;
    }
  } finally {
    await agent.stop();
  }
  const row = {
    podrun: stat(t.podrun),
    floor: stat(t.floor),
    vs: pairwise(t.podrun, t.floor),
    podrunAfter: stat(t.podrunAfter),
    floorAfter: stat(t.floorAfter),
    samples: t,
  };
  log(
    `CRI restart reaction: podrun ${ms(row.podrun)}, floor ${ms(row.floor)}, ratio ${ratio(row.vs)}; from the relist's sight of the death: podrun ${ms(row.podrunAfter)}, floor ${ms(row.floorAfter)}`,
  );
  log(`samples: podrun ${t.podrun.map(Math.round).join(',')}; floor ${t.floor.map(Math.round).join(',')}`);
  return row;
}

/** BENCH_CRI_PARTS=cold,restart (default both); BENCH_CRI_RUNS=N runs of each (default 7, 5 for 10 pods). */
const PARTS = (process.env.BENCH_CRI_PARTS ?? 'cold,restart').split(',');
const RUNS = Number(process.env.BENCH_CRI_RUNS ?? 0);

export async function criScenarios(root: string): Promise<string> {
  const ctrd = new PrivateContainerd();
  await ctrd.start();
  ctrd.importTestImages();
  const logs = join(root, 'cri-pod-logs');
  mkdirSync(logs, { recursive: true });
  try {
    const out: string[] = [];
    if (PARTS.includes('cold')) {
      const tool = await bundleTool(root);
      const rows = [await cold(ctrd, root, logs, tool, 1, RUNS || (QUICK ? 2 : 7)), await cold(ctrd, root, logs, tool, 10, RUNS || (QUICK ? 1 : 5))];
      out.push(`### On a CRI runtime (containerd 1.6, private, CNI bridge)

podrun with \`--container-runtime-endpoint\` on a containerd of the bench's own, beside the CRI
floor: a Node process on podrun's own CriClient making the same calls (RunPodSandbox,
CreateContainer, StartContainer, 4 at once). Like with like: \`podrun apply --no-wait\` (create
and start, as the floor and \`docker compose up -d\`) against the strict floor, the floor's calls
plus \`node -e 0\` measured in the same run (target ≤ 1.10). CPU time (user+sys) beside it: the
whole \`apply --no-wait\` process against the floor's over its calls plus \`node -e 0\`'s, which a
busy machine inflates far less than wall time. The default \`podrun apply\` waits
until each pod is Ready and has held Ready 1 s (issue 29): it is reported as its time beyond the
strict floor, run by run. Image ${TEST_IMAGE}, one container a pod.

${table(
  [
    'pods',
    'podrun apply --no-wait',
    'floor calls',
    'strict floor',
    'podrun --no-wait / strict floor',
    'CPU: podrun --no-wait',
    'CPU: strict floor',
    'CPU: podrun / strict floor',
    'podrun apply (Ready, held 1 s)',
    'apply beyond the strict floor',
  ],
  rows.map((r) => [
    String(r.pods),
    ms(r.podrun),
    ms(r.floorEngine),
    ms(r.strict),
    `**${ratio(r.vsStrict)}**`,
    ms(r.podrunCpu),
    ms(r.strictCpu),
    `**${ratio(r.vsStrictCpu)}**`,
    ms(r.applied),
    ms(r.beyond),
  ]),
)}

The strict floor counts none of a tool's own start beyond \`node -e 0\`: no code of its own, no
\`node:http2\`, no connection. Beside it, the same calls from a hand-written Node tool timed as a whole
process (\`bench/cri-tool.ts\`, bundled into one file as podrun is), and from the same tool checking
its files first with podrun's own YAML reader and Pod schema validator, loaded from their code caches
as podrun loads them: the least a Node tool can take that, like podrun, changes nothing until its
input is known good. Run by run, in the same runs as the table above.

${table(
  ['pods', 'podrun apply --no-wait', 'Node tool', 'podrun / tool', 'tool checking its files', 'podrun / checking tool', 'checking tool / strict floor'],
  rows.map((r) => [
    String(r.pods),
    ms(r.podrun),
    ms(r.tool),
    `**${ratio(r.vsTool)}**`,
    ms(r.checkingTool),
    `**${ratio(r.vsCheckingTool)}**`,
    ratio(r.vsCheckingStrict),
  ]),
)}`);
    }
    if (PARTS.includes('restart')) {
      const restart = await restartReaction(ctrd, root, logs, RUNS || (QUICK ? 3 : 7));
      out.push(`Restart reaction on the CRI runtime: the container's process killed (SIGKILL) → the next container running, seen by
listing every 20 ms. podrun's agent (crash back-off off; it sees a death from the container's
cgroup, its relist as the safety net) against a floor process that relists at the generic PLEG's
1 s and recreates (target ≤ 1.0). A kill lands at a random phase of the floor's relist, which is
most of its spread: the last columns time each from its sight of the death (the agent's
\`engine event exited\` log line, the floor's own note) to the next container seen running.

${table(
  ['podrun agent', 'CRI floor (1 s relist)', 'podrun / floor', 'podrun, from its sight of the death', 'floor, from its relist seeing it'],
  [[ms(restart.podrun), ms(restart.floor), `**${ratio(restart.vs)}**`, ms(restart.podrunAfter), ms(restart.floorAfter)]],
)}`);
    }
    return out.join('\n\n');
  } finally {
    await ctrd.destroy();
  }
}
