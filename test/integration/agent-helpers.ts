import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach } from 'vitest';
import type { EngineBed } from './engine-beds.js';
import { agentGetText, PAUSE_IMAGE, TEST_IMAGE, unique, until, World } from './helpers.js';

const BIN = fileURLToPath(new URL('../../bin/podrun', import.meta.url));
// The test agents' relist and resync period, and their directory rescan's (`--resync-period`).
const RELIST_PERIOD = '1s';
const RESCAN_MS = 2000;
/** The agent's relists so far, as its metric counts them. */
const RELISTS = 'podrun_pleg_relist_duration_seconds_count';

/** A `podrun run` process, as systemd would run it, with its log captured. */
export class AgentProcess {
  readonly proc: ChildProcess;
  private log = '';
  private exited: Promise<number | null>;

  /** `bin`: another build's bin/podrun (the upgrade test runs the previous release's). */
  constructor(
    readonly stateDir: string,
    args: string[],
    env: Record<string, string> = {},
    bin = BIN,
  ) {
    this.proc = spawn(
      bin,
      // The node IP is loopback: hostNetwork probes never reach the machine's own addresses.
      [
        '--state-dir',
        stateDir,
        '--pause-image',
        PAUSE_IMAGE,
        '--node-ip',
        '127.0.0.1',
        'run',
        '--log-format',
        'text',
        '--resync-period',
        `${RESCAN_MS / 1000}s`,
        // Short, so that a wait past a relist (pastRelist) is short; a test about the event stream sets its own.
        '--relist-period',
        RELIST_PERIOD,
        '--url-period',
        '1s',
        ...args,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
    );
    this.proc.stdout?.on('data', (c: Buffer) => (this.log += c.toString()));
    this.proc.stderr?.on('data', (c: Buffer) => (this.log += c.toString()));
    this.exited = new Promise((r) => this.proc.on('exit', (code) => r(code)));
  }

  logs(): string {
    return this.log;
  }

  async started(): Promise<void> {
    await until('the agent to start', async () => (this.log.includes('agent started') ? true : undefined), 20_000);
  }

  async waitForLog(pattern: RegExp | string, timeoutMs = 20_000): Promise<void> {
    try {
      await until(
        `agent log ${String(pattern)}`,
        async () => ((typeof pattern === 'string' ? this.log.includes(pattern) : pattern.test(this.log)) ? true : undefined),
        timeoutMs,
      );
    } catch (err) {
      // What the agent did say is what explains the failure.
      const lines = this.log.trimEnd().split('\n');
      const shown = lines.length > 30 ? [...lines.slice(0, 15), '...', ...lines.slice(-15)] : lines;
      throw new Error(`${(err as Error).message}\nthe agent's log:\n${shown.join('\n')}`);
    }
  }

  /** SIGTERM: the agent stops, the pods stay. */
  async stop(): Promise<number | null> {
    if (this.proc.exitCode === null) this.proc.kill('SIGTERM');
    return this.exited;
  }

  async kill9(): Promise<void> {
    this.proc.kill('SIGKILL');
    await this.exited;
  }
}

/**
 * One test file's agent world: its own state dir (so its own podrun instance) and namespace; the
 * agent a test started is stopped after it, and everything the instance made goes after the file.
 */
export class AgentSuite {
  readonly world: World;
  readonly ns: string;
  private current: AgentProcess | undefined;

  /** `bed`: the agent runs on that engine bed's engine, and the bed cleans up. */
  constructor(
    prefix: string,
    private readonly bed?: EngineBed,
  ) {
    this.world = bed?.world ?? new World();
    this.ns = unique(prefix);
    afterEach(async () => {
      await this.current?.stop();
      this.current = undefined;
    });
    if (!bed) afterAll(() => this.world.cleanup());
  }

