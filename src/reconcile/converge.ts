import type { DesiredPod } from '../manifest/types.js';
import { latestByName, type ObservedPod } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import type { PodStatusSummary } from '../status/pod-status.js';
import { settled } from './settled.js';
import { computePodActions, hasActions, type PodPlan } from './plan.js';
import { defaultHostOf, graceOf, removePod, specOf } from './lifecycle.js';
import { ProbeManager, type ProbeTarget } from '../probe/manager.js';
import { agentGet } from '../server/client.js';
import { ROLLED_BACK_VERSION, type V1Pod } from '../status/v1.js';
import { podVersion } from '../manifest/hash.js';
import { ContainerImageError, executePodActions, pruneDeadInstances, type SyncOptions } from './sync.js';

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
  /** The container whose image could not be had, when that is why. */
  image?: { container: string; image: string; reason: string; message: string };
}

/**
 * Carries out a plan once: each pod's actions, deletions included, all pods at once (the runtime
 * bounds the engine calls; grace periods overlap). Errors stay per pod.
 */
export async function executePlan(rt: PodEngine, plans: PodPlan[], o: SyncOptions): Promise<PodOutcome[]> {
  return Promise.all(plans.map(async (p): Promise<PodOutcome> => {
    try {
      if (p.verdict === 'deleted') {
        if (p.observed) await removePod(rt, p.observed, graceOf(p.observed));
      } else if (p.desired && hasActions(p.actions)) {
        await executePodActions(rt, p.desired, p.observed, p.actions, o);
      }
      return { key: p.key };
    } catch (err) {
      if (err instanceof ContainerImageError && p.desired) {
        const image = specOf(p.desired.pod, err.container)?.image ?? '';
        return { key: p.key, error: err.message, image: { container: err.container, image, reason: err.imageError.reason, message: err.message } };
      }
      return { key: p.key, error: (err as Error).message };
    }
  }));
}

export interface WaitResult {
  ok: boolean;
  /** For each pod that did not settle well: why. */
  problems: { key: string; message: string }[];
}

function describeNotReady(status: PodStatusSummary): string {
  const parts: string[] = [`phase ${status.phase}${status.reason ? ` (${status.reason})` : ''}`];
  for (const c of [...status.initContainers, ...status.containers]) {
    const kind = c.type === 'init' ? 'init container' : 'container';
    if (c.state === 'running') {
      if (!c.started) parts.push(`${kind} ${c.name} has not passed its startup probe`);
      else if (!c.ready) parts.push(`${kind} ${c.name} is not ready (readiness probe failing)`);
      continue;
    }
    const why = c.state === 'terminated' ? `terminated: ${c.reason ?? ''}, exit code ${c.exitCode ?? '?'}` : `waiting: ${c.reason ?? ''}${c.message ? ` (${c.message})` : ''}`;
    parts.push(`${kind} ${c.name} ${why}`);
  }
  return parts.join('; ');
}

/** Readiness as the agent reports it, for an apply that leaves the work to the agent. */
function agentVerdict(p: V1Pod | undefined, version: string): { done: boolean; failed: boolean; message: string } {
  if (!p) return { done: false, failed: false, message: 'not known to the agent yet' };
  // The agent went back from this very version (a health-gated update): no use waiting for it.
  if (p.status.reason === 'RolledBack' && p.metadata.annotations?.[ROLLED_BACK_VERSION] === version) return { done: true, failed: true, message: `rolled back: ${p.status.message ?? ''}` };
  const ready = p.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  const notReady = [...(p.status.initContainerStatuses ?? []), ...(p.status.containerStatuses ?? [])]
    .filter((c) => !c.ready)
    .map((c) => `container ${c.name} ${c.state.waiting ? `waiting: ${c.state.waiting.reason ?? ''}${c.state.waiting.message ? ` (${c.state.waiting.message})` : ''}` : c.state.terminated ? `terminated: ${c.state.terminated.reason ?? ''}, exit code ${c.state.terminated.exitCode}` : 'not ready'}`);
  const message = [`phase ${p.status.phase}`, ...notReady].join('; ');
  if (p.status.phase === 'Failed') return { done: true, failed: true, message };
  return { done: p.status.phase === 'Succeeded' || (p.status.phase === 'Running' && ready), failed: false, message };
}

