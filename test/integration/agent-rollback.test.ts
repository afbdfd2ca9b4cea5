import { describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LABEL } from '../../src/runtime/labels.js';
import type { V1Pod } from '../../src/status/v1.js';
import type { RollbackRecord } from '../../src/reconcile/rollback.js';
import { AgentSuite, pastRelist, type AgentProcess } from './agent-helpers.js';
import { docker, podContainers, TEST_IMAGE, unique, until } from './helpers.js';

// Health-gated updates: a pod annotated podrun.io/rollback-after must be Ready within that time
// after its spec changes, or it goes back to the last version that was Ready.
const suite = new AgentSuite('rollback');
const { world, ns } = suite;
let agent: AgentProcess | undefined;

const DEADLINE_S = 4;
const PROBE_PERIOD_S = 1;

/** Two containers carrying V; `app` is Ready only when V is not "bad". */
function pod(name: string, v: string, annotations = `{podrun.io/rollback-after: ${DEADLINE_S}s}`, appCommand = "[sleep, '3600']"): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: ${ns}
  annotations: ${annotations}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: ${TEST_IMAGE}
    command: ${appCommand}
    env: [{name: V, value: ${v}}]
    readinessProbe:
      exec: {command: [sh, -c, 'test "$V" != bad']}
      periodSeconds: ${PROBE_PERIOD_S}
      failureThreshold: 1
  - name: side
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
    env: [{name: V, value: ${v}}]