  /** Starts `podrun run` on this world's state dir; it is stopped after the test. */
  run(args: string[], env: Record<string, string> = {}): AgentProcess {
    this.current = this.bed ? this.bed.agent(args, env) : new AgentProcess(this.world.stateDir, args, env);
    return this.current;
  }
}

/**
 * Waits until the agent has relisted, resynced every pod and rescanned its directories since the
 * call: a window in which "nothing happened" means something. Seen, not slept: the relist count
 * (its metric) grows by two, so a whole relist began after the call and ended, and at least one
 * resync and rescan period (RESCAN_MS) has passed, so each of those timers fired in the window.
 */
export async function pastRelist(agent: AgentProcess): Promise<void> {
  const since = Date.now();
  const first = await agentMetric(agent, RELISTS);
  await until(
    'two relists and a rescan',
    async () => ((await agentMetric(agent, RELISTS)) >= first + 2 && Date.now() - since >= RESCAN_MS + 500 ? true : undefined),
    30_000,
  );
}

/** A pod of one sleeping container whose env V is `v`: a new `v` is an update that replaces the container. */
export function sleepingPod(name: string, ns: string, v = 'one'): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: a, image: ${TEST_IMAGE}, command: [sleep, '3600'], env: [{name: V, value: ${v}}]}
`;
}

/** Which samples of an agent metric: those whose labels include every one of `labels`, on `path`. */
export interface MetricSamples {
  /** e.g. `operation="sync"`, `container="web"`; none: every label set. */
  labels?: string[];
  /** `/metrics`, or `/metrics/probes` for the kubelet's prober series. */
  path?: string;
}

/** An agent metric now: the sum of the samples named `name` that `o` selects; 0 before the agent's socket answers. */
export async function agentMetric(agent: AgentProcess, name: string, o: MetricSamples = {}): Promise<number> {
  const text = (await agentGetText(agent.stateDir, o.path ?? '/metrics')) ?? '';
  let sum = 0;
  for (const m of text.matchAll(/^(\w+)(?:\{([^}]*)\})? (\S+)$/gm)) {
    if (m[1] === name && (o.labels ?? []).every((l) => (m[2] ?? '').includes(l))) sum += Number(m[3]);
  }
  return sum;
}

/**
 * Waits until an agent metric (a count: its relists, pod worker turns, engine calls, probes) has
 * grown by `by` since the call, and returns its value then: a stretch of the agent's own work,
 * seen, not a duration slept.
 */
export async function metricGrown(agent: AgentProcess, name: string, by: number, o: MetricSamples & { timeoutMs?: number } = {}): Promise<number> {
  const first = await agentMetric(agent, name, o);
  return until(
    `${name}{${(o.labels ?? []).join(',')}} to grow by ${by} from ${first}`,
    async () => {
      const now = await agentMetric(agent, name, o);
      return now >= first + by ? now : undefined;
    },
    o.timeoutMs ?? 30_000,
  );
}

/** Waits until the agent has made `n` more relists (its relist period each, at least) since the call. */
export async function pastRelists(agent: AgentProcess, n: number): Promise<void> {
  await metricGrown(agent, RELISTS, n);
}

/**
 * Waits until the agent has made `by` more probes whose labels include `labels` (every result
 * counted) since the call: probe periods, counted as the prober ran them, not slept.
 */
export function probesGrown(agent: AgentProcess, by: number, labels: string[], timeoutMs = 60_000): Promise<number> {
  return metricGrown(agent, 'prober_probe_total', by, { labels, path: '/metrics/probes', timeoutMs });
}

/**
 * Waits until the agent has relisted twice and rescanned (pastRelist) and its pod workers have
 * finished `turns` more sync turns of declared pods since the call: each declared pod has had its
 * turns to act on what the engine shows, so a window in which a sync turn made nothing means
 * something. Give `turns` as a few per declared pod (the resync enqueues every pod each period).
 */
export async function pastSyncTurns(agent: AgentProcess, turns: number): Promise<void> {
  await Promise.all([pastRelist(agent), metricGrown(agent, 'podrun_pod_worker_duration_seconds_count', turns, { labels: ['operation="sync"'] })]);
}
