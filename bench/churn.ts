/**
 * Deletion latency under churn (issue 28): an agent watches a directory in which 200 small pods are
 * created, rewritten five times and removed over about 20 s, beside 3 stable pods. Measured from
 * each file's removal to the agent's "deleted" line for its pod; also whether anything was made for
 * a pod after its file went, and when the engine held only the stable pods again. Issue 28's bound,
 * every deletion within 5 s of its file's removal, is read here ("over 5 s"): the engine test
 * (agent-churn.test.ts) runs the same churn and asserts what no machine's speed changes.
 *
 *   BENCH_ONLY=churn npm run bench      # this scenario alone (printed)
 *   BENCH_CHURN_FILES=50                # fewer files
 *   BENCH_NODE_FLAGS=--cpu-prof         # node flags for the agent (a profile of its churn)
 *   BENCH_AGENT_ARGS='--v 4'            # more agent flags (its log is left in $TMPDIR/podrun-churn-agent.log,
 *                                       # each file's removal time in $TMPDIR/podrun-churn-removed.json)
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { instanceId, LABEL } from '../src/runtime/labels.js';
import { churnDirectory, churnPod, churnReport, spread } from '../test/integration/churn-helpers.js';
import { BIN, docker, followEvents, log, PAUSE_IMAGE, procUsage, QUICK, removeInstance, table, until } from './lib.js';

export interface ChurnFigures {
  files: number;
  reached: number;
  created: number;
  deletionMedianMs: number;
  deletionP95Ms: number;
  deletionMaxMs: number;
  startMedianMs: number;
  startMaxMs: number;
  over5s: number;
  notDeleted: number;
  lateMade: number;
  startErrors: number;
  convergedMs: number;
  stableUntouched: boolean;
  agentCpuSeconds: number;
}

async function stableState(ns: string, names: string[]): Promise<string> {
  const list = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${LABEL.podNamespace}=${ns}`] }) });
  return list
    .filter((c) => names.includes(c.Labels[LABEL.podName] ?? ''))
    .map((c) => `${c.Id} ${c.State} ${c.Labels[LABEL.restartCount]}`)
    .sort()
    .join('\n');
}

/** One churn run against a fresh agent; its log is kept in the temp directory for a look afterwards. */
export async function churnRun(root: string, files: number): Promise<ChurnFigures> {
  const stateDir = join(root, `churn-state-${Date.now()}`);
  const dir = join(root, `churn-dir-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  const ns = `bench-churn-${instanceId(stateDir).slice(0, 6)}`;
  const stable = ['stable-0', 'stable-1', 'stable-2'];
  for (const name of stable) writeFileSync(join(dir, `${name}.yaml`), churnPod(ns, name, 0));
  const flags = process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
  const proc = spawn(
    process.execPath,
    [
      ...flags,
      BIN,
      '--state-dir',
      stateDir,
      '--pause-image',
      PAUSE_IMAGE,
      '--node-ip',
      '127.0.0.1',
      'run',
      '--log-format',
      'text',
      '--manifest-dir',
      dir,
      '--gc-period',
      '5s',
      ...(process.env.BENCH_AGENT_ARGS?.split(' ').filter(Boolean) ?? []),
    ],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise((r) => proc.on('exit', r));
  try {
    await until(
      'the stable pods',
      async () => ((await stableState(ns, stable)).split('\n').filter((l) => l.includes(' running ')).length === 6 ? true : undefined),
      120_000,
    );
    const before = await stableState(ns, stable);
    const cpu0 = procUsage(proc.pid!).cpuSeconds;
    const ev = await followEvents([`${LABEL.podNamespace}=${ns}`]);
    const names = Array.from({ length: files }, (_, i) => `churn-${i}`);
    const removed = await churnDirectory(dir, ns, names, { spreadMs: 11_000, gapMs: 1_500, writes: 6 });
    const last = Math.max(...removed.values());
    await until(
      'only the stable pods',
      async () => {
        const list = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${LABEL.podNamespace}=${ns}`] }) });
        return list.every((c) => stable.includes(c.Labels[LABEL.podName] ?? '')) ? true : undefined;
      },
      300_000,
    );
    const convergedMs = Date.now() - last;
    const agentCpuSeconds = procUsage(proc.pid!).cpuSeconds - cpu0;
    ev.stop();
    writeFileSync(join(tmpdir(), 'podrun-churn-agent.log'), out);
    // When each file went (ms since the epoch, by pod): with the log, where each deletion's time went.
    writeFileSync(join(tmpdir(), 'podrun-churn-removed.json'), JSON.stringify(Object.fromEntries(removed)));
    const r = churnReport(out, ev.events, ns, removed, 1000 + 2500);
    const times = [...r.deletionMs.values()];
    const { median, p95, max } = spread(times);
    const began = spread([...r.startMs.values()]);
    return {
      files,
      reached: r.reached,
      created: ev.events.filter((e) => e.action === 'create' && !stable.includes(e.attributes[LABEL.podName] ?? '')).length,
      deletionMedianMs: median,
      deletionP95Ms: p95,
      deletionMaxMs: max,
      startMedianMs: began.median,
      startMaxMs: began.max,
      over5s: times.filter((t) => t > 5000).length,
      notDeleted: r.notDeleted.length,
      lateMade: r.lateMade.length,
      startErrors: r.startErrors.length,
      convergedMs,
      stableUntouched: (await stableState(ns, stable)) === before,
      agentCpuSeconds,
    };
  } finally {
    if (proc.exitCode === null) proc.kill('SIGTERM');
    await exited;
    await removeInstance(stateDir);
  }
}

