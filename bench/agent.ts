/**
 * The agent (`podrun run`) as a process: restart reaction idle and while six pods spend a 20 s
 * grace period, against Docker's own restart policy and the raw API floor; a delete of 50 pods
 * with a 30 s grace; start-up adoption of 50 running pods; and its footprint with 50 probed pods.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { instanceId, LABEL } from '../src/runtime/labels.js';
import { FaultyEngine } from '../test/integration/engine-helpers.js';
import {
  BIN,
  docker,
  followEvents,
  log,
  ms,
  PAUSE_IMAGE,
  podrun,
  procUsage,
  QUICK,
  ratio,
  removeInstance,
  removeLabelled,
  sleep,
  stat,
  table,
  TEST_IMAGE,
  until,
  writePods,
  type Stat,
} from './lib.js';

/** `podrun run` of `bin` (this build's unless another is compared) on a state dir of its own. */
export class Agent {
  readonly proc: ChildProcess;
  out = '';
  private readonly exited: Promise<unknown>;

  constructor(stateDir: string, args: string[], env: Record<string, string> = {}, bin = BIN) {
    this.proc = spawn(bin, ['--state-dir', stateDir, '--pause-image', PAUSE_IMAGE, '--node-ip', '127.0.0.1', 'run', ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.proc.stdout?.on('data', (c: Buffer) => (this.out += c.toString()));
    this.proc.stderr?.on('data', (c: Buffer) => (this.out += c.toString()));
    this.exited = new Promise((r) => this.proc.on('exit', r));
  }

  async logged(text: string, timeoutMs = 120_000): Promise<void> {
    await until(`agent log "${text}"`, async () => (this.out.includes(text) ? true : undefined), timeoutMs);
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode === null) this.proc.kill('SIGTERM');
    await this.exited;
  }
}

export async function running(labels: string[], n: number): Promise<Docker.ContainerInfo[]> {
  return until(
    `${n} running containers`,
    async () => {
      const list = await docker.listContainers({ filters: JSON.stringify({ label: labels, status: ['running'] }) });
      return list.length >= n ? list : undefined;
    },
    180_000,
  );
}

/**
 * A crash: the container's main process is SIGKILLed from the host, as an OOM kill or a fault
 * would end it. (A \`docker kill\` would also do for podrun, but Docker never restarts a
 * container that was killed through its API, so the peer could not be measured alike.)
 */
async function crash(id: string): Promise<void> {
  const pid = (await docker.getContainer(id).inspect()).State.Pid;
  if (!pid) throw new Error(`container ${id} has no process`);
  process.kill(pid, 'SIGKILL');
}

/** Crash one container; the engine's own clock from its `die` to the replacement's `start`. */
export async function reaction(labels: string[]): Promise<number> {
  const [c] = await running(labels, 1);
  const ev = await followEvents(labels);
  try {
    await crash(c!.Id);
    const start = await until('the replacement to start', async () => ev.events.find((e) => e.action === 'start' && e.id !== c!.Id), 60_000);
    const die = await until('the death', async () => ev.events.find((e) => e.action === 'die' && e.id === c!.Id), 10_000);
    return start.timeMs - die.timeMs;
  } finally {
    ev.stop();
  }
}

/** Docker's own restart policy on a fresh container (its first restart; later ones back off). */
async function dockerRestart(): Promise<number> {
  const label = 'podrun-bench.restart-policy=1';
  const c = await docker.createContainer({
    Image: TEST_IMAGE,
    Cmd: ['sleep', '3600'],
    Labels: { 'podrun-bench.restart-policy': '1' },
    HostConfig: { NetworkMode: 'bridge', RestartPolicy: { Name: 'always' } },
  });
  await c.start();
  const ev = await followEvents([label]);
  try {
    await crash(c.id);
    const start = await until('docker to restart it', async () => ev.events.find((e) => e.action === 'start'), 30_000);
    const die = ev.events.find((e) => e.action === 'die')!;
    return start.timeMs - die.timeMs;
  } finally {
    ev.stop();
    await c.remove({ force: true });
  }
}

/** The floor: the same replacement made through the API by hand (wait for the death, create, start). */
async function rawRestart(sandboxId: string): Promise<number> {
  const opts = { Image: TEST_IMAGE, Cmd: ['sleep', '3600'], Labels: { 'podrun-bench.raw': '1' }, HostConfig: { NetworkMode: `container:${sandboxId}` } };
  const first = await docker.createContainer(opts);
  await first.start();
  const ev = await followEvents(['podrun-bench.raw=1']);
  try {
    const waited = first.wait();
    await crash(first.id);
    await waited;
    const next = await docker.createContainer(opts);
    await next.start();
    const start = await until('the raw start', async () => ev.events.find((e) => e.action === 'start' && e.id === next.id), 10_000);
    const die = ev.events.find((e) => e.action === 'die' && e.id === first.id)!;
    await Promise.all([first.remove({ force: true }), next.remove({ force: true })]);
    return start.timeMs - die.timeMs;
  } finally {
    ev.stop();
  }
}

async function reactions(root: string): Promise<string> {
  const dir = join(root, 'react');
  const stateDir = join(root, 'react-state');
  const ns = 'bench-react';
  writePods(dir, 'target', ns, 1, { containers: 1, hostNetwork: false });
  // Crash back-off off: what is measured is podrun's own path, not a deliberate wait.
  const agent = new Agent(stateDir, ['--manifest-dir', dir, '--crash-backoff-initial', '0s', '--crash-backoff-max', '0s']);
  const labels = [`${LABEL.instance}=${instanceId(stateDir)}`, `${LABEL.podName}=target-0`, `${LABEL.containerName}=c0`];
  const n = QUICK ? 3 : 9;
  try {
    await agent.logged('agent started');
    await running(labels, 1);
    const [sandbox] = await running([`${LABEL.instance}=${instanceId(stateDir)}`, `${LABEL.podName}=target-0`, `${LABEL.containerType}=sandbox`], 1);
    const idle: number[] = [];
    const dockerPolicy: number[] = [];
    const raw: number[] = [];
    for (let i = 0; i < n; i++) {
      idle.push(await reaction(labels));
      dockerPolicy.push(await dockerRestart());
      raw.push(await rawRestart(sandbox!.Id));
      await sleep(300);
    }
    // Six pods that ignore SIGTERM, with a 20 s grace period, leave: their stops overlap the kills.
    writePods(dir, 'drain', ns, 6, { containers: 1, hostNetwork: false, ignoreTerm: true, grace: 20 });
    await running([`${LABEL.instance}=${instanceId(stateDir)}`, `${LABEL.podNamespace}=${ns}`], 7);
    for (let i = 0; i < 6; i++) rmSync(join(dir, `drain-${i}.yaml`));
    await until('the drains to begin', async () => ((agent.out.match(/drain-\d: no longer declared/g) ?? []).length >= 6 ? true : undefined), 30_000);
    const draining: number[] = [];
    for (let i = 0; i < Math.min(n, 5); i++) {
      draining.push(await reaction(labels));
      await sleep(300);
    }
    const stillDraining =
      (
        await docker.listContainers({
          filters: JSON.stringify({ label: [`${LABEL.instance}=${instanceId(stateDir)}`, `${LABEL.podName}=drain-0`], status: ['running'] }),
        })
      ).length > 0;
    log(`reaction: idle ${ms(stat(idle))}, draining ${ms(stat(draining))}, docker policy ${ms(stat(dockerPolicy))}, raw ${ms(stat(raw))}`);
    return `### Restart reaction (agent; a container's process SIGKILLed → its replacement started)

From the engine's own \`die\` and \`start\` event times. Crash back-off is off in the benchmark's
agent (\`--crash-backoff-initial 0s\`), so what is measured is podrun's own path. Docker's
restart policy is measured on a fresh container each time (its first restart; Docker waits
100 ms before it, and doubles that for later ones). The raw floor waits for the death, then
creates and starts the replacement in the same sandbox.

${table(
  ['case', 'podrun', 'Docker restart policy', 'raw API floor', 'podrun / raw floor'],
  [
    ['idle', ms(stat(idle)), ms(stat(dockerPolicy)), ms(stat(raw)), ratio(stat(idle.map((x, i) => x / raw[i]!)))],
    [
      `while 6 pods spend a 20 s grace period${stillDraining ? '' : ' (the drains ended before the last sample)'}`,
      ms(stat(draining)),
      '—',
      '—',
      ratio(stat(draining.map((x, i) => x / raw[i]!))),
    ],
  ],
)}`;
  } finally {
    await agent.stop();
    await removeInstance(stateDir);
    await removeLabelled('podrun-bench.raw=1');
  }
}

/**
 * The engine's floor for the same deletion, on pods podrun made: every app container stopped with
 * the pod's grace period, all at once, then each pod's containers and sandbox force-removed, all
 * at once, unbounded, through the API with nothing else asked (no CLI start, no list of leftovers,
 * no volumes). What is left over the grace period here is the engine's own work after it: the
 * kills reaped, the sandboxes' networks taken down, the containers removed.
 */
async function deleteFloor(stateDir: string, grace: number): Promise<number> {
  const list = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${LABEL.instance}=${instanceId(stateDir)}`] }) });
  const pods = new Map<string, Docker.ContainerInfo[]>();
  for (const c of list) pods.set(c.Labels[LABEL.podUid] ?? '', [...(pods.get(c.Labels[LABEL.podUid] ?? '') ?? []), c]);
  const t0 = performance.now();
  await Promise.all(
    [...pods.values()].map(async (cs) => {
      await Promise.all(cs.filter((c) => c.Labels[LABEL.containerType] !== 'sandbox').map((c) => docker.getContainer(c.Id).stop({ t: grace })));
      await Promise.all(cs.map((c) => docker.getContainer(c.Id).remove({ force: true, v: true })));
    }),
  );
  return performance.now() - t0;
}

async function deleteMany(root: string): Promise<string> {
  const dir = join(root, 'delete');
  const stateDir = join(root, 'delete-state');
  const pods = QUICK ? 10 : 50;
  writePods(dir, 'del', 'bench-delete', pods, { containers: 1, hostNetwork: false, ignoreTerm: true, grace: 30 });
  const cli = podrun(stateDir);
  try {
    const applied = await cli(['apply', dir]);
    if (applied.code !== 0) throw new Error(`apply failed: ${applied.err}`);
    const del = await cli(['delete', '-f', dir]);
    if (del.code !== 0) throw new Error(`delete failed: ${del.err}`);
    log(`delete of ${pods} pods with a 30 s grace: ${ms(stat([del.ms]))}`);
    // The same pods again, deleted by the engine's floor right after, so both meet the same machine.
    const again = await cli(['apply', dir]);
    if (again.code !== 0) throw new Error(`apply failed: ${again.err}`);
    const floor = await deleteFloor(stateDir, 30);
    log(`the engine's floor for it: ${ms(stat([floor]))}`);
    return `### Delete of ${pods} pods with a 30 s grace period

Every container ignores SIGTERM, so each stop takes its whole grace period; the grace periods
overlap. \`podrun delete -f\`: **${ms(stat([del.ms]))}**, against the grace period itself (30 s) as
the floor: ${(del.ms / 30_000).toFixed(2)}×. (Before issue 10, four pods at a time: about 6 minutes
for 50.) The engine's floor for the same deletion right after (every stop at once with the same
grace, then every pod's containers and sandbox force-removed at once, through the API, no CLI
start): ${ms(stat([floor]))}, so podrun / engine floor ${(del.ms / floor).toFixed(2)}.`;
  } finally {
    await removeInstance(stateDir);
  }
}

