import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApplyDriver } from '../../src/agent/apply-driver.js';
import type { DesiredPod } from '../../src/manifest/types.js';
import { pruneAfterApply, waitForPods } from '../../src/reconcile/converge.js';
import { planApply } from '../../src/reconcile/plan.js';
import { LABEL } from '../../src/runtime/labels.js';
import { groupObserved, type ObservedPod } from '../../src/runtime/observed.js';
import { FakeEngine } from '../fakes/fake-engine.js';
import { desired } from '../fixtures/pods.js';

// `apply` with no agent runs the agent's own pod worker (ApplyDriver): what apply --wait does is
// what a worker's turn does, back-off included, with the engine left to keep the pods alive.

const dirs: string[] = [];
const drivers: ApplyDriver[] = [];
afterEach(() => {
  for (const d of drivers.splice(0)) d.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(): { engine: FakeEngine; driver: ApplyDriver; starts: Map<string, number> } {
  const stateDir = mkdtempSync(join(tmpdir(), 'podrun-apply-driver-'));
  dirs.push(stateDir);
  const engine = new FakeEngine({ stateDir });
  const starts = new Map<string, number>();
  const driver = new ApplyDriver(engine, 'set-1');
  drivers.push(driver);
  return { engine, driver, starts };
}

/** A pod of one container, `app`, that keeps running. */
const onePod = (name: string): DesiredPod =>
  desired(`apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: apply}
spec:
  containers: [{name: app, image: busybox:1}]
`);

async function applyAndWait(engine: FakeEngine, driver: ApplyDriver, d: DesiredPod, timeoutMs = 20_000): ReturnType<typeof waitForPods> {
  const outcomes = await driver.apply(planApply([d], await engine.listPods()));
  expect(outcomes).toEqual([{ key: d.key }]);
  return waitForPods(engine, [d], driver, { timeoutMs, pollMs: 5 });
}

describe('apply --wait drives the agent worker', () => {
  it('an init container that keeps failing gets the crash back-off: restarted once at once, then held, and the wait ends in CrashLoopBackOff', async () => {
    const { engine, driver, starts } = setup();
    engine.behaviour = ({ container }) => {
      starts.set(container, (starts.get(container) ?? 0) + 1);
      return container === 'init' ? { exitCode: 3 } : {};
    };
    const d = desired(`apiVersion: v1
kind: Pod
metadata: {name: initloop, namespace: apply}
spec:
  initContainers: [{name: init, image: busybox:1}]
  containers: [{name: app, image: busybox:1}]
`);
    const result = await applyAndWait(engine, driver, d, 4_000);
    expect(result.ok).toBe(false);
    expect(result.problems).toHaveLength(1);
    expect(result.problems[0]?.message).toBe(
      'CrashLoopBackOff: init container init exited with code 3 (Error), 1 restart; the log of init container init is empty',
    );
    // Its first run and the restart the back-off lets go at once; the next waits 10 s, which the wait does not.
    expect(starts.get('init')).toBe(2);
    expect(starts.get('app')).toBeUndefined();
  });

  it('leaves the pod to the engine: made with its restart policy, never taken over, and a death the engine restarts is not restarted twice', async () => {
    const { engine, driver } = setup();
    const takeOver = vi.spyOn(engine, 'takeOverRestarts');
    const d = onePod('alone');
    const result = await applyAndWait(engine, driver, d);
    expect(result).toEqual({ ok: true, problems: [] });
    const app = [...engine.containers.values()].find((c) => c.labels[LABEL.containerName] === 'app');
    expect(app).toBeDefined();
    const sandbox = [...engine.containers.values()].find((c) => c.labels[LABEL.containerType] === 'sandbox');
    expect([...engine.engineRestarting].sort()).toEqual([app!.id, sandbox!.id].sort());
    // The container dies; the engine's policy (always) restarts it in place a moment later.
    const creates = engine.calls.get('create');
    engine.exit(app!.id, 1);
    await driver.look([d]);
    await driver.look([d]);
    expect(engine.calls.get('create')).toBe(creates);
    engine.restartInPlace(app!.id);
    const looks = await driver.look([d]);
    expect(looks.get(d.uid)).toMatchObject({ verdict: { done: true, failed: false } });
    expect(engine.calls.get('create')).toBe(creates);
    expect(takeOver).not.toHaveBeenCalled();
  });

  it('on an engine without restart policies asks for none, claims none, and restarts a death itself while it waits', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'podrun-apply-driver-'));
    dirs.push(stateDir);
    const engine = new FakeEngine({ stateDir });
    engine.capabilities = { ...engine.capabilities, restartPolicy: false };
    const driver = new ApplyDriver(engine, 'set-1');
    drivers.push(driver);
    const takeOver = vi.spyOn(engine, 'takeOverRestarts');
    const d = onePod('norestarts');
    // The fake refuses a create that asks for engine restarts it said it cannot keep.
    expect(await applyAndWait(engine, driver, d)).toEqual({ ok: true, problems: [] });
    expect(engine.engineRestarting.size).toBe(0);
    const app = [...engine.containers.values()].find((c) => c.labels[LABEL.containerName] === 'app')!;
    const creates = engine.calls.get('create')!;
    engine.exit(app.id, 1);
    // No restart in place is waited for: the worker makes the container again at its next look.
    const looks = await driver.look([d]);
    expect(engine.calls.get('create')).toBe(creates + 1);
    const look = looks.get(d.uid);
    expect(look && 'verdict' in look ? look.verdict.status?.containerStatuses?.[0]?.restartCount : undefined).toBe(1);
    expect(takeOver).not.toHaveBeenCalled();
  });

  it("does not take the engine's first restart in place for a crash loop (it counts it before it makes it), but its second", async () => {
    const { engine, driver } = setup();
    const d = onePod('inplace');
    expect(await applyAndWait(engine, driver, d)).toEqual({ ok: true, problems: [] });
    const app = [...engine.containers.values()].find((c) => c.labels[LABEL.containerName] === 'app')!;
    engine.exit(app.id, 1);
    engine.restartPending(app.id);
    const first = await waitForPods(engine, [d], driver, { timeoutMs: 200, pollMs: 5 });
    expect(first.problems[0]?.message).toMatch(/^not ready after 0s: /);
    engine.restartInPlace(app.id);
    engine.exit(app.id, 1);
    engine.restartPending(app.id);
    const second = await waitForPods(engine, [d], driver, { timeoutMs: 5_000, pollMs: 5 });
    expect(second.problems[0]?.message).toMatch(/^CrashLoopBackOff: container app exited with code 1 \(Error\), 2 restarts/);
  });

  it("re-applies unchanged pods with one list in all (the plan's) and one inspect per container (when it started: the Ready hold)", async () => {
    const { engine, driver } = setup();
    const pods = ['u1', 'u2', 'u3'].map(onePod);
    await driver.apply(planApply(pods, await engine.listPods()));
    expect((await waitForPods(engine, pods, driver, { timeoutMs: 5_000, pollMs: 5, holdMs: 0 })).ok).toBe(true);
    // A later `apply` of the same pods, as cli/apply.ts makes it: its own driver, the plan's list handed on.
    const again = new ApplyDriver(engine, 'set-1');
    drivers.push(again);
    engine.calls.clear();
    const listed = await engine.listContainers();
    const outcomes = await again.apply(planApply(pods, groupObserved(listed)), listed);
    expect(outcomes.every((x) => !x.error)).toBe(true);
    const seen = new Map<string, ObservedPod | undefined>();
    expect((await waitForPods(engine, pods, again, { timeoutMs: 5_000, pollMs: 5, holdMs: 0, seen })).ok).toBe(true);
    await pruneAfterApply(engine, new Set(pods.map((p) => p.uid)), seen);
    expect(Object.fromEntries(engine.calls)).toEqual({ list: 1, inspect: 3 });
  });

  it('re-applies pods its list shows up for longer than the hold with that one list and no inspect; one up for less is read and held', async () => {
    const { engine, driver } = setup();
    engine.listsUptime = true;
    const pods = ['l1', 'l2', 'l3'].map(onePod);
    await driver.apply(planApply(pods, await engine.listPods()));
    expect((await waitForPods(engine, pods, driver, { timeoutMs: 5_000, pollMs: 5, holdMs: 0 })).ok).toBe(true);
    const reapply = async (holdMs: number): Promise<{ ok: boolean; calls: Record<string, number> }> => {
      const again = new ApplyDriver(engine, 'set-1');
      drivers.push(again);
      engine.calls.clear();
      const listed = await engine.listContainers();
      await again.apply(planApply(pods, groupObserved(listed)), listed);
      const seen = new Map<string, ObservedPod | undefined>();
      const { ok } = await waitForPods(engine, pods, again, { timeoutMs: 5_000, pollMs: 5, holdMs, seen });
      await pruneAfterApply(engine, new Set(pods.map((p) => p.uid)), seen);
      return { ok, calls: Object.fromEntries(engine.calls) };
    };
    // Up "Less than a second" (0 s) proves a hold of 0 only.
    expect(await reapply(0)).toEqual({ ok: true, calls: { list: 1 } });
    // Just started (restarted in place, say): a hold the list cannot prove. Each container's start is
    // read, as before, and the pods are held, looked at (listed) again until it is over.
    for (const c of engine.containers.values()) if (c.state === 'running') c.startedAt = Date.now();
    const held = await reapply(400);
    expect(held.ok).toBe(true);
    expect(held.calls.inspect).toBeGreaterThanOrEqual(3);
    expect(held.calls.list).toBeGreaterThan(1);
  });
});

describe('apply carries out the plan it printed', () => {
  it('the plan the driver decides is the object executed: a change made to it after printing is what happens', async () => {
    const { engine, driver } = setup();
    const d = onePod('printed');
    const plans = await driver.plan([d], await engine.listContainers());
    expect(plans.map((p) => [p.key, p.verdict, p.actions.createSandbox, p.actions.containersToStart.map((s) => s.name)])).toEqual([
      [d.key, 'created', true, ['app']],
    ]);
    // Were the plan made again between print and execution, the container would start all the same.
    plans[0]!.actions.containersToStart = [];
    expect(await driver.apply(plans)).toEqual([{ key: d.key }]);
    const made = [...engine.containers.values()].map((c) => c.labels[LABEL.containerType]);
    expect(made).toEqual(['sandbox']);
  });
});
