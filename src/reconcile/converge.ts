import type { DesiredPod } from '../manifest/types.js';
import type { ObservedPod } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import { PassThrough } from 'node:stream';
import type { PodStatusSummary } from '../status/pod-status.js';
import { failedContainer, heldSince, instancesMark, stuckContainer, stuckText, type Stuck } from './stuck.js';
import { computePodActions, hasActions } from './plan.js';
import { agentGet } from '../server/client.js';
import { ROLLED_BACK_VERSION, type V1Pod } from '../status/v1.js';
import { podVersion } from '../manifest/hash.js';
import { pruneDeadInstances } from './sync.js';

export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  });
  await Promise.all(workers);
  return out;
}

export interface WaitResult {
  ok: boolean;
  /** For each pod that did not settle well: why. */
  problems: { key: string; message: string }[];
}

/** Why a pod is not done yet, in one line: its phase and each container that is not Ready. */
export function describeNotReady(status: PodStatusSummary): string {
  const parts: string[] = [`phase ${status.phase}${status.reason ? ` (${status.reason})` : ''}`];
  for (const c of [...status.initContainers, ...status.containers]) {
    const kind = c.type === 'init' ? 'init container' : 'container';
    if (c.state === 'running') {
      if (!c.started) parts.push(`${kind} ${c.name} has not passed its startup probe`);
      else if (!c.ready) parts.push(`${kind} ${c.name} is not ready (readiness probe failing)`);
      continue;
    }
    const why =
      c.state === 'terminated'
        ? `terminated: ${c.reason ?? ''}, exit code ${c.exitCode ?? '?'}`
        : `waiting: ${c.reason ?? ''}${c.message ? ` (${c.message})` : ''}`;
    parts.push(`${kind} ${c.name} ${why}`);
  }
  return parts.join('; ');
}

/** Readiness as the agent reports it, for an apply that leaves the work to the agent. */
function agentVerdict(p: V1Pod | undefined, version: string): { done: boolean; failed: boolean; message: string } {
  if (!p) return { done: false, failed: false, message: 'not known to the agent yet' };
  // The agent went back from this very version (a health-gated update): no use waiting for it.
  if (p.status.reason === 'RolledBack' && p.metadata.annotations?.[ROLLED_BACK_VERSION] === version)
    return { done: true, failed: true, message: `rolled back: ${p.status.message ?? ''}` };
  const ready = p.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  const notReady = [...(p.status.initContainerStatuses ?? []), ...(p.status.containerStatuses ?? [])]
    .filter((c) => !c.ready)
    .map(
      (c) =>
        `container ${c.name} ${c.state.waiting ? `waiting: ${c.state.waiting.reason ?? ''}${c.state.waiting.message ? ` (${c.state.waiting.message})` : ''}` : c.state.terminated ? `terminated: ${c.state.terminated.reason ?? ''}, exit code ${c.state.terminated.exitCode}` : 'not ready'}`,
    );
  const message = [`phase ${p.status.phase}`, ...notReady].join('; ');
  if (p.status.phase === 'Failed') return { done: true, failed: true, message };
  return { done: p.status.phase === 'Succeeded' || (p.status.phase === 'Running' && ready), failed: false, message };
}

/** How long a pod must stay Ready, with no container restarted in it, before `apply` says it is. */
export const READY_HOLD_MS = 1000;

/** How long the agent must report a pod stuck before `apply` takes its word. */
const STUCK_CONFIRM_MS = 1000;

/** How long a crash loop may go unexplained (no exit code read yet) before it is reported as it is. */
const STUCK_EXPLAIN_MS = 2000;

/** Bounds on what a report quotes of a container's log: a container decides what it writes. */
const LOG_LINE_CHARS = 300;
const LOG_READ_CHARS = 64 * 1024;

/** Text from a container (its log) or about it (a registry's answer) as it may reach a terminal: no control characters, bounded. */
function printable(line: string): string {
  const clean = line.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '');
  return clean.length > LOG_LINE_CHARS ? `${clean.slice(0, LOG_LINE_CHARS)}…` : clean;
}

