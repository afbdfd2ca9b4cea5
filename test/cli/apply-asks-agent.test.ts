import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { acquireLock } from '../../src/agent/lock.js';
import { applyCommand, applySetId, type ApplyOptions } from '../../src/cli/apply.js';
import type { GlobalOptions, Io } from '../../src/cli/context.js';
import type { ApplyAnswer, ApplyAsk } from '../../src/server/client.js';
import { startServer, type AgentView } from '../../src/server/server.js';
import { appliedDir } from '../../src/sources/applied-sets.js';
import { FakeEngine } from '../fakes/fake-engine.js';

// `podrun apply` with an agent holding the state directory's lock asks it over its socket: the
// pods as loaded here, where each came from, --prune and --dry-run. It prints the plan the agent
// answers, writes no applied set and changes no pod; an agent that refuses is said, with
// "nothing was applied". The agent here is its socket alone, answering as each test says.

const held = vi.hoisted(() => ({ engine: undefined as unknown }));
vi.mock('../../src/cli/context.js', async (original) => ({
  ...(await original<typeof import('../../src/cli/context.js')>()),
  makeRuntime: async () => held.engine,
}));

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const WEB = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: c, image: busybox}
`;

// Not what this CLI would plan on its empty engine (created): the plan printed is the agent's.
const PLAN: ApplyAnswer = {
  plans: [
    {
      key: 'default/web',
      verdict: 'updated',
      actions: { containersToKill: [{ name: 'c', reason: 'its spec changed' }], containersToStart: [{ name: 'c', reason: 'its spec changed' }] },
    },
  ],
};

/** A state directory whose lock an "agent" holds, its socket answering `answer`; a manifest file; the CLI's output kept. */
async function withAgent(answer: (ask: ApplyAsk) => Promise<ApplyAnswer>): Promise<{
  stateDir: string;
  file: string;
  engine: FakeEngine;
  asked: ApplyAsk[];
  apply: (o?: Partial<ApplyOptions>) => Promise<{ code: number; out: string[]; err: string[] }>;
}> {
  const stateDir = mkdtempSync(join(tmpdir(), 'podrun-apply-agent-'));
  cleanups.push(() => rmSync(stateDir, { recursive: true, force: true }));
  const file = join(stateDir, 'web.yaml');
  writeFileSync(file, WEB);
  const engine = new FakeEngine({ stateDir });
  held.engine = engine;
  cleanups.push(await acquireLock(stateDir, { kind: 'agent' }));
  const asked: ApplyAsk[] = [];
  const none = (): Promise<never> => Promise.reject(new Error('not asked here'));
  const view: AgentView = {
    healthy: () => true,
    unhealthy: () => undefined,
    podList: none,
    events: () => [],
    metrics: none,
    containerMetrics: none,
    node: none,
    statsSummary: none,
    collect: none,
    collectImages: none,
    deletePods: none,
    pullImages: none,
    applyPods: (ask) => {
      asked.push(ask);
      return answer(ask);
    },
  };
  cleanups.push(await startServer(view, { stateDir }));
  const apply = async (o: Partial<ApplyOptions> = {}): Promise<{ code: number; out: string[]; err: string[] }> => {
    const out: string[] = [];
    const err: string[] = [];
    const io: Io = { out: (l) => out.push(l), err: (l) => err.push(l), stdout: new PassThrough(), stderr: new PassThrough(), isTTY: false };
    const g = { stateDir, pauseImage: 'pause:fake', network: 'bridge' } as GlobalOptions;
    const code = await applyCommand([file], { dryRun: false, prune: false, wait: false, timeoutMs: 10_000, ...o }, g, io);
    return { code, out, err };
  };
  return { stateDir, file, engine, asked, apply };
}

/** The fake engine's calls that change something (reads are list, inspect, ping, events). */
const changes = (engine: FakeEngine): string[] => [...engine.calls.keys()].filter((c) => !['list', 'inspect', 'ping', 'events'].includes(c));

describe('apply with an agent running', () => {
  it('asks the agent with the pods as loaded, prints the plan it answers, and records and changes nothing itself', async () => {
    const { stateDir, file, engine, asked, apply } = await withAgent(async () => PLAN);
    const r = await apply({ prune: true });
    expect(r.code, r.err.join('\n')).toBe(0);
    expect(asked).toHaveLength(1);
    const [ask] = asked;
    expect({ ...ask, pods: ask?.pods.map((p) => `${p.source} ${p.pod.kind} ${p.pod.metadata.name}`) }).toEqual({
      applySet: applySetId([file]),
      pods: [`file:${file} Pod web`],
      prune: true,
      dryRun: false,
    });
    // Loaded and defaulted here: the agent validates it again, but is sent what `apply` read.
    expect(ask?.pods[0]?.pod.spec.containers[0]?.imagePullPolicy).toBe('Always');
    expect(r.out).toEqual(['pod/default/web updated', '  container c: replaced (its spec changed)']);
    expect(r.err).toEqual([`podrun: the agent supervising ${stateDir} carries out the plan`]);
    expect(existsSync(appliedDir(stateDir))).toBe(false);
    expect(changes(engine)).toEqual([]);
  });

  it('with --dry-run, asks for the plan only', async () => {
    const { stateDir, asked, apply } = await withAgent(async () => PLAN);
    const r = await apply({ dryRun: true });
    expect(r.code, r.err.join('\n')).toBe(0);
    expect(asked.map((a) => a.dryRun)).toEqual([true]);
    expect(r.out).toEqual(['pod/default/web updated (dry run)', '  container c: replaced (its spec changed)']);
    expect(r.err).toEqual([]);
    expect(existsSync(appliedDir(stateDir))).toBe(false);
  });

  it('says why an agent refused the set, or could not record it, and that nothing was applied', async () => {
    let fail: () => Promise<ApplyAnswer> = async () => ({ refused: ['/m/web.yaml (pods[0] as sent):1:9 spec.hostNetwork: not allowed on this node'] });
    const { stateDir, apply } = await withAgent(() => fail());
    const refused = await apply();
    expect(refused.code).toBe(1);
    expect(refused.out).toEqual([]);
    expect(refused.err).toEqual([
      `podrun: the agent supervising ${stateDir} refused the set:`,
      '/m/web.yaml (pods[0] as sent):1:9 spec.hostNetwork: not allowed on this node',
      'podrun: nothing was applied',
    ]);
    fail = () => Promise.reject(new Error(`cannot record the applied set in ${stateDir}/applied: ENOSPC: no space left on device`));
    const full = await apply();
    expect(full.code).toBe(1);
    expect(full.err).toEqual([
      `podrun: the agent supervising ${stateDir} did not take the set: cannot record the applied set in ${stateDir}/applied: ENOSPC: no space left on device`,
      'podrun: nothing was applied',
    ]);
  });
});
