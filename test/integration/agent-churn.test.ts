import { describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LABEL } from '../../src/runtime/labels.js';
import { AgentSuite } from './agent-helpers.js';
import { churnDirectory, churnPod, churnReport, spread } from './churn-helpers.js';
import { docker, followEvents, podContainers, unique, until } from './helpers.js';

const suite = new AgentSuite('churn');
const { world, ns } = suite;

/** Churned files (issue 28: 200 files × 6 writes over about 20 s); PODRUN_CHURN_FILES to try fewer. */
const FILES = Number(process.env.PODRUN_CHURN_FILES ?? 200);
/** Writes of each file before its removal: the first and five rewrites, each a new version. */
const WRITES = 6;

/** Each stable pod's containers as the engine has them: id, state and podrun's restart count. */
async function stableState(name: string): Promise<string[]> {
  const list = await podContainers(ns, name);
  return list.map((c) => `${c.Labels[LABEL.containerName]} ${c.Id} ${c.State} restarts=${c.Labels[LABEL.restartCount]}`).sort();
}

async function nsContainers(): Promise<string[]> {
  const list = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${LABEL.podNamespace}=${ns}`] }) });
  return list.map((c) => c.Labels[LABEL.podName] ?? '');
}

describe('a watched directory in heavy churn', () => {
  it(`${FILES} files created, rewritten 5 times and removed beside 3 stable pods: every pod deleted, nothing made but what the files asked for, the stable pods untouched`, async () => {
    const dir = join(world.dir, unique('dir'));
    mkdirSync(dir);
    const stable = [0, 1, 2].map((i) => `stable-${i}`);
    for (const name of stable) writeFileSync(join(dir, `${name}.yaml`), churnPod(ns, name, 0));
    // GC every 5 s: a sweep while pods are being made and deleted must not take their directories.
    const agent = suite.run(
      ['--manifest-dir', dir, '--gc-period', '5s'],
      process.env.PODRUN_CHURN_PROF ? { NODE_OPTIONS: '--cpu-prof --cpu-prof-dir=' + process.env.PODRUN_CHURN_PROF } : {},
    );
    await agent.started();
    const before = await until(
      'the stable pods to run',
      async () => {
        const states = await Promise.all(stable.map(stableState));
        return states.every((s) => s.length === 2 && s.every((l) => l.includes(' running '))) ? states : undefined;
      },
      60_000,
    );

    const ev = await followEvents([`${LABEL.podNamespace}=${ns}`]);
    const names = Array.from({ length: FILES }, (_, i) => `churn-${i}`);
    const t0 = Date.now();
    // Files first written over 11 s, each rewritten every 1.5 s and removed 1.5 s after its last
    // rewrite: the last removal about 20 s after the first write.
    const removed = await churnDirectory(dir, ns, names, { spreadMs: 11_000, gapMs: 1_500, writes: WRITES });
    const lastRemoval = Math.max(...removed.values());
    await until(
      'only the stable pods to be left',
      async () => {
        const pods = await nsContainers();
        return pods.every((p) => stable.includes(p)) ? true : undefined;
      },
      120_000,
    );
    const convergedMs = Date.now() - lastRemoval;
    // The engine's last removal comes a moment before the agent's "deleted" line for that pod (its
    // last look, its directory): read the log once every pod that reached the engine has one.
    await until(
      'a deleted line for every pod that reached the engine',
      async () => (churnReport(agent.logs(), ev.events, ns, removed, 0).notDeleted.length === 0 ? true : undefined),
      30_000,
    ).catch(() => undefined);
    ev.stop();
    if (process.env.PODRUN_CHURN_LOG) {
      writeFileSync(process.env.PODRUN_CHURN_LOG, agent.logs());
      writeFileSync(`${process.env.PODRUN_CHURN_LOG}.removed.json`, JSON.stringify(Object.fromEntries(removed)));
    }

    // Removal grace (1 s: editors' rename dance) plus one engine call already sent when the agent
    // heard: the bench's bound for what was made late, printed here, not asserted.
    const report = churnReport(agent.logs(), ev.events, ns, removed, 1000 + 2500);
    const { median, p95, max } = spread([...report.deletionMs.values()]);
    const began = spread([...report.startMs.values()]);
    const creates = ev.events.filter((e) => e.action === 'create' && !stable.includes(e.attributes[LABEL.podName] ?? '')).length;
    // The times are figures, not what passes or fails: issue 28's bound (every deletion within 5 s
    // of its file's removal) is read by the bench (BENCH_ONLY=churn npm run bench, bench/churn.ts),
    // on a machine it has to itself.
    process.stderr.write(
      `churn: ${FILES} files in ${Math.round((lastRemoval - t0) / 1000)} s; ${report.reached} pods reached the engine, ${creates} containers created; deletion after removal median ${median} ms, p95 ${p95} ms, max ${max} ms, ${[...report.deletionMs.values()].filter((ms) => ms > 5000).length} over 5 s (begun: median ${began.median} ms, max ${began.max} ms); converged ${convergedMs} ms after the last removal; ${report.lateMade.length} creates and ${report.lateStarts.length} starts carried out by the engine more than 3.5 s after the removal\n`,
    );

    expect(report.startErrors).toEqual([]);
    // Every pod that reached the engine was deleted, and said so.
    expect(report.notDeleted).toEqual([]);
    expect(report.reached).toBeGreaterThan(0);
    // Nothing made but what the files asked for, counted on the engine: one sandbox per pod (no
    // version changes it, so a second is a pod made anew: after its file went, or taken from
    // under it by a GC sweep), and a container per version written at most.
    expect(
      [...report.made].filter(([, m]) => m.sandboxes > 1 || m.containers > WRITES),
      'pods made more than their files asked for (pod, creates)',
    ).toEqual([]);
    // The stable pods: the same containers, running, never restarted.
    expect(await Promise.all(stable.map(stableState))).toEqual(before);
    for (const s of before) for (const l of s) expect(l).toMatch(/ running restarts=0$/);
  }, 300_000);
});
