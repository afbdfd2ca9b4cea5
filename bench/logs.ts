/**
 * `podrun logs` of a big container log (issue 44): a container writes 100 MiB of lines, then
 * `podrun logs --tail 5` and a full `podrun logs` (to /dev/null) are timed, with the process's peak
 * RSS (GNU time's %M), on Docker (json-file, rotation raised past the log's size) and on a private
 * containerd 1.6 (the CRI log file podrun reads itself). Targets for --tail 5: ≤ 64 MB, ≤ 0.3 s.
 *
 *   BENCH_ONLY=logs npm run bench      # this scenario alone (printed)
 *   BENCH_LOGS_MIB=20                  # a smaller log
 */
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { instanceId, LABEL } from '../src/runtime/labels.js';
import { PrivateContainerd } from '../test/integration/cri-engine.js';
import { criArgv, CRI_ENV } from './cri.js';
import { BIN, docker, log, must, PAUSE_IMAGE, podYaml, QUICK, removeInstance, run, stat, table, until, type Stat } from './lib.js';

const MIB = Number(process.env.BENCH_LOGS_MIB ?? (QUICK ? 20 : 100));
const LINE = 'podrun bench log line: the quick brown fox jumps over the lazy dog 0123456789 abcdefghij';
const END = 'END-OF-BENCH-LOG';

interface Timed {
  ms: number;
  rssMB: number;
}

/** One podrun command under GNU time: wall time and peak RSS, its output dropped. */
async function timed(argv: string[], env: Record<string, string>): Promise<Timed> {
  const r = await must('/usr/bin/time', ['-f', 'TIME %e %M', 'sh', '-c', '"$@" > /dev/null', 'sh', BIN, ...argv], { env });
  const m = /TIME ([\d.]+) (\d+)\s*$/.exec(r.err.trim());
  if (!m) throw new Error(`no figures from time: ${r.err}`);
  return { ms: Number(m[1]) * 1000, rssMB: Number(m[2]) / 1024 };
}

interface Row {
  engine: string;
  fileMB: number | undefined;
  tail: { ms: Stat; rss: Stat };
  full: { ms: Stat; rss: Stat };
}

async function measure(
  engine: string,
  argv: (args: string[]) => string[],
  env: Record<string, string>,
  root: string,
  logFile: () => Promise<string | undefined>,
): Promise<Row> {
  const ns = 'benchlogs';
  const name = 'chatty';
  const dir = join(root, `logs-${engine}`);
  mkdirSync(dir, { recursive: true });
  const command = `yes '${LINE}' | head -c ${MIB * 1024 * 1024}; echo ${END}; exec sleep 3600`;
  writeFileSync(join(dir, 'pod.yaml'), podYaml(name, ns, { containers: 1, hostNetwork: true, command }));
  const cli = (args: string[]): ReturnType<typeof run> => run(BIN, argv(args), { env });
  try {
    await must(BIN, argv(['--container-log-max-size', '2Gi', 'apply', '--no-wait', '-f', dir]), { env });
    await until(`${engine}: the log written`, async () => ((await cli(['logs', name, '-n', ns, '--tail', '1'])).out.includes(END) ? true : undefined), 600_000);
    const path = await logFile();
    const fileMB = path ? statSync(path).size / 2 ** 20 : undefined;
    const tails: Timed[] = [];
    const fulls: Timed[] = [];
    for (let i = 0; i < (QUICK ? 2 : 7); i++) tails.push(await timed(argv(['logs', name, '-n', ns, '--tail', '5']), env));
    for (let i = 0; i < (QUICK ? 1 : 3); i++) fulls.push(await timed(argv(['logs', name, '-n', ns]), env));
    const row = {
      engine,
      fileMB,
      tail: { ms: stat(tails.map((t) => t.ms)), rss: stat(tails.map((t) => t.rssMB)) },
      full: { ms: stat(fulls.map((t) => t.ms)), rss: stat(fulls.map((t) => t.rssMB)) },
    };
    log(
      `logs ${engine}: --tail 5 ${row.tail.ms.median.toFixed(0)} ms ${row.tail.rss.max.toFixed(0)} MB; full ${row.full.ms.median.toFixed(0)} ms ${row.full.rss.max.toFixed(0)} MB`,
    );
    return row;
  } finally {
    await cli(['delete', '-f', dir, '--grace-period', '0']);
  }
}

export async function logsScenario(root: string): Promise<string> {
  const rows: Row[] = [];
  const dockerState = join(root, 'logs-docker-state');
  try {
    const argv = (a: string[]): string[] => ['--state-dir', dockerState, '--pause-image', PAUSE_IMAGE, '--node-ip', '127.0.0.1', ...a];
    // The json-file the engine writes (the instance's one app container).
    const file = async (): Promise<string | undefined> => {
      const [c] = await docker.listContainers({
        all: true,
        filters: JSON.stringify({ label: [`${LABEL.instance}=${instanceId(dockerState)}`, `${LABEL.containerType}=app`] }),
      });
      return c ? ((await docker.getContainer(c.Id).inspect()) as { LogPath?: string }).LogPath : undefined;
    };
    rows.push(await measure('Docker', argv, {}, root, file));
  } finally {
    await removeInstance(dockerState);
  }
  const ctrd = new PrivateContainerd();
  await ctrd.start();
  ctrd.importTestImages();
  try {
    const logs = join(root, 'logs-cri-pod-logs');
    const argv = criArgv(ctrd, join(root, 'logs-cri-state'), logs);
    const file = async (): Promise<string | undefined> => {
      const pod = readdirSync(logs).find((d) => d.startsWith('benchlogs_chatty_'));
      return pod ? join(logs, pod, 'c0', '0.log') : undefined;
    };
    rows.push(await measure('containerd 1.6 (CRI)', argv, CRI_ENV, root, file));
  } finally {
    await ctrd.destroy();
  }
  const f = (s: Stat, unit: string, digits = 0): string => `${s.median.toFixed(digits)} ${unit} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
  return `### \`podrun logs\` of a ${MIB} MiB log (issue 44)

A container writes ${MIB} MiB of ${LINE.length + 1}-byte lines; then \`podrun logs --tail 5\` (${QUICK ? 2 : 7} runs) and a
full \`podrun logs\` to /dev/null (${QUICK ? 1 : 3} runs), each a whole process under GNU time: wall time and
peak resident memory. Docker's json-file with rotation raised past the log's size; on CRI the
file the runtime writes, read by podrun (from its end for \`--tail\`, in chunks for the rest).
Targets for \`--tail 5\`: ≤ 64 MB, ≤ 0.3 s.

${table(
  ['engine', 'log file', '--tail 5: time', '--tail 5: peak RSS', 'full: time', 'full: peak RSS'],
  rows.map((r) => [
    r.engine,
    r.fileMB === undefined ? '—' : `${r.fileMB.toFixed(0)} MiB`,
    f(r.tail.ms, 'ms'),
    f(r.tail.rss, 'MB'),
    f(r.full.ms, 'ms'),
    f(r.full.rss, 'MB'),
  ]),
)}`;
}
