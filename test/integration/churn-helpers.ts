/**
 * A watched directory in heavy churn (issue 28): many small pods created, rewritten and deleted
 * over a short time, and what the agent's log and the engine's events say about the deletions.
 * Shared by `agent-churn.test.ts` and the bench's churn scenario.
 */
import { unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LABEL } from '../../src/runtime/labels.js';
import { TEST_IMAGE, type EngineEventRecord } from './helpers.js';

// The bench's churn scenario reads the engine's events through here, as the test does.
export { followEvents, type EngineEventRecord } from './helpers.js';

/**
 * A small, cheap pod: one busybox container that ends at once on SIGTERM (so a stop costs no grace
 * period); `version` is in its env, so each rewrite replaces the container.
 */
export function churnPod(ns: string, name: string, version: number): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']
    env: [{name: VERSION, value: "${version}"}]
`;
}

export interface ChurnOptions {
  /** When the files are first written, spread evenly over this long. */
  spreadMs: number;
  /** Between one write of a file and the next (its rewrites, then its removal). */
  gapMs: number;
  /** Writes per file before it is removed: the create and its rewrites. */
  writes: number;
}

/**
 * Writes each pod's file, rewrites it `writes - 1` times and removes it, the files interleaved;
 * resolves with when each file was removed (Date.now() right after the unlink), by pod name.
 */
export async function churnDirectory(dir: string, ns: string, names: string[], o: ChurnOptions): Promise<Map<string, number>> {
  const steps: { at: number; name: string; write: number }[] = [];
  names.forEach((name, i) => {
    const start = names.length > 1 ? (o.spreadMs * i) / (names.length - 1) : 0;
    for (let w = 0; w <= o.writes; w++) steps.push({ at: start + w * o.gapMs, name, write: w });
  });
  steps.sort((a, b) => a.at - b.at);
  const removed = new Map<string, number>();
  const t0 = Date.now();
  for (const s of steps) {
    const wait = t0 + s.at - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const file = join(dir, `${s.name}.yaml`);
    if (s.write < o.writes) writeFileSync(file, churnPod(ns, s.name, s.write));
    else {
      unlinkSync(file);
      removed.set(s.name, Date.now());
    }
  }
  return removed;
}

export interface ChurnReport {
  /** From each file's removal to its pod's "deleted" log line, for pods the engine had something of. */
  deletionMs: Map<string, number>;
  /** From each file's removal to its pod's "no longer declared; deleting" line: the deletion's start. */
  startMs: Map<string, number>;
  /** Pods the engine had containers of, with no "deleted" line. */
  notDeleted: string[];
  /** Containers created later than `madeAfterMs` after their file was removed. */
  lateMade: { pod: string; action: string; afterMs: number }[];
  /** Starts (of containers created in time) that the engine carried out later than that. */
  lateStarts: { pod: string; action: string; afterMs: number }[];
  /** What the engine made of each pod, counted by its create events: sandboxes and containers. */
  made: Map<string, { sandboxes: number; containers: number }>;
  /** Log lines of failed creates and starts. */
  startErrors: string[];
  /** Pods that had a container on the engine at some point. */
  reached: number;
}

/** Times in the agent's text log (`<ISO time> <LEVEL> <message>`) of `pod <ns>/<name>: <what>` (the first). */
function loggedAt(log: string, ns: string, what: string): Map<string, number> {
  const out = new Map<string, number>();
  const re = new RegExp(`^(\\S+)\\s+INFO\\s+pod ${ns}/(\\S+): ${what}$`, 'gm');
  for (const m of log.matchAll(re)) if (!out.has(m[2]!)) out.set(m[2]!, Date.parse(m[1]!));
  return out;
}

/**
 * Judges a churn run from the agent's log and the engine's events of the churned pods.
 * `madeAfterMs`: how long after a file's removal a create or start may still come (the agent is
 * told after its removal grace, and a call already sent then may still finish).
 */
export function churnReport(log: string, events: EngineEventRecord[], ns: string, removed: Map<string, number>, madeAfterMs: number): ChurnReport {
  const deleted = loggedAt(log, ns, 'deleted');
  const started = loggedAt(log, ns, 'no longer declared; deleting');
  const reachedPods = new Set<string>();
  const lateMade: ChurnReport['lateMade'] = [];
  const lateStarts: ChurnReport['lateMade'] = [];
  for (const e of events) {
    const pod = e.attributes[LABEL.podName];
    const gone = pod ? removed.get(pod) : undefined;
    if (!pod || gone === undefined) continue;
    if (e.action === 'create') reachedPods.add(pod);
    // Created: what the issue bounds. A start of a container created in time is the engine finishing
    // a call already sent (its network set-up waits behind everyone else's on a loaded engine): the
    // deletion removes it, so it is counted apart, not as made late.
    if (e.action === 'create' && e.timeMs > gone + madeAfterMs) lateMade.push({ pod, action: e.action, afterMs: Math.round(e.timeMs - gone) });
    if (e.action === 'start' && e.timeMs > gone + madeAfterMs) lateStarts.push({ pod, action: e.action, afterMs: Math.round(e.timeMs - gone) });
  }
  const made = new Map<string, { sandboxes: number; containers: number }>();
  for (const e of events) {
    const pod = e.attributes[LABEL.podName];
    if (!pod || !removed.has(pod) || e.action !== 'create') continue;
    const m = made.get(pod) ?? { sandboxes: 0, containers: 0 };
    if (e.attributes[LABEL.containerType] === 'sandbox') m.sandboxes++;
    else m.containers++;
    made.set(pod, m);
  }
  const deletionMs = new Map<string, number>();
  const startMs = new Map<string, number>();
  const notDeleted: string[] = [];
  for (const pod of reachedPods) {
    const start = started.get(pod);
    if (start !== undefined) startMs.set(pod, start - removed.get(pod)!);
    const at = deleted.get(pod);
    if (at === undefined) notDeleted.push(pod);
    else deletionMs.set(pod, at - removed.get(pod)!);
  }
  const startErrors = log.split('\n').filter((l) => /RunContainerError|CreateContainerError|bind source path does not exist/.test(l));
  return { deletionMs, startMs, notDeleted, lateMade, lateStarts, made, startErrors, reached: reachedPods.size };
}

/** Median, 95th percentile (nearest rank) and largest of some times. */
export function spread(ms: number[]): { median: number; p95: number; max: number } {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number): number => (s.length ? s[Math.max(0, Math.ceil(q * s.length) - 1)]! : NaN);
  return { median: s.length ? s[Math.floor((s.length - 1) / 2)]! : NaN, p95: at(0.95), max: s.length ? s[s.length - 1]! : NaN };
}
