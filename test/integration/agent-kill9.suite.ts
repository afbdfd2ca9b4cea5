import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { containerHash, sandboxHash } from '../../src/manifest/hash.js';
import { loadManifestText } from '../../src/manifest/load.js';
import type { DesiredPod } from '../../src/manifest/types.js';
import type { AgentProcess } from './agent-helpers.js';
import type { EngineBed } from './engine-beds.js';
import { TEST_IMAGE, unique, until } from './helpers.js';

// kill -9 of the agent at random points of a reconcile: after each, a new agent must converge to
// the desired set with no duplicate or orphan container, and without restarting any container
// that was healthy and whose spec did not change. PODRUN_KILL_TRIALS sets how many (50 outside
// CI; CI runs fewer to stay within the suite's time).
const TRIALS = Number(process.env.PODRUN_KILL_TRIALS ?? (process.env.CI ? 12 : 50));

/** The kill -9 trials on one engine bed. */
export function kill9Suite(bed: EngineBed): void {
  const ns = unique('kill9');
  const dir = join(bed.world.dir, 'manifests');
  let agent: AgentProcess | undefined;
  afterAll(async () => {
    await agent?.kill9();
  });

  /** A deterministic random sequence, so a failing trial can be replayed. */
  function rng(seed: number): () => number {
    let s = seed >>> 0;
    return () => {
      s = (s * 1664525 + 1013904223) >>> 0;
      return s / 2 ** 32;
    };
  }

  // A process that stops at once on SIGTERM, so the trials spend their time on the reconcile.
  const WORKER = `[sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']`;

  interface PodState {
    present: boolean;
    env: number;
    hostname: number;
  }

  function manifest(name: string, s: PodState): string {
    return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 2
  hostname: h${s.hostname}
  initContainers:
  - {name: init, image: ${TEST_IMAGE}, command: [sh, -c, 'exit 0']}
  containers:
  - {name: a, image: ${TEST_IMAGE}, command: ${WORKER}}
  - {name: b, image: ${TEST_IMAGE}, command: ${WORKER}, env: [{name: V, value: 'v${s.env}'}]}
`;
  }

  function desiredOf(name: string, s: PodState): DesiredPod {
    const r = loadManifestText({ file: `${name}.yaml`, source: `file:${join(dir, `${name}.yaml`)}`, text: manifest(name, s) });
    if (!r.pods[0]) throw new Error(r.issues.map((i) => i.message).join('; '));
    return r.pods[0];
  }

  type Container = { id: string; pod: string; name: string; type: string; hash: string; state: string };

  async function containers(): Promise<Container[]> {
    return (await bed.containers(ns)).map((c) => ({ id: c.id, pod: c.podName, name: c.name, type: c.type, hash: c.hash, state: c.state }));
  }

  /** Why the engine does not match the desired pods yet, or undefined when it does. */
  function divergence(all: Container[], want: Map<string, DesiredPod>): string | undefined {
    for (const c of all) {
      if (!want.has(c.pod)) return `orphan: ${c.pod}/${c.name} (${c.state})`;
      if (c.state === 'created') return `created but never started: ${c.pod}/${c.name}`;
    }
    for (const [name, d] of want) {
      const mine = all.filter((c) => c.pod === name);
      const sandboxes = mine.filter((c) => c.type === 'sandbox' && c.state === 'ready');
      if (sandboxes.length !== 1 || sandboxes[0]!.hash !== sandboxHash(d.pod)) return `${name}: ${sandboxes.length} ready sandboxes of the right spec`;
      for (const spec of d.pod.spec.containers) {
        const up = mine.filter((c) => c.name === spec.name && c.state === 'running');
        if (up.length !== 1) return `${name}/${spec.name}: ${up.length} running instances`;
        if (up[0]!.hash !== containerHash(d.pod, spec)) return `${name}/${spec.name}: running an old spec`;
      }
      const dead = mine.filter((c) => c.name === 'init' && c.state === 'exited');
      if (dead.length === 0) return `${name}/init never ran`;
    }
    return undefined;
  }

  describe(`${bed.tag} kill -9 of the agent mid-reconcile (${TRIALS} trials)`, () => {
    it('converges every time: no duplicate, no orphan, no healthy container restarted', { timeout: 60_000 + TRIALS * 10_000 }, async () => {
      mkdirSync(dir);
      const names = ['p0', 'p1', 'p2'].map((n) => `${n}-${ns.slice(-4)}`);
      const states = new Map<string, PodState>(names.map((n) => [n, { present: true, env: 0, hostname: 0 }]));
      const write = (): void => {
        for (const [n, s] of states) {
          if (s.present) writeFileSync(join(dir, `${n}.yaml`), manifest(n, s));
          else rmSync(join(dir, `${n}.yaml`), { force: true });
        }
      };
      const want = (): Map<string, DesiredPod> => new Map([...states].filter(([, s]) => s.present).map(([n, s]) => [n, desiredOf(n, s)]));
      const converge = async (what: string): Promise<Container[]> => {
        const w = want();
        return until(
          what,
          async () => {
            const all = await containers();
            return divergence(all, w) === undefined ? all : undefined;
          },
          60_000,
        ).catch(async (err: Error) => {
          throw new Error(`${err.message}: ${divergence(await containers(), w) ?? '?'}\n${agent?.logs() ?? ''}`);
        });
      };

      write();
      agent = bed.agent(['--manifest-dir', dir]);
      await agent.started();
      let before = await converge('the first convergence');
      await agent.stop();

      const random = rng(Number(process.env.PODRUN_KILL_SEED ?? 20261130));
      const kinds: string[] = [];
      // Where the kills landed: before the agent started, while it was acting, or once it was idle.
      const landed = { starting: 0, acting: 0, idle: 0 };
      for (let trial = 0; trial < TRIALS; trial++) {
        // One change to the desired set: a container edit, a pod-level edit, a pod gone or back, or none.
        const target = names[Math.floor(random() * names.length)]!;
        const s = states.get(target)!;
        const kind = ['container', 'pod', 'presence', 'none'][Math.floor(random() * 4)]!;
        kinds.push(kind);
        if (kind === 'container' && s.present) s.env++;
        else if (kind === 'pod' && s.present) s.hostname++;
        else if (kind === 'presence') s.present = !s.present;
        write();
        const untouched = new Set(before.filter((c) => (c.state === 'running' || c.state === 'ready') && c.pod !== target).map((c) => c.id));

        agent = bed.agent(['--manifest-dir', dir]);
        await new Promise((r) => setTimeout(r, 150 + random() * 1500));
        await agent.kill9();
        const killedLog = agent.logs();
        const acted = /: (creating|recreating|starting|no longer declared)/.test(killedLog);
        const settled = acted && /Started container|deleting/.test(killedLog) && !/: (creating|recreating|starting)[^\n]*\n[^\n]*$/.test(killedLog);
        if (!killedLog.includes('agent started')) landed.starting++;
        else if (acted && !settled) landed.acting++;
        else landed.idle++;

        agent = bed.agent(['--manifest-dir', dir]);
        const after = await converge(`trial ${trial} (${kind} on ${target}) to converge`);
        // Nothing of the pods this trial did not touch was restarted.
        const lost = [...untouched].filter((id) => !after.some((c) => c.id === id && (c.state === 'running' || c.state === 'ready')));
        expect(lost, `trial ${trial}: healthy containers of untouched pods were replaced`).toEqual([]);
        await agent.stop();
        before = after;
      }
      expect(kinds.length).toBe(TRIALS);
      console.log(`kill -9 landed: ${JSON.stringify(landed)} over ${TRIALS} trials`);
      // The point is to kill it while it works: a fair share of the kills must land there.
      expect(landed.acting + landed.starting).toBeGreaterThanOrEqual(Math.ceil(TRIALS / 4));
    });
  });
}
