import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { ApplyDriver } from '../../src/agent/apply-driver.js';
import { planApply } from '../../src/reconcile/plan.js';
import { LABEL } from '../../src/runtime/labels.js';
import { FakeEngine } from '../fakes/fake-engine.js';
import { MemorySource } from '../fakes/memory-source.js';
import { desired } from '../fixtures/pods.js';

// Many pods deleted together spend their grace periods side by side (issue 33): twelve pods
// whose containers ignore SIGTERM, each stop its whole grace period on the fake engine. Each stop
// is held until all twelve have begun, so the deletions finish only if every grace period runs
// beside the others: a worker pool, a slot held for a grace period or a loop of deletions would
// leave the later stops unbegun, and the first ones waiting for them. No clock is read.

const PODS = 12;
/** The kubelet's minimum grace period: a shorter one is raised to it unless given outright. */
const GRACE_S = 2;

const manifest = (name: string): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: overlap}
spec:
  terminationGracePeriodSeconds: ${GRACE_S}
  containers:
  - {name: c, image: busybox:1}
`;

const names = Array.from({ length: PODS }, (_, i) => `p${i}`);
const dirs: string[] = [];
const stops: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function engine(): FakeEngine {
  const stateDir = mkdtempSync(join(tmpdir(), 'podrun-overlap-'));
  dirs.push(stateDir);
  const e = new FakeEngine({ stateDir });
  e.behaviour = () => ({ ignoresTerm: true });
  return e;
}

/** Holds every stop until all PODS of them have begun; how many have. */
function stopsTogether(e: FakeEngine): () => number {
  const stop = e.stopContainer.bind(e);
  let begun = 0;
  let open!: () => void;
  const all = new Promise<void>((r) => (open = r));
  e.stopContainer = async (id, grace) => {
    if (++begun === PODS) open();
    await all;
    return stop(id, grace);
  };
  return () => begun;
}

const apps = (e: FakeEngine): number => [...e.containers.values()].filter((c) => c.state === 'running' && c.labels[LABEL.containerType] === 'app').length;

async function until(what: string, ok: () => boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('deleting many pods at once (issue 33)', () => {
  it('the agent: the grace periods of pods no longer declared run side by side', async () => {
    const e = engine();
    const source = new MemorySource();
    const agent = new Agent({
      runtime: { stateDir: e.options.stateDir, pauseImage: 'pause:fake' },
      engine: e,
      manifestDirs: [],
      manifestUrls: [],
      sources: [source],
      statsPeriodMs: 0,
      relistMs: 3_600_000,
      resyncMs: 3_600_000,
      gc: { imageGc: false, periodMs: 3_600_000 },
    });
    stops.push(() => agent.stop());
    await agent.start();
    source.declare(...names.map(manifest));
    await until('every pod running', () => apps(e) === PODS);

    const begun = stopsTogether(e);
    source.declare();
    await until('every stop begun before any ended', () => begun() === PODS);
    await until('every pod gone', () => e.podCount() === 0);
    expect(e.calls.get('stop')).toBe(PODS);
  });

  it('apply --prune: the grace periods of the pods a set no longer has run side by side', async () => {
    const e = engine();
    const driver = new ApplyDriver(e, 'set-1');
    stops.push(() => driver.stop());
    const pods = names.map((n) => desired(manifest(n)));
    await driver.apply(planApply(pods, await e.listPods()));
    expect(apps(e)).toBe(PODS);

    const begun = stopsTogether(e);
    const pruning = driver.apply(planApply([], await e.listPods(), { applySet: 'set-1' }));
    await until('every stop begun before any ended', () => begun() === PODS);
    const outcomes = await pruning;
    expect(outcomes.every((o) => !('error' in o))).toBe(true);
    expect(e.podCount()).toBe(0);
    expect(e.calls.get('stop')).toBe(PODS);
  });
});
