/**
 * What one reading of every container costs: from cgroupfs (as cAdvisor reads, and the agent now
 * does) against the engine's stats API (one call per container), alternated round by round, over
 * 50 pods (100 containers with their sandboxes). CPU time is podrun's own and the whole
 * machine's (the engine's work for a stats call is in dockerd, containerd and the shims).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { mapLimit } from '../src/reconcile/converge.js';
import { DockerEngine } from '../src/runtime/docker/docker-engine.js';
import { log, PAUSE_IMAGE, podrun, QUICK, removeInstance, stat, table, writePods } from './lib.js';

const PODS = Number(process.env.BENCH_READINGS_PODS ?? (QUICK ? 10 : 50));
const ROUNDS = Number(process.env.BENCH_READINGS_ROUNDS ?? (QUICK ? 5 : 15));

/** Busy time of the whole machine, in ms (USER_HZ ticks of /proc/stat's first line). */
function machineBusyMs(): number {
  const f = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  return ((f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0)) * 10;
}

/**
 * CPU time of the engine's own processes (dockerd, containerd, the shims; Podman's), in ms: on a
 * machine shared with other work the whole machine's busy time is mostly theirs, while a stats
 * call's cost is in these processes (other users of the same engine still add to it).
 */
function engineBusyMs(): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (!/^(dockerd|containerd|containerd-shim.*|podman|conmon)$/.test(comm)) continue;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // gone while listed
    }
  }
  return ticks * 10;
}

async function round(
  rt: DockerEngine,
  targets: { id: string; sandbox: boolean }[],
): Promise<{ ownMs: number; machineMs: number; engineMs: number; wallMs: number; fromCgroup: number }> {
  const e0 = engineBusyMs();
  const c0 = process.cpuUsage();
  const m0 = machineBusyMs();
  const t0 = performance.now();
  const read = await mapLimit(targets, 64, (t) => rt.containerStats(t.id, true, t.sandbox));
  const wallMs = performance.now() - t0;
  const c = process.cpuUsage(c0);
  const machineMs = machineBusyMs() - m0;
  return { ownMs: (c.user + c.system) / 1000, machineMs, engineMs: engineBusyMs() - e0, wallMs, fromCgroup: read.filter((s) => s?.source === 'cgroup').length };
}

export async function readingsCost(root: string): Promise<string> {
  const dir = join(root, 'readings');
  const stateDir = join(root, 'readings-state');
  writePods(dir, 'rd', 'bench-readings', PODS, { containers: 1, hostNetwork: false, probes: false });
  await podrun(stateDir)(['apply', '-f', dir, '--timeout', '5m']).then((r) => {
    if (r.code !== 0) throw new Error(`apply: ${r.err}`);
  });
  try {
    const local = new DockerEngine({ stateDir, pauseImage: PAUSE_IMAGE });
    const engine = new DockerEngine({ stateDir, pauseImage: PAUSE_IMAGE, cgroupReadings: false });
    const targets = (await local.listPods()).flatMap((p) => [
      ...p.sandboxes.map((s) => ({ id: s.id, sandbox: true })),
      ...p.containers.map((c) => ({ id: c.id, sandbox: false })),
    ]);
    // The first local round asks the engine each sandbox's pid once (kept while it lives).
    await round(local, targets);
    await round(engine, targets);
    const a: Awaited<ReturnType<typeof round>>[] = [];
    const b: Awaited<ReturnType<typeof round>>[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      a.push(await round(local, targets));
      b.push(await round(engine, targets));
    }
    if (a.some((r) => r.fromCgroup !== targets.length)) throw new Error(`not every local reading came from cgroupfs: ${a.map((r) => r.fromCgroup).join(',')}`);
    const sum = (xs: number[]): number => xs.reduce((x, y) => x + y, 0);
    const own = [sum(a.map((r) => r.ownMs)) / ROUNDS, sum(b.map((r) => r.ownMs)) / ROUNDS];
    const machine = [sum(a.map((r) => r.machineMs)) / ROUNDS, sum(b.map((r) => r.machineMs)) / ROUNDS];
    // podrun's own CPU plus the engine daemons': what a reading costs, less the rest of a shared machine.
    const both = [sum(a.map((r) => r.ownMs + r.engineMs)) / ROUNDS, sum(b.map((r) => r.ownMs + r.engineMs)) / ROUNDS];
    const wall = [stat(a.map((r) => r.wallMs)).median, stat(b.map((r) => r.wallMs)).median];
    const f = (x: number): string => `${x.toFixed(1)} ms`;
    log(
      `readings of ${targets.length}: cgroupfs ${f(machine[0]!)} machine CPU (${f(own[0]!)} podrun, ${f(both[0]!)} with the engine's daemons), engine ${f(machine[1]!)} (${f(own[1]!)}, ${f(both[1]!)}); ratio ${(machine[1]! / machine[0]!).toFixed(0)}, podrun + engine daemons ${(both[1]! / both[0]!).toFixed(0)}`,
    );
    return `### One reading of ${targets.length} containers: cgroupfs against the engine's stats API

${PODS} pods made by \`podrun apply\` (${targets.length} containers with their sandboxes); one reading of every one
of them, ${ROUNDS} rounds each way, alternated; CPU time averaged over the rounds (the machine's
from /proc/stat in 10 ms ticks, so it is summed over all rounds before dividing).

${table(
  ['per reading of all', 'cgroupfs (podrun now)', 'engine stats API (before)', 'engine / cgroupfs'],
  [
    ['CPU time, whole machine', f(machine[0]!), f(machine[1]!), `**${(machine[1]! / Math.max(machine[0]!, 0.1)).toFixed(0)}×**`],
    ["CPU time, podrun and the engine's daemons", f(both[0]!), f(both[1]!), `${(both[1]! / Math.max(both[0]!, 0.1)).toFixed(0)}×`],
    ['CPU time, podrun itself', f(own[0]!), f(own[1]!), `${(own[1]! / own[0]!).toFixed(1)}×`],
    ['wall time (median)', f(wall[0]!), f(wall[1]!), `${(wall[1]! / wall[0]!).toFixed(0)}×`],
  ],
)}

Target: at least 20× less CPU time from cgroupfs.`;
  } finally {
    await removeInstance(stateDir);
  }
}