async function adoption(root: string): Promise<string> {
  const dir = join(root, 'adopt');
  const stateDir = join(root, 'adopt-state');
  const pods = QUICK ? 10 : 50;
  writePods(dir, 'adopt', 'bench-adopt', pods, { containers: 1, hostNetwork: false });
  const cli = podrun(stateDir);
  const proxy = new FaultyEngine();
  await proxy.start();
  let agent: Agent | undefined;
  try {
    const applied = await cli(['apply', dir]);
    if (applied.code !== 0) throw new Error(`apply failed: ${applied.err}`);
    const before = (await docker.listContainers({ filters: JSON.stringify({ label: [`${LABEL.instance}=${instanceId(stateDir)}`] }) })).map((c) => c.Id).sort();
    const t0 = performance.now();
    // The same directory the pods were applied from: the agent takes them over as they are.
    agent = new Agent(stateDir, ['--manifest-dir', dir], { DOCKER_HOST: proxy.host });
    await agent.logged('agent started');
    const startedMs = performance.now() - t0;
    await sleep(3000);
    const after = (await docker.listContainers({ filters: JSON.stringify({ label: [`${LABEL.instance}=${instanceId(stateDir)}`] }) })).map((c) => c.Id).sort();
    const mutating = proxy.requests.filter((r) => /^(POST|DELETE|PUT) /.test(r));
    const updates = mutating.filter((r) => r.endsWith('/update')).length;
    const same = JSON.stringify(before) === JSON.stringify(after);
    log(
      `adoption of ${pods}: started in ${Math.round(startedMs)} ms; ${mutating.length} mutating calls (${updates} restart-policy updates); containers unchanged: ${same}`,
    );
    return `### Agent start-up adopting ${pods} running pods

Pods made by \`podrun apply\` (which leaves them an engine restart policy), then \`podrun run\` on
the same directory and state dir. From spawn to "agent started" (lock, first relist, sources read,
desired set made): **${ms(stat([startedMs]))}**. Engine calls that change anything:
${mutating.length}, of which ${updates} set a container's restart policy to \`no\` (the agent restarts
them from now on); containers replaced: ${same ? 'none (the same ids before and after)' : 'SOME — a bug'}.`;
  } finally {
    await agent?.stop();
    await proxy.stop();
    await cli(['delete', '-f', dir, '--grace-period', '0']);
    await removeInstance(stateDir);
  }
}

