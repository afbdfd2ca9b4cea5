/**
 * Re-apply of 50 running pods: unchanged (it must not make one mutating engine call), and with one
 * container edited (only that container is replaced). Engine calls are counted by a pass-through
 * proxy in front of the engine; timings are taken without it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FaultyEngine } from '../test/integration/engine-helpers.js';
import { log, ms, pairwise, podrun, QUICK, ratio, removeInstance, run, stat, table, writePods } from './lib.js';

const MUTATING = /^(POST|PUT|DELETE|PATCH) /;

/** Engine paths with ids and names folded, so the calls read as a list of kinds. */
function kind(request: string): string {
  return request
    .replace(/^(\w+) \/v[\d.]+/, '$1 ')
    .replace(/\/containers\/[^/]+\//, '/containers/{id}/')
    .replace(/\/containers\/[0-9a-f]{12,}$/, '/containers/{id}')
    .replace(/ +/, ' ');
}

function summarize(requests: string[]): string {
  const counts = new Map<string, number>();
  for (const r of requests) counts.set(kind(r), (counts.get(kind(r)) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${n} × \`${k}\``).join(', ') || 'none';
}

export async function reapply(root: string): Promise<string> {
  const pods = 50;
  const dir = join(root, 'reapply');
  const stateDir = join(root, 'reapply-state');
  const names = writePods(dir, 'reapply', 'bench-reapply', pods, { containers: 1, hostNetwork: false });
  const cli = podrun(stateDir);
  const proxy = new FaultyEngine();
  await proxy.start();
  try {
    const first = await cli(['apply', dir]);
    if (first.code !== 0) throw new Error(`apply failed: ${first.err}`);
    const runs = QUICK ? 3 : 9;
    const noop: number[] = [];
    const node: number[] = [];
    for (let i = 0; i < runs; i++) {
      noop.push((await cli(['apply', dir])).ms);
      node.push((await run('node', ['-e', '0'])).ms);
    }
    proxy.requests.length = 0;
    const counted = await cli(['apply', dir], { DOCKER_HOST: proxy.host });
    if (counted.code !== 0) throw new Error(`apply through the proxy failed: ${counted.err}`);
    const noopCalls = [...proxy.requests];
    const noopMutating = noopCalls.filter((r) => MUTATING.test(r));

    // One container edited among 50: its command changes.
    const file = join(dir, `${names[7]!}.yaml`);
    const original = readFileSync(file, 'utf8');
    const edited: number[] = [];
    for (let i = 0; i < (QUICK ? 1 : 3); i++) {
      writeFileSync(file, original.replace('exec sleep 3600', `exec sleep ${3601 + i}`));
      edited.push((await cli(['apply', dir])).ms);
    }
    writeFileSync(file, original.replace('exec sleep 3600', 'exec sleep 3700'));
    proxy.requests.length = 0;
    const editedCounted = await cli(['apply', dir], { DOCKER_HOST: proxy.host });
    if (editedCounted.code !== 0) throw new Error(`edited apply through the proxy failed: ${editedCounted.err}`);
    const editMutating = proxy.requests.filter((r) => MUTATING.test(r));
    log(
      `re-apply of ${pods}: no-op ${ms(stat(noop))}, ${noopMutating.length} mutating calls; one edited ${ms(stat(edited))}, ${editMutating.length} mutating calls`,
    );
    return `### Re-apply of ${pods} running pods

${table(
  ['what', 'podrun apply', 'ratio to `node -e 0`', 'engine calls (all)', 'mutating engine calls'],
  [
    ['nothing changed', ms(stat(noop)), ratio(pairwise(noop, node)), String(noopCalls.length), `**${noopMutating.length}**: ${summarize(noopMutating)}`],
    [
      "one container's command edited",
      ms(stat(edited)),
      ratio(pairwise(edited.slice(0, node.length), node.slice(0, edited.length))),
      String(proxy.requests.length),
      `${editMutating.length}: ${summarize(editMutating)}`,
    ],
  ],
)}

The unchanged re-apply reads: ${summarize(noopCalls)}.`;
  } finally {
    await cli(['delete', '-f', dir, '--grace-period', '0']);
    await removeInstance(stateDir);
    await proxy.stop();
  }
}
