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
// whose containers ignore SIGTERM, each stop its whole grace period on the fake engine, are gone
// in about one grace period, not one per pool's worth of pods. A worker pool, a slot held for a
// grace period or a loop of deletions would make it several.

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

const apps = (e: FakeEngine): number => [...e.containers.values()].filter((c) => c.state === 'running' && c.labels[LABEL.containerType] === 'app').length;

async function until(what: string, ok: () => boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('deleting many pods at once (issue 33)', () => {
  it('the agent: pods no longer declared are gone in about one grace period, not several', async () => {
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

    const t0 = Date.now();
    source.declare();
    await until('every pod gone', () => e.podCount() === 0);
    // Serial, or four at a time, would take 12 or 3 grace periods; room is left for a loaded machine.
    expect(Date.now() - t0).toBeLessThan(2 * GRACE_S * 1000);
    expect(e.calls.get('stop')).toBe(PODS);
  });

  it('apply --prune: the pods a set no longer has are gone in about one grace period', async () => {
    const e = engine();
    const driver = new ApplyDriver(e, 'set-1');
    stops.push(() => driver.stop());
    const pods = names.map((n) => desired(manifest(n)));
    await driver.apply(planApply(pods, await e.listPods()));
    expect(apps(e)).toBe(PODS);

    const t0 = Date.now();
    const outcomes = await driver.apply(planApply([], await e.listPods(), { applySet: 'set-1' }));
    expect(outcomes.every((o) => !('error' in o))).toBe(true);
    expect(e.podCount()).toBe(0);
    expect(Date.now() - t0).toBeLessThan(2 * GRACE_S * 1000);
  });
});