`;
}

/** V of each running container of the pod, by container name, with the ids. */
async function running(name: string): Promise<{ v: Record<string, string>; ids: Record<string, string> }> {
  const v: Record<string, string> = {};
  const ids: Record<string, string> = {};
  for (const c of await podContainers(ns, name)) {
    const cname = c.Labels[LABEL.containerName] ?? '';
    if (c.State !== 'running' || cname === 'POD') continue;
    const env = (await docker.getContainer(c.Id).inspect()).Config.Env ?? [];
    v[cname] = (env.find((e) => e.startsWith('V=')) ?? '').slice(2);
    ids[cname] = c.Id;
  }
  return { v, ids };
}

/** Both containers run V=`v`: one version, never a mix. */
async function runningVersion(name: string, v: string, timeoutMs = 30_000): Promise<Record<string, string>> {
  return until(
    `pod ${name} to run V=${v} in both containers`,
    async () => {
      const r = await running(name);
      return r.v.app === v && r.v.side === v ? r.ids : undefined;
    },
    timeoutMs,
  );
}

async function view(name: string): Promise<V1Pod> {
  const r = await world.cli('get', 'pods', '-n', ns, name, '-o', 'json');
  return JSON.parse(r.out) as V1Pod;
}

async function ready(name: string): Promise<void> {
  await until(`pod ${name} to be Ready`, async () =>
    (await view(name)).status.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? true : undefined,
  );
}

function record(name: string): RollbackRecord & { key: string } {
  const dir = join(world.stateDir, 'rollback');
  for (const f of readdirSync(dir)) {
    const r = JSON.parse(readFileSync(join(dir, f), 'utf8')) as RollbackRecord & { key: string };
    if (r.key === `${ns}/${name}`) return r;
  }
  throw new Error(`no rollback record for ${name}`);
}

async function allInstances(name: string): Promise<string[]> {
  return (await podContainers(ns, name)).map((c) => c.Id).sort();
}

/** Containers of the pod made since `before` was taken (pruning dead ones meanwhile is no change). */
async function createdSince(name: string, before: string[]): Promise<string[]> {
  return (await allInstances(name)).filter((id) => !before.includes(id));
}

/**
 * A watched directory with pod `prefix-…` at V=one (annotated as `pod` says unless `annotations`
 * is given), an agent on it, and the pod running and Ready; for a gated pod, recorded as Ready.
 */
async function startReady(
  prefix: string,
  annotations?: string,
): Promise<{ dir: string; name: string; file: string; good: string | undefined; started: AgentProcess }> {
  const dir = join(world.dir, unique('dir'));
  mkdirSync(dir);
  const name = unique(prefix);
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, pod(name, 'one', annotations));
  const started = suite.run(['--manifest-dir', dir]);
  await started.started();
  await runningVersion(name, 'one');
  await ready(name);
  const good = annotations === undefined ? await until('v1 to be recorded as Ready', async () => record(name).good?.version) : undefined;
  return { dir, name, file, good, started };
}

describe('health-gated updates', () => {
  it('an update that is never Ready is rolled back within the deadline plus a probe period, is not retried until it changes, and one that becomes Ready stays', async () => {
    const { dir, name, file, good, started } = await startReady('gated');
    agent = started;

    writeFileSync(file, pod(name, 'bad'));
    await runningVersion(name, 'bad');
    await agent.waitForLog(
      /version \w+ was not Ready within 4s: container app: readiness probe failed: .*; rolled back to version \w+, the last that was Ready/,
    );
    const back = await runningVersion(name, 'one');
    const r = record(name);
    expect(r.good?.version).toBe(good);
    expect(r.failed?.rolledBackTo).toBe(good);
    expect(r.failed?.reason).toMatch(/^container app: readiness probe failed/);
    // Judged at the deadline, never before (a bound load cannot break); how soon after it is the
    // health gate's unit test, on a fake clock.
    const took = Date.parse(r.failed?.at ?? '') - Date.parse(r.failed?.since ?? '');
    expect(took).toBeGreaterThanOrEqual(DEADLINE_S * 1000);

    // Shown where an operator looks.
    // (Ready again once the restored version's readiness probe has passed.)
    const listing = new RegExp(`${name}\\s+2/2\\s+RolledBack\\s`);
    await until('get pods to show the restored version Ready and RolledBack', async () =>
      listing.test((await world.cli('get', 'pods', '-n', ns, name)).out) ? true : undefined,
    );
    const described = await world.cli('describe', 'pod', '-n', ns, name);
    expect(described.out).toMatch(/Reason:\s+RolledBack/);
    expect(described.out).toMatch(/Message:\s+version \w+ was not Ready within 4s \(container app: readiness probe failed/);
    expect(described.out).toMatch(/Warning\s+RolledBack\s+.*rolled back to version/);

    // Without an agent, get pods shows what the agent last decided.
    await agent.stop();
    expect((await world.cli('get', 'pods', '-n', ns, name)).out).toMatch(listing);
    agent = suite.run(['--manifest-dir', dir]);
    await agent.started();

    // Not retried while the source declares it: past a rescan and a relist, and a rewrite of the same bytes.
    const instances = await allInstances(name);
    writeFileSync(file, pod(name, 'bad'));
    await pastRelist(agent);
    expect(await createdSince(name, instances)).toEqual([]);
    expect((await running(name)).ids).toEqual(back);

    // A new version is tried; this one becomes Ready and stays past its deadline.
    writeFileSync(file, pod(name, 'three'));
    await runningVersion(name, 'three');
    await ready(name);
    await new Promise((res) => setTimeout(res, (DEADLINE_S + PROBE_PERIOD_S + 1) * 1000));
    const kept = await running(name);
    expect(kept.v).toEqual({ app: 'three', side: 'three' });
    expect((await view(name)).status.reason).toBeUndefined();
    expect(record(name).failed).toBeUndefined();
    expect(record(name).good?.version).not.toBe(good);
  });

  it('a kill -9 in the middle of an update or of a rollback converges to one of the two versions, never a mix', async () => {
    const { dir, name, file, started } = await startReady('killed');
    agent = started;

    // Mid-update: the bad version runs, its deadline not reached; the agent dies. (On a loaded
    // machine the deadline may pass before the kill lands: then the agent killed decided, and the
    // next one acts on its stored decision.)
    writeFileSync(file, pod(name, 'bad'));
    await runningVersion(name, 'bad');
    await agent.kill9();
    const decided = agent.logs().includes('rolled back to version');
    agent = suite.run(['--manifest-dir', dir]);
    if (!decided) await agent.waitForLog('rolled back to version');
    await runningVersion(name, 'one');
    expect(record(name).failed?.rolledBackTo).toBe(record(name).good?.version);

    // Mid-rollback: the agent dies the moment it decided to go back.
    writeFileSync(file, pod(name, 'two'));
    await runningVersion(name, 'two');
    await ready(name);
    writeFileSync(file, pod(name, 'bad'));
    await runningVersion(name, 'bad');
    const before = agent.logs().split('rolled back to version').length;
    await until('the rollback decision', async () => (agent!.logs().split('rolled back to version').length > before ? true : undefined), 30_000);
    await agent.kill9();
    agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    await runningVersion(name, 'two');
    await pastRelist(agent);
    expect((await running(name)).v).toEqual({ app: 'two', side: 'two' });

    // And once back, a restart does not try the failed version again.
    const instances = await allInstances(name);
    await agent.stop();
    agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    await pastRelist(agent);
    expect(await createdSince(name, instances)).toEqual([]);
  });

  it('an update whose container keeps exiting is rolled back with the exit code in the reason', async () => {
    const { name, file, started } = await startReady('crashing');
    agent = started;
    writeFileSync(file, pod(name, 'bad', undefined, "[sh, -c, 'exit 3']"));
    // Never Ready (its readiness would fail too). At the deadline it is waiting out a crash
    // back-off, or just restarted: either way the reason names the exit code (a container's
    // details read while it ran once made this "last exit code 0 (Completed)").
    await agent.waitForLog(/was not Ready within 4s: container app[^;]*(last exit code 3 \(Error\)|exited with code 3 \(Error\)); rolled back/);
    await runningVersion(name, 'one');
    const described = await world.cli('describe', 'pod', '-n', ns, name);
    expect(described.out).toMatch(/Warning\s+RolledBack\s+.*container app.*code 3/);
  });

  it('podrun apply of an update the agent rolls back says so and exits 1, without waiting out its timeout', async () => {
    agent = suite.run([]);
    await agent.started();
    const name = unique('applied');
    const file = world.write(`${name}.yaml`, pod(name, 'one'));
    const first = await world.cli('apply', file);
    expect(first.code, first.err).toBe(0);
    await until('v1 to be recorded as Ready', async () => record(name).good?.version);
    world.write(`${name}.yaml`, pod(name, 'bad'));
    const second = await world.cli('apply', '--timeout', '5m', file);
    expect(second.code).toBe(1);
    expect(second.err).toMatch(
      new RegExp(`pod/${ns}/${name}: failed: rolled back: version \\w+ was not Ready within 4s \\(container app: readiness probe failed`),
    );
    await runningVersion(name, 'one');
    // The same update applied again is the same failed version: refused at once, not retried.
    const third = await world.cli('apply', '--timeout', '5m', file);
    expect(third.code).toBe(1);
    expect(third.err).toContain('rolled back');
  });

  it('a pod without the annotation behaves as the kubelet: the update that is never Ready stays', async () => {
    const { name, file, started } = await startReady('plain', '{}');
    agent = started;
    writeFileSync(file, pod(name, 'bad', '{}'));
    const ids = await runningVersion(name, 'bad');
    await new Promise((res) => setTimeout(res, (DEADLINE_S + PROBE_PERIOD_S + 1) * 1000));
    expect((await running(name)).ids).toEqual(ids);
    expect(agent.logs()).not.toContain('rolled back');
  });
});
