/**
 * CLI start-up: whole-process wall time of common commands, each run paired with `node -e 0`
 * (the cost of starting Node itself on this machine), against the targets of issue 33.
 */
import { join } from 'node:path';
import type { StartupRow } from './startup-guard.js';
import { log, ms, pairwise, podrun, QUICK, ratio, removeInstance, REPO, run, stat, table, writePods } from './lib.js';

/** The rows measured by the last cliStartup(), for the start-up guard. */
export const measuredStartup: StartupRow[] = [];

export async function cliStartup(root: string): Promise<string> {
  const stateDir = join(root, 'cli-state');
  const dir = join(root, 'cli-pods');
  writePods(dir, 'cli', 'bench-cli', 20, { containers: 1, hostNetwork: false });
  const cli = podrun(stateDir);
  const applied = await cli(['apply', dir]);
  if (applied.code !== 0) throw new Error(`apply failed: ${applied.err}`);
  const cases: { name: string; args: string[]; target?: number }[] = [
    { name: '`podrun version`', args: ['version'], target: 1.3 },
    { name: '`podrun version --client`', args: ['version', '--client'] },
    { name: '`podrun get pods -n bench-cli` (20 pods)', args: ['get', 'pods', '-n', 'bench-cli'], target: 1.8 },
    { name: '`podrun apply` of 20 unchanged pods', args: ['apply', dir], target: 2.0 },
    { name: '`podrun validate` of 20 files', args: ['validate', dir], target: 1.5 },
    { name: '`podrun validate manifests/`', args: ['validate', join(REPO, 'manifests')] },
  ];
  const runs = QUICK ? 3 : 9;
  const rows: string[][] = [];
  try {
    for (const c of cases) {
      const a: number[] = [];
      const b: number[] = [];
      await cli(c.args); // warm the page cache
      for (let i = 0; i < runs; i++) {
        const r = await cli(c.args);
        if (r.code !== 0) throw new Error(`${c.args.join(' ')} exited ${String(r.code)}: ${r.err}`);
        a.push(r.ms);
        b.push((await run('node', ['-e', '0'])).ms);
      }
      const q = pairwise(a, b);
      measuredStartup.push({ name: c.name, median: q.median });
      rows.push([
        c.name,
        ms(stat(a)),
        ms(stat(b)),
        `**${ratio(q)}**`,
        c.target ? `≤ ${c.target.toFixed(1)} ${q.median <= c.target ? '(met)' : '(missed)'}` : '—',
      ]);
      log(`cli ${c.args.join(' ')}: ${ms(stat(a))}, ratio ${ratio(q)}`);
    }
  } finally {
    await cli(['delete', '-f', dir, '--grace-period', '0']);
    await removeInstance(stateDir);
  }
  return `### CLI start-up (whole process, each run paired with \`node -e 0\`)

${table(['command', 'podrun', '`node -e 0`', 'ratio', 'target'], rows)}`;
}
