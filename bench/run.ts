/**
 * `npm run bench`: every scenario in one run, each figure beside its reference measured in the
 * same run, written into docs/benchmarks.md between the bench markers.
 *
 *   npm run bench                      # everything (about 30 min)
 *   BENCH_QUICK=1 npm run bench        # fewer runs and pods, to try it out (not written to docs)
 *   BENCH_ONLY=cold,cli npm run bench  # some scenarios (printed, not written to docs)
 *   npm run bench -- startup           # the CLI start-up only (as BENCH_ONLY=cli), about 1 min
 *   BENCH_ACCEPT=1 npm run bench       # record start-up ratios even where they grew
 *   BENCH_ONLY=churn npm run bench     # deletion latency under churn alone
 *   BENCH_ONLY=logs npm run bench      # `podrun logs --tail 5` of a 100 MiB log, Docker and CRI
 *   BENCH_ONLY=scale npm run bench     # 300 pods in one file, cold (BENCH_SCALE_PODS, _RUNS, _NETWORK=host); named only
 *   BENCH_GARBAGE=10000 npm run bench  # the exited-container pile (default 2,000)
 *   BENCH_AGAINST=0ed47c2 npm run bench  # this build against that commit's, paired run by run
 *                                        # (bench/against.ts; BENCH_AGAINST_NEW=<rev> for the new side)
 *
 * The start-up guard: a CLI start-up ratio more than 10 % over the one recorded in
 * docs/benchmarks.md fails the run (exit 1), which then leaves the document as it is.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentScenarios } from './agent.js';
import { cliStartup, measuredStartup } from './cli.js';
import { recordedStartup, startupRegressions } from './startup-guard.js';
import { churnScenario } from './churn.js';
import { coldApply } from './cold-apply.js';
import { scaleApply } from './scale.js';
import { docker, log, must, onPath, QUICK, REPO, run, table } from './lib.js';
import { reapply } from './reapply.js';
import { signatureCost } from './signature.js';
import { pullCost } from './pull.js';
import { readingsCost } from './readings.js';
import { criScenarios } from './cri.js';
import { logsScenario } from './logs.js';
import { againstScenario } from './against.js';

const BEGIN = '<!-- bench:begin (written by npm run bench) -->';
const END = '<!-- bench:end -->';

async function versions(): Promise<string> {
  const v = await docker.version();
  const line = async (cmd: string, args: string[]): Promise<string> =>
    onPath(cmd) ? ((await run(cmd, args)).out.trim().split('\n')[0] ?? '') : 'not installed';
  return [
    `- Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}`,
    `- Docker Engine ${v.Version} (API ${v.ApiVersion}), storage on ${((await docker.info()) as { Driver: string }).Driver}`,
    `- docker-compose: ${await line('docker-compose', ['version', '--short'])}; podman: ${await line('podman', ['--version'])}`,
  ].join('\n');
}

async function garbage(): Promise<string> {
  const n = process.env.BENCH_GARBAGE ?? (QUICK ? '200' : '2000');
  const foreign = Number(process.env.BENCH_GARBAGE_FOREIGN ?? Math.floor(Number(n) / 2));
  const reactions = QUICK ? '3' : '7';
  const r = await must('node', [join(REPO, '.bench-build/bench/gc-reaction.js')], {
    env: { BENCH_GARBAGE: n, BENCH_GARBAGE_FOREIGN: String(foreign), BENCH_REACTIONS: reactions },
  });
  const line = r.out.split('\n').find((l) => l.startsWith('RESULT '));
  if (!line) throw new Error(`gc-reaction printed no result: ${r.err}`);
  const x = JSON.parse(line.slice(7)) as Record<string, number>;
  const f = (v: number | undefined): string => (v === undefined ? '—' : `${Math.round(v).toLocaleString('en-US')} ms`);
  const ours = x.podrunGarbageBefore ?? Number(n) - foreign;
  log(`garbage: own pile ${f(x.reactionMsOwnPile)} vs clean ${f(x.reactionMsCleanPhase1)}; gc ${x.gcSeconds?.toFixed(1) ?? '?'} s`);
  return `### Restart reaction and collection with ${Number(n).toLocaleString('en-US')} exited containers

Two private engines side by side: A holds ${Number(n).toLocaleString('en-US')} exited containers
(${ours.toLocaleString('en-US')} podrun's: dead pods of a URL source; ${foreign.toLocaleString('en-US')} foreign), B is clean; an agent on each
supervises one pod. While the URL answers 500, podrun's own dead pods are protected and stay
(phase 1); then it serves an empty PodList and podrun collects them (phase 2); the foreign ones
stay (phase 3).
Reaction is the engine's \`die\` → replacement \`start\`, interleaved A/B, median of ${reactions}.

${table(
  ['measure', 'engine A (pile)', 'engine B (clean)', 'A / B'],
  [
    [
      'engine list call, label-filtered, whole pile present',
      f(x.listMsWithAllGarbage),
      f(x.listMsClean),
      (x.listMsWithAllGarbage! / x.listMsClean!).toFixed(0),
    ],
    ['podrun full relist, whole pile present', f(x.relistMsWithAllGarbage), '—', ''],
    ['agent start (lock, first relist, sources)', f(x.agentStartMsGarbage), f(x.agentStartMsClean), ''],
    [
      `**restart reaction, podrun's own ${x.podrunPileDuringReactions?.toLocaleString('en-US') ?? '?'} dead containers present**`,
      f(x.reactionMsOwnPile),
      f(x.reactionMsCleanPhase1),
      `**${x.reactionRatioOwnPileToClean?.toFixed(2) ?? '—'}**`,
    ],
    [
      `collection of podrun's ${ours.toLocaleString('en-US')} dead containers`,
      `${x.gcSeconds?.toFixed(1) ?? '?'} s (${(ours / (x.gcSeconds ?? NaN)).toFixed(0)}/s)`,
      '—',
      '',
    ],
    ['foreign containers before → after', `${x.foreignBefore} → ${x.foreignAfter}`, '—', x.foreignBefore === x.foreignAfter ? 'untouched' : 'TOUCHED'],
    [
      `restart reaction, ${foreign.toLocaleString('en-US')} foreign exited present`,
      f(x.reactionMsGarbage),
      f(x.reactionMsClean),
      x.reactionRatioGarbageToClean?.toFixed(2) ?? '—',
    ],
    ['raw Docker API floor (kill, wait, create, start)', f(x.rawMsGarbage), f(x.rawMsClean), ''],
  ],
)}

Samples (ms), own pile: A ${String(x.reactionSamplesOwnPile)}; B ${String(x.reactionSamplesCleanPhase1)}. Making the pile took ${x.garbageCreationSeconds?.toFixed(0) ?? '?'} s.`;
}

const SCENARIOS: Record<string, (root: string) => Promise<string | string[]>> = {
  cold: coldApply,
  scale: scaleApply,
  reapply,
  agent: agentScenarios,
  cli: cliStartup,
  signature: signatureCost,
  pull: pullCost,
  readings: readingsCost,
  gc: garbage,
  churn: churnScenario,
  cri: criScenarios,
  logs: logsScenario,
  against: againstScenario,
};

const OPT_IN = new Set(['scale', 'against']);

async function main(): Promise<void> {
  // Scenarios named on the command line (npm run bench -- startup) or in BENCH_ONLY.
  const named = process.argv.slice(2).map((a) => (a === 'startup' ? 'cli' : a));
  // BENCH_AGAINST=<rev> alone compares two builds and runs nothing else; named scenarios replace it.
  const only = named.length
    ? named
    : (process.env.BENCH_ONLY?.split(',')
        .map((s) => s.trim())
        .filter(Boolean) ?? (process.env.BENCH_AGAINST ? ['against'] : undefined));
  // Named only: 300 bridge pods made and removed at once wedged this machine's Docker 20.10 (a
  // libnetwork lock cycle, docs/benchmarks.md "300 pods in one file"); not in a full run until it is safe.
  const names = only ?? Object.keys(SCENARIOS).filter((n) => !OPT_IN.has(n));
  for (const n of names) if (!SCENARIOS[n]) throw new Error(`unknown scenario "${n}" (known: ${Object.keys(SCENARIOS).join(', ')})`);
  const root = mkdtempSync(join(tmpdir(), 'podrun-bench-'));
  const sections: string[] = [];
  const t0 = Date.now();
  try {
    for (const n of names) {
      log(`scenario ${n}`);
      const out = await SCENARIOS[n]!(root);
      sections.push(...(Array.isArray(out) ? out : [out]));
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  const body = `${BEGIN}
## Results of \`npm run bench\` (${new Date().toISOString().slice(0, 10)}, ${Math.round((Date.now() - t0) / 60_000)} min)

${await versions()}

Medians, with min–max of the runs in brackets; every ratio is taken run by run against its
reference measured in the same run.

${sections.join('\n\n')}
${END}`;
  const path = join(REPO, 'docs', 'benchmarks.md');
  const doc = readFileSync(path, 'utf8');
  const grew = QUICK ? [] : startupRegressions(recordedStartup(doc), measuredStartup);
  for (const g of grew) log(`START-UP GREW: ${g}`);
  if (only || QUICK) {
    process.stdout.write(`${body}\n`);
    log('partial or quick run: printed, docs/benchmarks.md left as it is');
    if (grew.length) process.exitCode = 1;
    return;
  }
  if (grew.length && process.env.BENCH_ACCEPT !== '1') {
    process.stdout.write(`${body}\n`);
    log('start-up grew more than 10 % (above): docs/benchmarks.md left as it is; BENCH_ACCEPT=1 records it anyway');
    process.exitCode = 1;
    return;
  }
  const i = doc.indexOf(BEGIN);
  const j = doc.indexOf(END);
  const next = i >= 0 && j > i ? `${doc.slice(0, i)}${body}${doc.slice(j + END.length)}` : doc.replace(/\n## /, `\n${body}\n\n## `);
  writeFileSync(path, next);
  log(`written to ${path}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
