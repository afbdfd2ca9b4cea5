/**
 * 300 pods in one file, cold: `podrun apply --no-wait` of one file holding 300 one-container pods
 * (create and start, until every container runs) against the floor's engine calls for the same
 * containers at the same bound of 4 engine calls at once (`bench/floor.ts`); the default `podrun
 * apply` of the same file (its Ready wait and 1 s hold) beside it. What grows with the pod count
 * in podrun (plan, status, wait) shows here and nowhere else.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  forgetManifests,
  log,
  ms,
  pairwise,
  podrun,
  PAUSE_IMAGE,
  BIN,
  podYaml,
  QUICK,
  ratio,
  runCpu,
  removeInstance,
  removeLabelled,
  REPO,
  stat,
  table,
} from './lib.js';

const PODS = Number(process.env.BENCH_SCALE_PODS ?? (QUICK ? 50 : 300));
const RUNS = Number(process.env.BENCH_SCALE_RUNS ?? (QUICK ? 1 : 3));
// bridge (the default network, as a pod without hostNetwork gets) or host: BENCH_SCALE_NETWORK.
const HOST = process.env.BENCH_SCALE_NETWORK === 'host';

export async function scaleApply(root: string): Promise<string> {
  const tag = `s${process.pid}`;
  const file = join(root, `scale-${tag}.yaml`);
  const pods = Array.from({ length: PODS }, (_, i) => podYaml(`scale-${tag}-${i}`, 'bench-scale', { containers: 1, hostNetwork: HOST }));
  writeFileSync(file, pods.join('---\n'));
  const stateDir = join(root, `scale-${tag}-state`);
  mkdirSync(stateDir);
  const cli = podrun(stateDir);
  const label = `podrun-bench.floor=${tag}`;
  const t = {
    nowait: [] as number[],
    nowaitCpu: [] as number[],
    applied: [] as number[],
    floor: [] as number[],
    floorCpu: [] as number[],
    engine: [] as number[],
  };
  const clean = async (): Promise<void> => {
    await cli(['delete', '-f', file, '--grace-period', '0']);
    await removeInstance(stateDir);
  };
  try {
    for (let r = 0; r < RUNS; r++) {
      const args = ['--state-dir', stateDir, '--pause-image', PAUSE_IMAGE, '--node-ip', '127.0.0.1', 'apply'];
      forgetManifests(stateDir);
      const started = await runCpu(BIN, [...args, '--no-wait', '-f', file]);
      if (started.code !== 0) throw new Error(`podrun apply --no-wait failed: ${started.err}`);
      t.nowait.push(started.ms);
      t.nowaitCpu.push(started.cpuMs);
      await clean();
      forgetManifests(stateDir);
      const applied = await cli(['apply', '-f', file]);
      if (applied.code !== 0) throw new Error(`podrun apply failed: ${applied.err}`);
      t.applied.push(applied.ms);
      await clean();
      const floor = await runCpu('node', [join(REPO, '.bench-build/bench/floor.js'), String(PODS), '1', HOST ? 'host' : 'bridge', label]);
      if (floor.code !== 0) throw new Error(`the floor failed: ${floor.err}`);
      t.floor.push(floor.ms);
      t.floorCpu.push(floor.cpuMs);
      t.engine.push(Number(floor.out.trim()));
      await removeLabelled(label);
      log(
        `scale ${PODS} pods run ${r + 1}: --no-wait ${Math.round(started.ms)} ms (CPU ${Math.round(started.cpuMs)} ms), apply ${Math.round(applied.ms)} ms, floor engine ${Math.round(t.engine[r]!)} ms (process ${Math.round(floor.ms)} ms, CPU ${Math.round(floor.cpuMs)} ms)`,
      );
    }
  } finally {
    await clean();
    await removeLabelled(label);
  }
  const vsEngine = pairwise(t.nowait, t.engine);
  log(`scale ${PODS} pods: --no-wait / floor engine ${ratio(vsEngine)}, apply / floor engine ${ratio(pairwise(t.applied, t.engine))}`);
  return `### ${PODS} pods in one file, cold (${HOST ? 'host network' : 'bridge'})

One file of ${PODS} one-container pods that do not exist yet. \`podrun apply --no-wait -f FILE\`
(a whole process: start, parse, plan, create and start every container) against the floor's
engine calls alone (\`bench/floor.ts\`: the same sandboxes and containers, the same bound of 4
engine calls at once, timed from its first call to its last start); the floor's whole process and
the default \`podrun apply\` (until every pod has held Ready 1 s) beside it. CPU is user+sys of the
whole process. ${RUNS} runs, alternated, ratios run by run (target ≤ 1.05).

${table(
  [
    'podrun --no-wait',
    'its CPU',
    'floor engine',
    'floor process',
    'its CPU',
    '**--no-wait / floor engine**',
    'podrun apply (Ready, held 1 s)',
    'apply / floor engine',
  ],
  [
    [
      ms(stat(t.nowait)),
      ms(stat(t.nowaitCpu)),
      ms(stat(t.engine)),
      ms(stat(t.floor)),
      ms(stat(t.floorCpu)),
      `**${ratio(vsEngine)}**`,
      ms(stat(t.applied)),
      ratio(pairwise(t.applied, t.engine)),
    ],
  ],
)}`;
}