/** The last lines a container wrote (stdout and stderr), for a report on why it does not run. */
async function lastLogLines(rt: PodEngine, id: string, lines = 5): Promise<string[]> {
  let text = '';
  // Only the end is kept, however long the lines the engine hands over.
  const sink = new PassThrough().on('data', (c: Buffer) => (text = (text + c.toString()).slice(-LOG_READ_CHARS)));
  // A log that cannot be read costs the report its lines, never the verdict.
  await rt.writeLogs(id, { follow: false, timestamps: false, tail: lines }, sink, sink).catch(() => undefined);
  await new Promise((r) => setImmediate(r));
  return text
    .split('\n')
    .map(printable)
    .filter((l) => l.trim() !== '')
    .slice(-lines);
}

/** A report on a container, with the last lines of the log of its instance that ended, if it ran. */
async function withLastLines(rt: PodEngine, text: string, s: Stuck | undefined): Promise<string> {
  if (s?.exitCode === undefined || !s.logOf) return text;
  const lines = await lastLogLines(rt, s.logOf);
  const whose = s.init ? `init container ${s.container}` : `container ${s.container}`;
  return lines.length ? `${text}; the last lines of the log of ${whose}:\n${lines.map((l) => `    ${l}`).join('\n')}` : `${text}; the log of ${whose} is empty`;
}

export interface Verdict {
  done: boolean;
  failed: boolean;
  message: string;
  /** The pod's v1 status, to judge it stuck or steady by. */
  status?: V1Pod['status'];
  /** The status is not of the spec applied now (the agent has not taken it yet): not to be judged stuck. */
  unjudged?: boolean;
}

/**
 * One look at a pod: its verdict and the engine's view of it, or an error that ends its wait.
 * `heldSince`: the looker knows, from the engine's list, that the pod has held since then at the
 * latest, past the hold already (it read no container's start for it).
 */
export type PodLook = { verdict: Verdict; observed: ObservedPod | undefined; heldSince?: number } | { error: string };

/**
 * Who `apply` asks how its pods do: the agent (its view over its API), or, with no agent, the
 * agent's own pod worker run by `apply` (`agent/apply-driver.ts`), which also acts on the pods.
 */
export interface PodLooker {
  /** Whether `apply` drives the pods itself: a pod's Ready is then held since its containers started. */
  readonly drives: boolean;
  /** A look at each pod; a pod left out is not to be judged now (its worker is acting on it). `holdMs`: the wait's hold. */
  look(pods: DesiredPod[], holdMs?: number): Promise<Map<string, PodLook>>;
}

/** Readiness as the agent reports it over its API, for an apply that leaves the work to the agent. */
export function agentLooker(rt: PodEngine, stateDir: string): PodLooker {
  return {
    drives: false,
    async look(pods) {
      const observed = new Map((await rt.listPods()).map((x) => [x.uid, x]));
      const views = new Map(((await agentGet<{ items: V1Pod[] }>(stateDir, '/pods'))?.items ?? []).map((p) => [p.metadata.uid, p]));
      const looks = new Map<string, PodLook>();
      for (const d of pods) {
        const obs = observed.get(d.uid);
        const view = views.get(d.uid);
        const a = agentVerdict(view, podVersion(d.pod));
        // A failure is final whatever still runs (a rolled-back pod runs the older version).
        // Its status is judged stuck only once the agent runs the spec applied now.
        const current = view !== undefined && JSON.stringify(view.spec) === JSON.stringify(d.pod.spec);
        const verdict = {
          ...a,
          done: a.failed || (a.done && !hasActions(computePodActions(d, obs))),
          ...(view ? { status: view.status } : {}),
          ...(current ? {} : { unjudged: true }),
        };
        looks.set(d.uid, { verdict, observed: obs });
      }
      return looks;
    },
  };
}

/**
 * Waits until every pod is Ready (readiness probes honoured) and has stayed so for READY_HOLD_MS
 * with no container restarted, running what its manifest says now, or has succeeded; the looker
 * says how each does (and, with no agent, acts on it: the agent's worker). Stops early when a pod
 * fails or is stuck (a crash loop, an image that cannot be had, a container the engine refuses),
 * with its last exit code and log lines.
 */