function socketGet(stateDir: string, path: string): Promise<string> {
  return new Promise((resolveGet, reject) => {
    request({ socketPath: join(stateDir, 'podrun.sock'), path }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolveGet(body));
    })
      .on('error', reject)
      .end();
  });
}

const sample = (text: string, name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

/** One agent over the pods for `seconds` of steady state: resident memory and CPU from /proc. */
async function measureAgent(
  stateDir: string,
  dir: string,
  pods: number,
  seconds: number,
  readStats: boolean,
): Promise<{ rss: Stat; cpu: number; metrics: string }> {
  const agent = new Agent(stateDir, ['--manifest-dir', dir]);
  try {
    await agent.logged('agent started');
    await running([`${LABEL.instance}=${instanceId(stateDir)}`, `${LABEL.containerType}=app`], pods);
    // Past start-up and the first probes: what is measured is the steady state.
    await sleep(15_000);
    const pid = agent.proc.pid!;
    const start = procUsage(pid);
    const t0 = performance.now();
    const rss: number[] = [];
    let lastRead = 0;
    while (performance.now() - t0 < seconds * 1000) {
      rss.push(procUsage(pid).rssKiB / 1024);
      // As Prometheus would with the kubelet's scrape configs: the container endpoints every 15 s.
      if (readStats && performance.now() - lastRead >= 15_000) {
        lastRead = performance.now();
        await Promise.all(['/metrics/cadvisor', '/metrics/resource', '/metrics/probes', '/metrics'].map((path) => socketGet(stateDir, path)));
      }
      await sleep(1000);
    }
    const end = procUsage(pid);
    const cpu = ((end.cpuSeconds - start.cpuSeconds) / ((performance.now() - t0) / 1000)) * 100;
    return { rss: stat(rss), cpu, metrics: await socketGet(stateDir, '/metrics') };
  } finally {
    await agent.stop();
  }
}

/** Bare Node probing the same pods the same way (bench/probe-floor.ts) for `seconds`: the floor under the agent's CPU. */
async function probeFloor(stateDir: string, seconds: number): Promise<{ rss: Stat; cpu: number; pods: number }> {
  // This run's instance only: another run of the bench on the same engine uses the same namespace.
  const sandboxes = await docker.listContainers({
    filters: JSON.stringify({ label: [`${LABEL.instance}=${instanceId(stateDir)}`, `${LABEL.containerType}=sandbox`], status: ['running'] }),
  });
  const ips = sandboxes.map((c) => Object.values(c.NetworkSettings?.Networks ?? {}).find((n) => n.IPAddress)?.IPAddress).filter((ip): ip is string => !!ip);
  const proc = spawn(process.execPath, [join(import.meta.dirname, 'probe-floor.js'), '8080', ...ips], { stdio: 'ignore' });
  try {
    await sleep(15_000);
    const pid = proc.pid!;
    const start = procUsage(pid);
    const t0 = performance.now();
    const rss: number[] = [];
    while (performance.now() - t0 < seconds * 1000) {
      rss.push(procUsage(pid).rssKiB / 1024);
      await sleep(1000);
    }
    const end = procUsage(pid);
    return { rss: stat(rss), cpu: ((end.cpuSeconds - start.cpuSeconds) / ((performance.now() - t0) / 1000)) * 100, pods: ips.length };
  } finally {
    proc.kill('SIGTERM');
  }
}

async function footprint(root: string): Promise<string> {
  const dir = join(root, 'footprint');
  const stateDir = join(root, 'footprint-state');
  mkdirSync(dir, { recursive: true });
  const pods = 50;
  const seconds = Number(process.env.BENCH_FOOTPRINT_S ?? (QUICK ? 60 : 300));
  const offSeconds = Number(process.env.BENCH_FOOTPRINT_OFF_S ?? (QUICK ? 20 : 120));
  writePods(dir, 'fp', 'bench-footprint', pods, { containers: 1, hostNetwork: false, probes: true });
  try {
    const on = await measureAgent(stateDir, dir, pods, seconds, false);
    const read = await measureAgent(stateDir, dir, pods, offSeconds, true);
    // The agent leaves its pods running when it stops: the floor probes the same ones.
    const floor = await probeFloor(stateDir, offSeconds);
    const restarts = (
      await docker.listContainers({
        all: true,
        filters: JSON.stringify({ label: [`${LABEL.instance}=${instanceId(stateDir)}`, `${LABEL.containerType}=app`] }),
      })
    ).filter((c) => Number(c.Labels[LABEL.restartCount]) > 0).length;
    const collections = sample(read.metrics, 'podrun_stats_collection_duration_seconds_count');
    const collectMs = (sample(read.metrics, 'podrun_stats_collection_duration_seconds_sum') / collections) * 1000;
    const calls = sample(read.metrics, 'podrun_stats_engine_calls_total') / collections;
    const live = pods * 2; // one container and its sandbox each
    log(
      `footprint: RSS ${on.rss.median.toFixed(0)} MB (max ${on.rss.max.toFixed(0)}), CPU ${on.cpu.toFixed(2)} %; scraped every 15 s ${read.cpu.toFixed(2)} %, ${read.rss.median.toFixed(0)} MB; bare Node probing the same ${floor.pods} pods ${floor.cpu.toFixed(2)} %, ${floor.rss.median.toFixed(0)} MB`,
    );
    return `### Agent footprint: ${pods} pods, each with an httpGet liveness and a tcpSocket readiness probe every 10 s

Sampled every second from /proc over ${seconds} s of steady state (after start-up and the first
probes): resident memory **${on.rss.median.toFixed(0)} MB** median, ${on.rss.max.toFixed(0)} MB at most
(target ≤ 80 MB); CPU **${on.cpu.toFixed(2)} %** of one core (target ≤ 1 %). Containers restarted
meanwhile: ${restarts} (every probe passed).

Resource usage is read only when something asks (one reading per scrape here). The same agent scraped every 15 s
as Prometheus scrapes a kubelet (\`/metrics/cadvisor\`, \`/metrics/resource\`, \`/metrics/probes\`
and \`/metrics\`) for ${offSeconds} s: each reading of the ${live} running containers (sandboxes
included, from cgroupfs) took ${collectMs.toFixed(1)} ms with ${calls.toFixed(0)} engine stats calls, ${collections} readings in all;
CPU ${read.cpu.toFixed(2)} %, ${read.rss.median.toFixed(0)} MB (targets ≤ 1 %, ≤ 80 MB). So being scraped costs about
${(read.cpu - on.cpu).toFixed(2)} % of a core and ${(read.rss.median - on.rss.median).toFixed(0)} MB.

The floor under that CPU, in the same run: a bare Node process (\`bench/probe-floor.ts\`) doing
nothing but the same probes of the same ${floor.pods} pods (an HTTP GET on a new connection and a TCP
connect per pod every 10 s) for ${offSeconds} s: **${floor.cpu.toFixed(2)} %** of a core, ${floor.rss.median.toFixed(0)} MB. The agent alone is
${(on.cpu / floor.cpu).toFixed(2)}× that floor, scraped ${(read.cpu / floor.cpu).toFixed(2)}×.`;
  } finally {
    await removeInstance(stateDir);
  }
}

export async function agentScenarios(root: string): Promise<string[]> {
  // BENCH_AGENT_PARTS=footprint,delete runs some of them (printed, with BENCH_ONLY=agent).
  const parts = process.env.BENCH_AGENT_PARTS?.split(',');
  const all: [string, (r: string) => Promise<string>][] = [
    ['reactions', reactions],
    ['delete', deleteMany],
    ['adoption', adoption],
    ['footprint', footprint],
  ];
  const out: string[] = [];
  for (const [name, fn] of all) if (!parts || parts.includes(name)) out.push(await fn(root));
  return out;
}
