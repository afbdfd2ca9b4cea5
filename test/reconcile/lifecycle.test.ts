import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { killContainer } from '../../src/reconcile/lifecycle.js';
import { desired } from '../fixtures/pods.js';
import { FakeEngine } from '../fakes/fake-engine.js';

// lifecycle.ts on the fake engine, whose containers may ignore SIGTERM and then run out the grace
// period they are given: the kubelet's stop, its minimum grace, and a grace given outright.

const dirs: string[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const d = desired(`apiVersion: v1
kind: Pod
metadata: {name: stubborn, namespace: ns}
spec:
  terminationGracePeriodSeconds: 0
  containers: [{name: c, image: busybox}]
`);

/** The pod running on a fake engine whose container ignores SIGTERM. */
async function stubborn(): Promise<{ engine: FakeEngine; id: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'podrun-lifecycle-'));
  dirs.push(dir);
  const engine = new FakeEngine({ stateDir: dir });
  engine.behaviour = () => ({ ignoresTerm: true });
  const ident = { uid: d.uid, name: 'stubborn', namespace: 'ns', source: d.origin.source };
  const sandbox = await engine.createSandbox(d.pod, ident, 0, 'h', false);
  const id = await engine.startContainer(d.pod, ident, d.pod.spec.containers[0]!, {
    type: 'app',
    restartCount: 0,
    hash: 'h',
    sandbox,
    volumes: new Map(),
    engineRestarts: false,
    imageReady: true,
  });
  return { engine, id };
}

async function killed(exact: boolean): Promise<{ at1999: string; at2000: string; exitCode: number | undefined }> {
  vi.useFakeTimers();
  const { engine, id } = await stubborn();
  const c = (await engine.listPods(d.uid))[0]!.containers[0]!;
  const kill = killContainer(engine, c, undefined, 0, { defaultHost: '127.0.0.1', reason: 'test', ...(exact ? { exact } : {}) });
  await vi.advanceTimersByTimeAsync(1999);
  const at1999 = engine.containers.get(id)!.state;
  await vi.advanceTimersByTimeAsync(1);
  const at2000 = engine.containers.get(id)!.state;
  await kill;
  return { at1999, at2000, exitCode: engine.containers.get(id)!.exitCode };
}

describe('killContainer on a container that ignores SIGTERM', () => {
  it("gives it the kubelet's minimum of 2 s for a grace period of 0, then kills it (137)", async () => {
    expect(await killed(false)).toEqual({ at1999: 'running', at2000: 'exited', exitCode: 137 });
  });

  it('kills it at once when the grace period was given outright (delete --grace-period 0)', async () => {
    expect(await killed(true)).toEqual({ at1999: 'exited', at2000: 'exited', exitCode: 137 });
  });
});