/**
 * Waits until every pod is Ready (readiness probes honoured) and runs what its manifest says now,
 * or has succeeded. Driving (no agent): starts the next init container as each finishes, restarts
 * what the engine's policy does not cover, and runs startup and readiness probes itself.
 * Otherwise it reads the agent's view. Stops early when a pod fails.
 */
export async function waitForPods(
  rt: PodEngine,
  pods: DesiredPod[],
  o: SyncOptions & { timeoutMs: number; pollMs?: number; drive: boolean; stateDir?: string },
): Promise<WaitResult> {
  const deadline = Date.now() + o.timeoutMs;
  const pending = new Map(pods.map((p) => [p.uid, p]));
  const problems: WaitResult['problems'] = [];
  const last = new Map<string, string>();
  // Liveness is the agent's business; apply only needs to know when pods are ready.
  const probes = o.drive ? new ProbeManager((id, cmd, t) => rt.exec(id, cmd, t), () => undefined) : undefined;
  try {
    for (;;) {
      const observed = new Map((await rt.listPods()).map((x) => [x.uid, x]));
      const agentPods = o.drive || !o.stateDir ? undefined : new Map(((await agentGet<{ items: V1Pod[] }>(o.stateDir, '/pods'))?.items ?? []).map((p) => [p.metadata.uid, p]));
      for (const d of [...pending.values()]) {
        const obs = observed.get(d.uid);
        let verdict: { done: boolean; failed: boolean; message: string };
        if (probes) {
          await syncApplyProbes(rt, probes, d, obs);
          const s = settled(d, obs, { probes: (id) => probes.state(id) });
          verdict = { done: s.done, failed: s.failed, message: describeNotReady(s.status) };
        } else {
          const a = agentVerdict(agentPods?.get(d.uid), podVersion(d.pod));
          // A failure is final whatever still runs (a rolled-back pod runs the older version).
          verdict = { ...a, done: a.failed || (a.done && !hasActions(computePodActions(d, obs))) };
        }
        last.set(d.uid, verdict.message);
        if (verdict.done) {
          pending.delete(d.uid);
          if (verdict.failed) problems.push({ key: d.key, message: `failed: ${verdict.message}` });
          continue;
        }
        if (!o.drive) continue;
        const actions = computePodActions(d, obs);
        if (actions.podFailed) {
          pending.delete(d.uid);
          problems.push({ key: d.key, message: `failed: ${verdict.message}` });
        } else if (hasActions(actions)) {
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
        for (const d of pending.values()) problems.push({ key: d.key, message: `not ready after ${Math.round(o.timeoutMs / 1000)}s: ${last.get(d.uid) ?? 'no status'}` });
        break;
      }
      await new Promise((r) => setTimeout(r, o.pollMs ?? 250));
    }
  } finally {
    probes?.stop();
  }
  return { ok: problems.length === 0, problems };
}

async function syncApplyProbes(rt: PodEngine, probes: ProbeManager, d: DesiredPod, obs: ObservedPod | undefined): Promise<void> {
  if (!obs) return;
  // The pod IP costs an inspect: only pods with something to probe need it.
  const probed = [...(d.pod.spec.initContainers ?? []), ...d.pod.spec.containers].some((c) => c.readinessProbe || c.startupProbe);
  if (!probed) return probes.sync(d.uid, []);
  const host = await defaultHostOf(rt, d.pod, obs).catch(() => '127.0.0.1');
  const targets: ProbeTarget[] = [];
  for (const c of latestByName(obs).values()) {
    const spec = specOf(d.pod, c.name);
    if (!spec || c.state !== 'running' || (!spec.readinessProbe && !spec.startupProbe)) continue;
    const { livenessProbe: _liveness, ...withoutLiveness } = spec;
    targets.push({ uid: d.uid, namespace: obs.namespace, pod: obs.name, container: withoutLiveness, containerId: c.id, defaultHost: host });
  }
  probes.sync(d.uid, targets);
}

/** Keeps one dead instance per container of the given pods (for `logs --previous`), removes the rest. */
export async function pruneAfterApply(rt: PodEngine, uids: Set<string>): Promise<void> {
  const observed = (await rt.listPods()).filter((p) => uids.has(p.uid));
  await Promise.all(observed.map((p) => pruneDeadInstances(rt, p)));
}
