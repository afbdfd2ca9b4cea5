import type { DesiredPod } from '../manifest/types.js';
import type { ObservedPod } from '../runtime/observed.js';
import type { PodRuntime } from '../runtime/runtime.js';
import { settled, type PodStatusSummary } from '../status/pod-status.js';
import { computePodActions, hasActions, type PodPlan } from './plan.js';
import { executePodActions, pruneDeadInstances, type SyncOptions } from './sync.js';

/** At most this many pods are synced at once: the engine gains little past two or three. */
const POD_CONCURRENCY = 4;

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

export interface PodOutcome {
  key: string;
  error?: string;
}

function graceOf(o: ObservedPod): number {
  return o.spec?.spec.terminationGracePeriodSeconds ?? 30;
}

/** Carries out a plan once: each pod's actions, deletions included. Errors stay per pod. */
export async function executePlan(rt: PodRuntime, plans: PodPlan[], o: SyncOptions): Promise<PodOutcome[]> {
  return mapLimit(plans, POD_CONCURRENCY, async (p): Promise<PodOutcome> => {
    try {
      if (p.verdict === 'deleted') {
        if (p.observed) await rt.removePod(p.observed, graceOf(p.observed));
      } else if (p.desired && hasActions(p.actions)) {
        await executePodActions(rt, p.desired, p.observed, p.actions, o);
      }
      return { key: p.key };
    } catch (err) {
      return { key: p.key, error: (err as Error).message };
    }
  });
}

export interface WaitResult {
  ok: boolean;
  /** For each pod that did not settle well: why. */
  problems: { key: string; message: string }[];
}

function describeNotReady(status: PodStatusSummary): string {
  const parts: string[] = [`phase ${status.phase}${status.reason ? ` (${status.reason})` : ''}`];
  for (const c of [...status.initContainers, ...status.containers]) {
    if (c.state === 'running') continue;
    const why = c.state === 'terminated' ? `terminated: ${c.reason ?? ''}, exit code ${c.exitCode ?? '?'}` : `waiting: ${c.reason ?? ''}`;
    parts.push(`${c.type === 'init' ? 'init container' : 'container'} ${c.name} ${why}`);
  }
  return parts.join('; ');
}

/**
 * Waits until every pod runs with all its containers started (or has succeeded), driving what
 * only a supervisor can drive meanwhile: the next init container, and restarts the engine's
 * policy does not cover. Stops early when a pod fails.
 */
export async function waitForPods(
  rt: PodRuntime,
  pods: DesiredPod[],
  /** drive: false only watches (an agent does the work). */
  o: SyncOptions & { timeoutMs: number; pollMs?: number; drive: boolean },
): Promise<WaitResult> {
  const deadline = Date.now() + o.timeoutMs;
  const pending = new Map(pods.map((p) => [p.uid, p]));
  const problems: WaitResult['problems'] = [];
  const lastStatus = new Map<string, PodStatusSummary>();
  for (;;) {
    const observed = new Map((await rt.listPods()).map((x) => [x.uid, x]));
    for (const d of [...pending.values()]) {
      const obs = observed.get(d.uid);
      const s = settled(d, obs);
      lastStatus.set(d.uid, s.status);
      if (s.done) {
        pending.delete(d.uid);
        if (s.failed) problems.push({ key: d.key, message: `failed: ${describeNotReady(s.status)}` });
        continue;
      }
      const actions = computePodActions(d, obs);
      if (actions.podFailed) {
        pending.delete(d.uid);
        problems.push({ key: d.key, message: `failed: ${describeNotReady(s.status)}` });
      } else if (o.drive && hasActions(actions)) {
        try {
          await executePodActions(rt, d, obs, actions, o);
        } catch (err) {
          pending.delete(d.uid);
          problems.push({ key: d.key, message: (err as Error).message });
        }
      }
    }
    if (pending.size === 0) break;
    if (Date.now() >= deadline) {
      for (const d of pending.values()) {
        const st = lastStatus.get(d.uid);
        problems.push({ key: d.key, message: `not running after ${Math.round(o.timeoutMs / 1000)}s: ${st ? describeNotReady(st) : 'no status'}` });
      }
      break;
    }
    await new Promise((r) => setTimeout(r, o.pollMs ?? 250));
  }
  return { ok: problems.length === 0, problems };
}

/** Keeps one dead instance per container of the given pods (for `logs --previous`), removes the rest. */
export async function pruneAfterApply(rt: PodRuntime, uids: Set<string>): Promise<void> {
  const observed = (await rt.listPods()).filter((p) => uids.has(p.uid));
  await Promise.all(observed.map((p) => pruneDeadInstances(rt, p)));
}
