import type { Container, DesiredPod } from '../manifest/types.js';
import type { ProbeManager, ProbeTarget } from '../probe/manager.js';
import { specOf } from '../reconcile/lifecycle.js';
import { notReadyReason, type Readiness } from '../reconcile/rollback.js';
import { settled } from '../reconcile/settled.js';
import { isActive, latestByName, type ObservedPod } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import { containerDetails } from '../status/details.js';
import type { StatusInputs } from '../status/pod-status.js';
import type { PodRecord } from './pod-record.js';

// How the worker sees a pod for its status: the engine's view, the prober's results and what its
// record holds (waiting reasons, details, postStart hooks under way).

/** The inputs of the pod's status: everything the worker knows beyond the engine's list. */
export function statusInputs(rt: Pick<PodEngine, 'runtimeName'>, probes: Pick<ProbeManager, 'state'>, r: PodRecord): StatusInputs {
  return {
    runtimeName: rt.runtimeName,
    details: (id) => r.details.get(id),
    probes: (id) => probes.state(id),
    waiting: (name) => r.waiting.get(name),
    postStarting: (id) => r.postStarting.has(id),
  };
}

/**
 * Reads the inspect details status needs into the record. A running container that died after
 * the start read was restarted in place by the engine (its own policy: on Podman, or with no
 * agent): a new start, one more restart; read again. `fresh`: every running container read again,
 * for a reader with no event stream to tell it of such a death.
 */
export async function readDetails(rt: PodEngine, finishedAt: (id: string) => number | undefined, r: PodRecord, o: ObservedPod, fresh = false): Promise<void> {
  for (const c of o.containers) {
    if (!isActive(c)) continue;
    const known = r.details.get(c.id)?.startedAt;
    const died = finishedAt(c.id);
    if (fresh || (known && died && died > Date.parse(known))) r.details.delete(c.id);
  }
  await containerDetails(rt, o, r.details);
}

/**
 * Whether the pod runs `d` and is Ready, and if not, why (which container, which probe or exit
 * code): what a health-gated update is judged by. No engine call: the cache and the prober.
 */
export function readinessOf(probes: Pick<ProbeManager, 'state'>, d: DesiredPod, o: ObservedPod | undefined, r: PodRecord): Readiness {
  const inputs: StatusInputs = {
    // Only what was read after a container finished: details read while it ran say exit code 0.
    details: (id) => {
      const known = r.details.get(id);
      return known?.finishedAt ? known : undefined;
    },
    // A probed container without a worker yet has not passed: podStatus applies the initial results.
    probes: (id) => probes.state(id),
    waiting: (name) => r.waiting.get(name),
    postStarting: (id) => r.postStarting.has(id),
  };
  const s = settled(d, o, inputs);
  if (s.done && !s.failed) return { ready: true };
  const latest = o ? latestByName(o) : undefined;
  const reason = notReadyReason(
    s.status,
    s.idle,
    (name) => {
      const id = latest?.get(name)?.id;
      return id ? probes.state(id)?.last : undefined;
    },
    (name) => {
      const spec = specOf(d.pod, name);
      return !!(spec?.readinessProbe || spec?.startupProbe);
    },
  );
  return reason === undefined ? { ready: false } : { ready: false, reason };
}

/**
 * The probe workers the pod's running containers need. Without `liveness` (no agent: see
 * WorkerMode) no liveness probe runs: nobody would act on it once `apply` is done.
 */
export async function probeTargets(
  rt: PodEngine,
  probes: Pick<ProbeManager, 'state'>,
  d: DesiredPod,
  o: ObservedPod,
  r: PodRecord,
  host: string,
  liveness: boolean,
): Promise<ProbeTarget[]> {
  const targets: ProbeTarget[] = [];
  for (const c of latestByName(o).values()) {
    const declared = specOf(d.pod, c.name);
    const spec = declared && !liveness ? withoutLiveness(declared) : declared;
    if (!spec || c.state !== 'running') continue;
    if (!spec.livenessProbe && !spec.readinessProbe && !spec.startupProbe) continue;
    // initialDelaySeconds counts from the container's start, which only an inspect knows (once).
    if (!probes.state(c.id) && !r.details.get(c.id)?.startedAt) await containerDetails(rt, o, r.details);
    const startedAt = Date.parse(r.details.get(c.id)?.startedAt ?? '');
    targets.push({
      uid: d.uid,
      namespace: o.namespace,
      pod: o.name,
      container: spec,
      containerId: c.id,
      defaultHost: host,
      ...(Number.isFinite(startedAt) ? { startedAt } : {}),
    });
  }
  return targets;
}

function withoutLiveness(c: Container): Container {
  const { livenessProbe: _liveness, ...rest } = c;
  return rest;
}
