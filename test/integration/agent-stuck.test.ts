import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import { AgentSuite } from './agent-helpers.js';
import {
  docker,
  followEvents,
  podContainers,
  podEventRecords,
  recordPodEvents,
  stopPodEvents,
  TEST_IMAGE,
  unique,
  until,
  World,
  type EngineEventRecord,
} from './helpers.js';

// Never stuck behind a graceful stop (issue 10): a pod in its grace period holds nothing of anyone
// else's, and the grace periods of many pods overlap.
const suite = new AgentSuite('stuck');
const { world, ns } = suite;

/** Ignores SIGTERM: only the end of the grace period stops it. */
const STUBBORN = `[sh, -c, 'trap "" TERM; while :; do sleep 1; done']`;

function pod(name: string, grace: number, command = STUBBORN): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: ${grace}
  containers: [{name: c, image: ${TEST_IMAGE}, command: ${command}}]
`;
}

/**
 * The stops of these pods' containers overlap: in the engine's own order of events, each got its
 * SIGTERM before the first of them died (a stop one at a time, or in batches, kills one first).
 */
function expectOverlappingGrace(events: EngineEventRecord[], names: string[]): void {
  const at = (n: string, is: (e: EngineEventRecord) => boolean): number => events.findIndex((e) => e.attributes[LABEL.podName] === n && is(e));
  const terms = names.map((n) => at(n, (e) => e.action === 'kill' && e.attributes['signal'] === '15'));
  const deaths = names.map((n) => at(n, (e) => e.action === 'die'));
  expect(
    [...terms, ...deaths].filter((i) => i < 0),
    'a SIGTERM and a death for each',
  ).toEqual([]);
  expect(Math.max(...terms)).toBeLessThan(Math.min(...deaths));
}

beforeAll(recordPodEvents);
afterAll(stopPodEvents);

describe('the agent never waits behind a graceful stop', () => {
  it('restarts a crashed container while six other pods spend a 20 s grace period, before any of them ends', async () => {
    const dir = join(world.dir, 'manifests');
    mkdirSync(dir);
    const draining = Array.from({ length: 6 }, () => unique('drain'));
    const victim = unique('victim');
    for (const n of draining) writeFileSync(join(dir, `${n}.yaml`), pod(n, 20));
    writeFileSync(join(dir, `${victim}.yaml`), pod(victim, 1, `[sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']`));
    const agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    const runningC = async (n: string): Promise<string | undefined> =>
      (await podContainers(ns, n)).find((c) => c.Labels[LABEL.containerName] === 'c' && c.State === 'running')?.Id;
    for (const n of [...draining, victim]) await until(`${n} to run`, () => runningC(n), 30_000);

    for (const n of draining) rmSync(join(dir, `${n}.yaml`));
    for (const n of draining) await agent.waitForLog(`pod ${ns}/${n}: no longer declared; deleting`);
    // All six are in their grace period now: still running, being stopped.
    for (const n of draining) expect(await runningC(n)).toBeDefined();

    const since = Math.floor(Date.now() / 1000) - 1;
    const first = (await runningC(victim))!;
    await docker.getContainer(first).kill();
    const second = await until(
      'the victim to be restarted',
      async () => {
        const id = await runningC(victim);
        return id && id !== first ? id : undefined;
      },
      15_000,
    );
    const uid = (await podContainers(ns, victim))[0]!.Labels[LABEL.podUid]!;
    const events = await podEventRecords(uid, since);
    const died = events.find((e) => e.action === 'die' && e.name === 'c')!.ms;
    expect(events.some((e) => e.action === 'start' && e.name === 'c' && e.ms > died)).toBe(true);
    expect(second).toBeDefined();
    // Restarted while the six are still draining (a restart queued behind them would come after
    // their 20 s), and nothing was cut short to make room.
    for (const n of draining) expect(await runningC(n)).toBeDefined();
  });
});

describe('delete', () => {
  it('lets the grace periods of many pods overlap', async () => {
    const w = new World();
    try {
      const names = Array.from({ length: 8 }, () => unique('del'));
      for (const n of names) expect((await w.cli('apply', '--no-wait', w.write(`${n}.yaml`, pod(n, 3)))).code).toBe(0);
      for (const n of names)
        await until(`${n} to run`, async () =>
          (await podContainers(ns, n)).some((c) => c.State === 'running' && c.Labels[LABEL.containerName] === 'c') ? true : undefined,
        );
      // Followed live, not asked with since/until afterwards: the engine keeps only its last 256
      // events for that, and a busy engine (other test files churn) drops them within seconds.
      const ev = await followEvents([`${LABEL.podNamespace}=${ns}`, `${LABEL.containerName}=c`]);
      const d = await w.cli('delete', '-n', ns, ...names);
      ev.stop();
      expect(d.code, d.err).toBe(0);
      // Together, not four at a time: every container has its SIGTERM before any dies.
      expectOverlappingGrace(ev.events, names);
    } finally {
      await w.cleanup();
    }
  });

  it('deletes twelve pods in one grace period: all their stops overlap (issue 33)', async () => {
    const w = new World();
    const grace = 10;
    try {
      const names = Array.from({ length: 12 }, () => unique('del12'));
      const files = names.map((n) => w.write(`${n}.yaml`, pod(n, grace)));
      expect((await w.cli('apply', '--no-wait', ...files)).code).toBe(0);
      for (const n of names)
        await until(
          `${n} to run`,
          async () => ((await podContainers(ns, n)).some((c) => c.State === 'running' && c.Labels[LABEL.containerName] === 'c') ? true : undefined),
          60_000,
        );
      const ev = await followEvents([`${LABEL.podNamespace}=${ns}`, `${LABEL.containerName}=c`]);
      const d = await w.cli('delete', '-n', ns, ...names);
      ev.stop();
      expect(d.code, d.err).toBe(0);
      for (const n of names) expect(await podContainers(ns, n)).toEqual([]);
      // One grace period for all twelve: four pods at a time would be three, one at a time twelve.
      // The order of the engine's events says so whatever the load; the time is the bench's.
      expectOverlappingGrace(ev.events, names);
    } finally {
      await w.cleanup();
    }
  }, 120_000);
});