export async function churnScenario(root: string): Promise<string> {
  const files = Number(process.env.BENCH_CHURN_FILES ?? (QUICK ? 50 : 200));
  const runs = QUICK ? 1 : 2;
  const results: ChurnFigures[] = [];
  for (let i = 0; i < runs; i++) {
    const f = await churnRun(root, files);
    log(
      `churn: deletion median ${f.deletionMedianMs} ms, p95 ${f.deletionP95Ms} ms, max ${f.deletionMaxMs} ms; converged ${f.convergedMs} ms after the last removal`,
    );
    results.push(f);
  }
  const ms = (v: number): string => `${Math.round(v).toLocaleString('en-US')} ms`;
  return `### Deletion latency under churn

${files} pod files (busybox, one container) created, rewritten 5 times and removed, each write
1.5 s after the last, the files started over 11 s (about 20 s in all), beside 3 stable pods, in a
directory \`podrun run\` watches (\`--gc-period 5s\`). Deletion: from a file's removal to the
agent's \`deleted\` line for its pod (the directory waits 1 s for editors' rename dance first),
over the pods that reached the engine; begun: to its \`no longer declared; deleting\` line.
Issue 28's bound is every deletion within 5 s ("over 5 s" counts those past it); the engine test
runs the same churn but asserts no time. One row per run.

${table(
  [
    'run',
    'pods on the engine (containers made)',
    'deletion median',
    'deletion p95',
    'deletion max',
    'deletion begun (median / max)',
    'over 5 s',
    'made after removal',
    'start errors',
    'only the stable pods left',
    'stable pods untouched',
    'agent CPU',
  ],
  results.map((f, i) => [
    String(i + 1),
    `${f.reached} (${f.created})`,
    ms(f.deletionMedianMs),
    ms(f.deletionP95Ms),
    ms(f.deletionMaxMs),
    `${ms(f.startMedianMs)} / ${ms(f.startMaxMs)}`,
    String(f.over5s),
    String(f.lateMade),
    String(f.startErrors),
    `${ms(f.convergedMs)} after the last removal`,
    f.stableUntouched ? 'yes' : 'NO',
    `${f.agentCpuSeconds.toFixed(1)} s`,
  ]),
)}`;
}
