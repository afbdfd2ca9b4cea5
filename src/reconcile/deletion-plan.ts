import type { Container } from '../manifest/types.js';
import { isActive, type ObservedContainer, type ObservedPod } from '../runtime/observed.js';

// How a pod is stopped, decided before anything is stopped, after the kubelet's killPodWithSyncResult
// and killContainersWithSyncResult (kuberuntime_container.go, with termination_ordering.go): the
// main containers together, each with its grace; the sidecars after them, the last declared first;
// then the sandbox. Pure: no I/O, no clock.

/** The kubelet's default terminationGracePeriodSeconds, for a pod whose spec the engine no longer tells. */
const DEFAULT_GRACE_S = 30;

/** What `podrun delete` was told about the grace period. */
export interface DeleteFlags {
  gracePeriod?: number;
  now?: boolean;
  force?: boolean;
}

/** The grace period given outright, which replaces every container's: --force 0, --now 1, --grace-period N; none without a flag. */
export function graceOverride(f: DeleteFlags): number | undefined {
  if (f.force) return 0;
  if (f.now) return 1;
  return f.gracePeriod;
}

export interface ContainerStop {
  id: string;
  name: string;
  /** Seconds until SIGKILL, counted from the start of the deletion: waiting for its turn uses them up too. */
  graceSeconds: number;
  /** Given outright (delete's override): taken as it is, without the kubelet's 2 s floor. */
  exact: boolean;
}

export interface DeletionPlan {
  uid: string;
  /** The pod's grace period for this deletion (what `get` shows as deletionGracePeriodSeconds). */
  graceSeconds: number;
  /** Stops one after another; the stops within a step run together. */
  steps: ContainerStop[][];
  /** Stopped last: they only hold the pod's namespaces, which the containers use until they end. */
  sandboxes: string[];
  /** Removed once every stop is done: every container of the pod, dead instances included, then the sandboxes. */
  remove: string[];
  /** Before the pod's directory goes, the engine must list nothing of the pod (a create under way lands meanwhile). */
  waitFor: 'engine-lists-nothing';
}

function isSidecar(c: ObservedContainer, declared: Container | undefined): boolean {
  return c.type === 'init' && (c.spec ?? declared)?.restartPolicy === 'Always';
}

/**
 * The deletion of `o`. Main containers (and an init container still running) stop first, in
 * parallel. Sidecars stop after them, one step each in reverse order of declaration, so a sidecar
 * outlives every container declared after it (the kubelet's terminationOrdering). Each container
 * gets the grace it was made with, or the pod's; `override` replaces them all.
 */
export function deletionPlan(o: ObservedPod, override?: number): DeletionPlan {
  const podGrace = o.spec?.spec.terminationGracePeriodSeconds ?? DEFAULT_GRACE_S;
  const inits = o.spec?.spec.initContainers ?? [];
  const stop = (c: ObservedContainer): ContainerStop => ({
    id: c.id,
    name: c.name,
    graceSeconds: override ?? c.graceSeconds ?? podGrace,
    exact: override !== undefined,
  });
  const declared = (c: ObservedContainer): Container | undefined => inits.find((s) => s.name === c.name);
  const active = o.containers.filter(isActive);
  const main = active.filter((c) => !isSidecar(c, declared(c)));
  const sidecars = active.filter((c) => isSidecar(c, declared(c)));
  // The last declared goes first; one the spec no longer names goes before every declared one.
  const position = (c: ObservedContainer): number => {
    const i = inits.findIndex((s) => s.name === c.name);
    return i < 0 ? Number.MAX_SAFE_INTEGER : i;
  };
  const byPosition = new Map<number, ObservedContainer[]>();
  for (const c of sidecars) byPosition.set(position(c), [...(byPosition.get(position(c)) ?? []), c]);
  const sidecarSteps = [...byPosition.keys()].sort((a, b) => b - a).map((k) => (byPosition.get(k) ?? []).map(stop));
  const steps = [main.map(stop), ...sidecarSteps].filter((s) => s.length > 0);
  return {
    uid: o.uid,
    graceSeconds: override ?? podGrace,
    steps,
    sandboxes: o.sandboxes.filter(isActive).map((s) => s.id),
    remove: [...o.containers.map((c) => c.id), ...o.sandboxes.map((s) => s.id)],
    waitFor: 'engine-lists-nothing',
  };
}
