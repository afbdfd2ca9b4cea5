/**
 * Cold apply: N pods that do not exist yet, until every container runs. podrun (`podrun apply`,
 * which waits for the pods to run) against the raw dockerode floor for the same containers, and
 * against `podman kube play` on the same YAML and `docker-compose up -d` on an equivalent compose
 * file where those are installed. Every figure is a whole process, as a user waits for it.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  log,
  must,
  onPath,
  pairwise,
  podrun,
  forgetManifests,
  QUICK,
  ratio,
  ms,
  removeInstance,
  removeLabelled,
  REPO,
  run,
  stat,
  table,
  TEST_IMAGE,
  PAUSE_IMAGE,
  writePods,
  type PodShape,
  type Ran,
  type Stat,
} from './lib.js';

interface Config {
  pods: number;
  shape: PodShape;
  runs: number;
}

interface Row {
  config: Config;
  /** `podrun apply --no-wait`: create and start, as the floor and `docker compose up -d`. */
  podrun: Stat;
  /** `podrun apply` (its Ready wait and 1 s hold included), and its time beyond the strict floor, run by run. */
  applied: Stat;
  beyond: Stat;
  floor: Stat;
  floorEngine: Stat;
  vsFloor: Stat;
  /** Against the least any Node tool could take: start Node, then the floor's engine calls. */
  vsStrict: Stat;
  compose?: Stat;
  podman?: Stat;
  vsCompose?: Stat;
  vsPodman?: Stat;
}