export async function waitForPods(
  rt: PodEngine,
  pods: DesiredPod[],
  looker: PodLooker,
  o: { timeoutMs: number; pollMs?: number; holdMs?: number; seen?: Map<string, ObservedPod | undefined> },
): Promise<WaitResult> {
  const deadline = Date.now() + o.timeoutMs;
  const holdMs = o.holdMs ?? READY_HOLD_MS;
  const drives = looker.drives;
  const pending = new Map(pods.map((p) => [p.uid, p]));
  const problems: WaitResult['problems'] = [];
  const last = new Map<string, string>();
  /** The engine's view of each pod at its last look (undefined: none of it exists), for a prune after. */
  const seen = o.seen ?? new Map<string, ObservedPod | undefined>();
  /** Pods that look Ready: since when, with which instances. */
  const steady = new Map<string, { mark: string; since: number }>();
  /** Pods that look stuck: since when. */
  const stuckSince = new Map<string, number>();
  for (;;) {
    const looks = await looker.look([...pending.values()], holdMs);
    for (const d of [...pending.values()]) {
      const look = looks.get(d.uid);
      if (!look) continue;
      if ('error' in look) {
        pending.delete(d.uid);
        problems.push({ key: d.key, message: look.error });
        continue;
      }
      const obs = look.observed;
      seen.set(d.uid, obs);
      let verdict = look.verdict;
      last.set(d.uid, verdict.message);
      const stuck = !verdict.done && verdict.status && !verdict.unjudged ? stuckContainer(d, obs, verdict.status) : undefined;
      if (!stuck) stuckSince.delete(d.uid);
      else if (!stuckSince.has(d.uid)) stuckSince.set(d.uid, Date.now());
      const stuckFor = Date.now() - (stuckSince.get(d.uid) ?? 0);
      // A crash loop is reported with the exit code of the run that ended; the engine may be
      // caught between its runs without it (in place, mid-restart): a few more looks. The
      // agent's word is taken once it holds a moment: a reason left from before this apply
      // (a fixed manifest applied again) lasts only until its worker's next turn.
      const unexplained = stuck?.reason === 'CrashLoopBackOff' && stuck.exitCode === undefined && stuckFor < STUCK_EXPLAIN_MS;
      const unconfirmed = !drives && stuckFor < STUCK_CONFIRM_MS;
      if (stuck && !unexplained && !unconfirmed) {
        pending.delete(d.uid);
        problems.push({ key: d.key, message: await withLastLines(rt, printable(stuckText(stuck)), stuck) });
        continue;
      }
      // Ready is said of a pod that stayed Ready, the same instances all along: one that exits
      // right after it starts is caught restarting (anew, or in place by the engine).
      if (verdict.done && !verdict.failed && verdict.status?.phase === 'Running') {
        const mark = instancesMark(verdict.status);
        const seen = steady.get(d.uid);
        // Seen first now, or with other instances: when apply drives, held since they started (a
        // pod with no probe). With an agent, from now: its worker may still be on the pod, and a
        // command right after apply must find it done.
        const since = drives ? (look.heldSince ?? heldSince(d, verdict.status, Date.now())) : Date.now();
        const held = seen && seen.mark === mark ? seen : { mark, since };
        steady.set(d.uid, held);
        if (Date.now() - held.since < holdMs) verdict = { ...verdict, done: false };
      } else {
        steady.delete(d.uid);
      }
      if (verdict.done) {
        pending.delete(d.uid);
        if (verdict.failed)
          problems.push({ key: d.key, message: await withLastLines(rt, `failed: ${verdict.message}`, verdict.status && failedContainer(verdict.status)) });
      }
    }
    if (pending.size === 0) break;
    if (Date.now() >= deadline) {
      for (const d of pending.values())
        problems.push({ key: d.key, message: `not ready after ${Math.round(o.timeoutMs / 1000)}s: ${last.get(d.uid) ?? 'no status'}` });
      break;
    }
    await new Promise((r) => setTimeout(r, o.pollMs ?? 250));
  }
  return { ok: problems.length === 0, problems };
}

/**
 * Keeps one dead instance per container of the given pods (for `logs --previous`), removes the
 * rest. `known`: the pods as the wait's last look saw them, which needs no list of the engine
 * again; a pod not in it (not waited on) is listed.
 */
export async function pruneAfterApply(rt: PodEngine, uids: Set<string>, known: ReadonlyMap<string, ObservedPod | undefined> = new Map()): Promise<void> {
  if (uids.size === 0) return;
  const unknown = [...uids].some((uid) => !known.has(uid));
  const listed = unknown ? await rt.listPods() : [];
  const observed = [...uids].flatMap((uid) => {
    const o = known.has(uid) ? known.get(uid) : listed.find((p) => p.uid === uid);
    return o ? [o] : [];
  });
  await Promise.all(observed.map((p) => pruneDeadInstances(rt, p)));
}
