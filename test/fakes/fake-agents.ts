import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import type { FakeEngine } from './fake-engine.js';
import type { MemorySource } from './memory-source.js';

/**
 * Agents on the fake engine for one test file: each made with its sources and no timers that would
 * act on their own (relist, resync, GC an hour away), and all stopped, with their state
 * directories removed, after each test.
 */
export function fakeAgents(): {
  stateDir: () => string;
  newAgent: (stateDir: string, engine: FakeEngine, sources: MemorySource[]) => Agent;
  /** An agent stopped by the test itself: not stopped again after it. */
  stopped: (a: Agent) => Promise<void>;
} {
  const dirs: string[] = [];
  const agents: Agent[] = [];
  afterEach(async () => {
    for (const a of agents.splice(0)) await a.stop();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return {
    stateDir: () => {
      const d = mkdtempSync(join(tmpdir(), 'podrun-agent-'));
      dirs.push(d);
      return d;
    },
    newAgent: (stateDir, engine, sources) => {
      const agent = new Agent({
        runtime: { stateDir, pauseImage: 'pause:fake' },
        engine,
        manifestDirs: [],
        manifestUrls: [],
        sources,
        statsPeriodMs: 0,
        relistMs: 3_600_000,
        resyncMs: 3_600_000,
        gc: { imageGc: false, periodMs: 3_600_000 },
      });
      agents.push(agent);
      return agent;
    },
    stopped: async (a) => {
      await a.stop();
      agents.splice(agents.indexOf(a), 1);
    },
  };
}

/** Polls `ok` until it holds; throws naming `what` past the timeout. */
export async function until(what: string, ok: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}