function composeFile(pods: number, s: PodShape, prefix: string): string {
  const lines = ['version: "2.4"', 'services:'];
  for (let i = 0; i < pods; i++) {
    for (let c = 0; c < s.containers; c++) {
      const first = `${prefix}-${i}-c0`;
      lines.push(
        `  ${prefix}-${i}-c${c}:`,
        `    image: ${TEST_IMAGE}`,
        `    command: [sh, -c, "exec sleep 3600"]`,
        `    stop_grace_period: 1s`,
        c === 0 ? `    network_mode: ${s.hostNetwork ? 'host' : 'bridge'}` : `    network_mode: "service:${first}"`,
        c === 0 ? '    ipc: shareable' : `    ipc: "service:${first}"`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

/** podman 4.3 from Debian, on its own storage: the test images loaded, a local infra image, the ulimits its runtime needs here. */
export function podmanEnv(root: string): Record<string, string> | string {
  if (!onPath('podman')) return 'not installed (apt-get install podman catatonit)';
  const conf = join(root, 'containers.conf');
  writeFileSync(conf, `[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n[engine]\ninfra_image = "localhost/${PAUSE_IMAGE}"\n`);
  return { CONTAINERS_CONF: conf };
}

export async function preparePodman(env: Record<string, string>): Promise<string | undefined> {
  const has = await run('podman', ['image', 'exists', `localhost/${TEST_IMAGE}`], { env });
  if (has.code !== 0) {
    const r = await run('sh', ['-c', `docker save ${TEST_IMAGE} ${PAUSE_IMAGE} | podman load`], { env });
    if (r.code !== 0) return `cannot load the test images: ${r.err.trim().split('\n').pop() ?? ''}`;
  }
  const info = await run('podman', ['info', '--format', '{{.Host.OCIRuntime.Name}}'], { env });
  return info.code === 0 ? undefined : `podman info failed: ${info.err.trim().split('\n').pop() ?? ''}`;
}

/**
 * One cold `podrun apply --no-wait` of `dir` through `cli` (the pods new to it: its manifest
 * cache forgotten), then the pods deleted and whatever of its instance is left removed.
 */
export async function coldNoWait<R extends Ran>(cli: (args: string[]) => Promise<R>, dir: string, stateDir: string): Promise<R> {
  forgetManifests(stateDir);
  const started = await cli(['apply', '--no-wait', dir]);
  if (started.code !== 0) throw new Error(`podrun apply --no-wait failed: ${started.err}`);
  await cli(['delete', '-f', dir, '--grace-period', '0']);
  await removeInstance(stateDir);
  return started;
}

export async function coldApply(root: string): Promise<string> {
  const configs: Config[] = [];
  // BENCH_COLD_PODS=1,10 and BENCH_COLD_CONTAINERS=1 for some shapes only; BENCH_COLD_RUNS=N runs each; BENCH_COLD_PEERS=0 without compose and podman.
  // BENCH_COLD_NETWORK=bridge or host for one network only.
  const networks = (process.env.BENCH_COLD_NETWORK?.split(',') ?? ['bridge', 'host']).map((n) => n === 'host');
  const sizes = process.env.BENCH_COLD_PODS?.split(',').map(Number) ?? (QUICK ? [1, 10] : [1, 10, 50]);
  for (const pods of sizes) {
    for (const containers of process.env.BENCH_COLD_CONTAINERS?.split(',').map(Number) ?? [1, 2]) {
      for (const hostNetwork of networks)
        configs.push({
          pods,
          shape: { containers, hostNetwork },
          runs: Number(process.env.BENCH_COLD_RUNS ?? 0) || (QUICK ? 1 : pods === 1 ? 7 : pods === 10 ? 5 : 3),
        });
    }
  }
  const composeOk = onPath('docker-compose');
  const pmEnv = podmanEnv(root);
  let podmanWhyNot = typeof pmEnv === 'string' ? pmEnv : await preparePodman(pmEnv);
  const rows: Row[] = [];
  let k = 0;
  for (const config of configs) {
    const tag = `c${k++}`;
    const dir = join(root, `cold-${tag}`);
    const ns = 'bench-cold';
    writePods(dir, `cold-${tag}`, ns, config.pods, config.shape);
    const all = join(root, `cold-${tag}.yaml`);
    writeFileSync(
      all,
      readdirSync(dir)
        .map((f) => readFileSync(join(dir, f), 'utf8'))
        .join('---\n'),
    );
    const compose = join(root, `cold-${tag}.compose.yml`);
    writeFileSync(compose, composeFile(config.pods, config.shape, `cold-${tag}`));
    const stateDir = join(root, `cold-${tag}-state`);
    mkdirSync(stateDir);
    const cli = podrun(stateDir);
    const t = {
      podrun: [] as number[],
      applied: [] as number[],
      floor: [] as number[],
      floorEngine: [] as number[],
      strict: [] as number[],
      compose: [] as number[],
      podman: [] as number[],
    };
    const label = `podrun-bench.floor=${tag}`;
    const withPeers = process.env.BENCH_COLD_PEERS !== '0' && (!config.shape.hostNetwork || config.pods === 1);
    for (let r = 0; r < config.runs; r++) {
      // Interleaved, so drift in the machine's load hits every contender alike. Like with like
      // for the ratios: create and start (--no-wait), as the floor and `docker-compose up -d`;
      // then the default apply, which waits until each pod held Ready 1 s (issue 29).
      t.podrun.push((await coldNoWait(cli, dir, stateDir)).ms);
      forgetManifests(stateDir);
      const applied = await cli(['apply', dir]);
      if (applied.code !== 0) throw new Error(`podrun apply failed: ${applied.err}`);
      t.applied.push(applied.ms);
      await cli(['delete', '-f', dir, '--grace-period', '0']);
      await removeInstance(stateDir);

      const floor = await must('node', [
        join(REPO, '.bench-build/bench/floor.js'),
        String(config.pods),
        String(config.shape.containers),
        config.shape.hostNetwork ? 'host' : 'bridge',
        label,
      ]);
      t.floor.push(floor.ms);
      t.floorEngine.push(Number(floor.out.trim()));
      t.strict.push(Number(floor.out.trim()) + (await must('node', ['-e', '0'])).ms);
      await removeLabelled(label);

      if (composeOk && withPeers) {
        const up = await must('docker-compose', ['-p', `podrunbench${tag}`, '-f', compose, 'up', '-d']);
        t.compose.push(up.ms);
        await run('docker-compose', ['-p', `podrunbench${tag}`, '-f', compose, 'down', '-t', '0']);
      }
      if (typeof pmEnv !== 'string' && !podmanWhyNot && withPeers) {
        const play = await run('podman', ['kube', 'play', all], { env: pmEnv });
        if (play.code !== 0) {
          podmanWhyNot = `kube play failed: ${play.err.trim().split('\n').pop() ?? ''}`;
        } else {
          t.podman.push(play.ms);
        }
        await run('podman', ['kube', 'down', all], { env: pmEnv });
      }
    }
    const row: Row = {
      config,
      podrun: stat(t.podrun),
      applied: stat(t.applied),
      beyond: stat(t.applied.map((x, i) => x - t.strict[i]!)),
      floor: stat(t.floor),
      floorEngine: stat(t.floorEngine),
      vsFloor: pairwise(t.podrun, t.floor),
      vsStrict: pairwise(t.podrun, t.strict),
    };
    if (t.compose.length) {
      row.compose = stat(t.compose);
      row.vsCompose = pairwise(t.podrun, t.compose);
    }
    if (t.podman.length === t.podrun.length) {
      row.podman = stat(t.podman);
      row.vsPodman = pairwise(t.podrun, t.podman);
    }
    rows.push(row);
    log(
      `cold apply ${config.pods}×${config.shape.containers} ${config.shape.hostNetwork ? 'host' : 'bridge'}: podrun ${ms(row.podrun)}, floor ${ms(row.floor)}, ratio ${ratio(row.vsFloor)}, strict ${ratio(row.vsStrict)}; apply ${ms(row.applied)}, beyond the strict floor ${ms(row.beyond)}`,
    );
  }
  const composeNote = composeOk ? '' : '\n\n`docker-compose`: not installed (apt-get install docker-compose).';
  const podmanNote = podmanWhyNot ? `\n\n\`podman kube play\`: ${podmanWhyNot}.` : '';
  return `### Cold apply (podrun apply --no-wait against the floor; the default apply beside it)

Each run: the pods do not exist. Like with like: \`podrun apply --no-wait\` creates and starts
the containers and returns, as the floor and \`docker-compose up -d\` do; the ratios are read
against it. The default \`podrun apply\` then waits until each pod is Ready and has held Ready 1 s
(issue 29), which no peer does: it is in its own columns, as its time beyond the strict floor,
run by run. podrun and the
floor run on the shared engine with the same bound of 4 engine calls at once; \`docker-compose\`
runs the same containers (the first of each pod on the bridge or host network, the others in its
network and IPC namespaces); \`podman kube play\` runs the same YAML on podman's own storage.
Peers run for the bridge configurations and single pods. The floor is a Node process that loads
dockerode and makes the calls; "floor engine" is its engine calls alone, and the strict floor adds
to them \`node -e 0\` measured in the same run: the least any Node tool could take. The strict ratio
is the one the target (≤ 1.10) is read against.

${table(
  [
    'pods × containers',
    'network',
    'podrun --no-wait',
    'raw dockerode floor',
    'floor engine',
    'podrun / floor',
    'podrun / strict floor',
    'docker-compose',
    'podrun / compose',
    'podman kube play',
    'podrun / podman',
    'podrun apply (Ready, held 1 s)',
    'apply beyond the strict floor',
  ],
  rows.map((r) => [
    `${r.config.pods} × ${r.config.shape.containers}`,
    r.config.shape.hostNetwork ? 'host' : 'bridge',
    ms(r.podrun),
    ms(r.floor),
    ms(r.floorEngine),
    ratio(r.vsFloor),
    `**${ratio(r.vsStrict)}**`,
    ms(r.compose),
    ratio(r.vsCompose),
    ms(r.podman),
    ratio(r.vsPodman),
    ms(r.applied),
    ms(r.beyond),
  ]),
)}${composeNote}${podmanNote}`;
}
