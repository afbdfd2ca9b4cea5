import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { removePod } from '../../src/reconcile/lifecycle.js';
import { deletionPlan } from '../../src/reconcile/deletion-plan.js';
import { computePodActions, removalActions } from '../../src/reconcile/plan.js';
import { executePodActions } from '../../src/reconcile/sync.js';
import { LABEL } from '../../src/runtime/labels.js';
import { desired } from '../fixtures/pods.js';
import { FakeEngine } from '../fakes/fake-engine.js';

const dirs: string[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const d = desired(`apiVersion: v1
kind: Pod
metadata: {name: web, namespace: ns}
spec:
  containers: [{name: c, image: busybox}]
`);

const id = { uid: d.uid, name: 'web', namespace: 'ns', source: d.origin.source };

/** Starts (another instance of) the pod's container; its id. */
function start(engine: FakeEngine, sandbox: { id: string; ip: string }, restartCount: number): Promise<string> {
  return engine.startContainer(d.pod, id, d.pod.spec.containers[0]!, {
    type: 'app',
    restartCount,
    hash: 'h',
    sandbox,
    volumes: new Map(),
    engineRestarts: false,
    imageReady: true,
  });
}

/** The pod running on a fake engine: its sandbox and its container. */
async function running(): Promise<FakeEngine> {
  const dir = mkdtempSync(join(tmpdir(), 'podrun-removal-'));
  dirs.push(dir);
  const engine = new FakeEngine({ stateDir: dir });
  await start(engine, await engine.createSandbox(d.pod, id, 0, 'h', false), 0);
  return engine;
}

describe('removing a pod (issue 28: a deletion never waits a turn for what it can remove now)', () => {
  it('removes, in the same turn, a container it had not seen that was never started (a create abandoned when the pod went, landed since)', async () => {
    const engine = await running();
    const [observed] = await engine.listPods(d.uid);
    // Landed after the deletion's look at the pod: created, never started.
    const late = await start(engine, { id: observed!.sandboxes[0]!.id, ip: '' }, 1);
    engine.containers.get(late)!.state = 'created';
    expect(await removePod(engine, observed!, deletionPlan(observed!, 1))).toBe(true);
    expect(engine.containers.size).toBe(0);
    expect(engine.calls.get('volumes')).toBe(1);
  });

  it('leaves a container it had not seen that runs to the next turn (its grace period), and keeps the directory', async () => {
    const engine = await running();
    const [observed] = await engine.listPods(d.uid);
    const late = await start(engine, { id: observed!.sandboxes[0]!.id, ip: '' }, 1);
    expect(await removePod(engine, observed!, deletionPlan(observed!, 1))).toBe(false);
    expect([...engine.containers.keys()]).toEqual([late]);
    expect(engine.calls.get('volumes')).toBeUndefined();
  });

  it('removes the sandbox with the containers, and again after them when the engine refuses it while they are there (Podman)', async () => {
    const engine = await running();
    const [observed] = await engine.listPods(d.uid);
    const removeSandbox = engine.removeSandbox.bind(engine);
    let refused = 0;
    engine.removeSandbox = async (sid: string) => {
      const dependents = [...engine.containers.values()].filter((c) => c.labels[LABEL.containerType] !== 'sandbox');
      if (dependents.length) {
        refused++;
        throw new Error('container has dependent containers which must be removed before it');
      }
      return removeSandbox(sid);
    };
    expect(await removePod(engine, observed!, deletionPlan(observed!, 1))).toBe(true);
    expect(engine.containers.size).toBe(0);
    expect(refused).toBe(1);
  });

  it('is an outcome of the plan: the executor given the plan for a pod no longer declared removes all of it, directory last', async () => {
    const engine = await running();
    const [observed] = await engine.listPods(d.uid);
    // The plan for a declared pod that runs as declared says nothing; the removal plan says all.
    expect(removalActions(observed!)).toMatchObject({ killPod: true, removePod: true, deletion: { uid: d.uid } });
    expect(computePodActions(d, observed).removePod).toBeUndefined();
    await executePodActions(engine, d, observed, removalActions(observed!), { engineRestarts: false });
    expect(engine.containers.size).toBe(0);
    expect(engine.calls.get('volumes')).toBe(1);
  });
});

const withSidecar = desired(`apiVersion: v1
kind: Pod
metadata: {name: meshed, namespace: ns}
spec:
  terminationGracePeriodSeconds: 9
  initContainers: [{name: proxy, image: busybox, restartPolicy: Always}]
  containers: [{name: app, image: busybox}]
`);

describe("the executor carries out the deletion plan's order", () => {
  it('stops the sidecar only once the app container has stopped, each with the grace the plan gives, then removes everything', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'podrun-removal-'));
    dirs.push(dir);
    const engine = new FakeEngine({ stateDir: dir });
    const ident = { uid: withSidecar.uid, name: 'meshed', namespace: 'ns', source: withSidecar.origin.source };
    const sandbox = await engine.createSandbox(withSidecar.pod, ident, 0, 'h', false);
    const base = { restartCount: 0, hash: 'h', sandbox, volumes: new Map(), engineRestarts: false, imageReady: true };
    const proxy = await engine.startContainer(withSidecar.pod, ident, withSidecar.pod.spec.initContainers![0]!, { ...base, type: 'init' });
    const app = await engine.startContainer(withSidecar.pod, ident, withSidecar.pod.spec.containers[0]!, { ...base, type: 'app' });
    // Who was asked to stop, with what grace, and whether the other's stop had ended by then.
    // The clock is the test's: the app's stop takes 1.5 s of it, however fast the machine.
    vi.useFakeTimers({ toFake: ['Date'] });
    const log: string[] = [];
    const stop = engine.stopContainer.bind(engine);
    engine.stopContainer = async (cid: string, grace = 0) => {
      log.push(`stop ${cid === app ? 'app' : 'proxy'} ${grace}`);
      if (cid === app) vi.advanceTimersByTime(1500);
      await stop(cid, grace);
      log.push(`stopped ${cid === app ? 'app' : 'proxy'}`);
    };
    const [observed] = await engine.listPods(withSidecar.uid);
    expect(await removePod(engine, observed!, deletionPlan(observed!, 4))).toBe(true);
    // The sidecar's grace is what is left of the plan's 4 s once the app has stopped.
    expect(log).toEqual(['stop app 4', 'stopped app', 'stop proxy 2.5', 'stopped proxy']);
    expect(engine.containers.has(proxy)).toBe(false);
    expect(engine.containers.size).toBe(0);
  });
});
