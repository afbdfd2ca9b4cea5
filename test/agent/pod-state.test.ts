import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { LABEL } from '../../src/runtime/labels.js';
import { FakeEngine } from '../fakes/fake-engine.js';
import { MemorySource } from '../fakes/memory-source.js';

// The agent over years: one pod crash-looping for 10,000 restarts, then 1,000 pods added and
// removed, on the in-memory engine. What the agent keeps per pod stays bounded while the pod
// lives, and is nothing once it is gone.

const POD = (name: string): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: state}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - {name: c, image: busybox:fake}
`;

const dirs: string[] = [];
const agents: Agent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) await a.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function agentOnFake(): Promise<{ agent: Agent; engine: FakeEngine; source: MemorySource }> {
  const stateDir = mkdtempSync(join(tmpdir(), 'podrun-state-'));
  dirs.push(stateDir);
  const engine = new FakeEngine({ stateDir });
  const source = new MemorySource();
  const agent = new Agent({
    runtime: { stateDir, pauseImage: 'pause:fake' },
    engine,
    manifestDirs: [],
    manifestUrls: [],
    sources: [source],
    // No back-off: every crash is restarted at once, so 10,000 of them take seconds.
    backoff: { initialMs: 0, maxMs: 0, resetMs: 600_000 },
    statsPeriodMs: 0,
    relistMs: 3_600_000,
    resyncMs: 3_600_000,
    gc: { imageGc: false, periodMs: 3_600_000 },
  });
  agents.push(agent);
  await agent.start();
  return { agent, engine, source };
}

/** Lets the agent act on everything it was told, until no worker is busy. */
async function settle(agent: Agent): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await agent.idle();
    await new Promise((r) => setTimeout(r, 1));
  }
}

async function until(what: string, ok: () => boolean, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

const total = (s: Record<string, number>): number => Object.values(s).reduce((a, b) => a + b, 0);
const starts = (engine: FakeEngine): number => [...engine.containers.values()].filter((c) => c.labels[LABEL.containerName] === 'c').reduce((n, c) => Math.max(n, Number(c.labels[LABEL.restartCount])), 0);

describe('the agent\'s state per pod', () => {
  it('stays bounded through 10,000 crash/restart cycles of one pod, and is nothing once the pod is gone', { timeout: 120_000 }, async () => {
    const { agent, engine, source } = await agentOnFake();
    engine.behaviour = ({ container }) => (container === 'c' ? { exitCode: 1 } : {});
    source.declare(POD('crashy'));
    await until('a few restarts', () => starts(engine) >= 100);
    const early = agent.podState();
    await until('10,000 restarts', () => starts(engine) >= 10_000, 110_000);
    const late = agent.podState();
    // The same size after 100 restarts and after 10,000: nothing grows with the instances.
    expect(total(late)).toBeLessThanOrEqual(total(early) + 2);
    expect(late.records).toBeLessThanOrEqual(8);
    expect(late.cacheRecords).toBeLessThanOrEqual(4);

    engine.behaviour = () => ({});
    await settle(agent);
    source.declare();
    await until('the pod to be deleted', () => engine.podCount() === 0);
    await settle(agent);
    expect(agent.podState()).toEqual(Object.fromEntries(Object.keys(late).map((k) => [k, 0])));
  });

  it('is nothing after 1,000 pods were added and removed', { timeout: 120_000 }, async () => {
    const { agent, engine, source } = await agentOnFake();
    for (let i = 0; i < 1000; i++) {
      source.declare(POD(`p${i}`));
      await until(`pod p${i} to run`, () => [...engine.containers.values()].some((c) => c.state === 'running' && c.labels[LABEL.podName] === `p${i}` && c.labels[LABEL.containerName] === 'c'));
      source.declare();
      await until(`pod p${i} to go`, () => engine.podCount() === 0);
    }
    await settle(agent);
    const s = agent.podState();
    expect(s).toEqual(Object.fromEntries(Object.keys(s).map((k) => [k, 0])));
  });
});
