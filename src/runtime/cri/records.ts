import { engineName, LABEL, SANDBOX_NAME } from '../labels.js';
import type { ContainerState as PodrunState, EngineContainer, EngineSandbox } from '../observed.js';
import type { PodSandboxState as PodrunSandboxState } from '../kuberuntime/cri-types.js';
import type { ContainerStatus } from '../runtime-types.js';
import { ContainerState, PodSandboxState, type ContainerItem, type ContainerStatusInfo, type PodSandboxItem } from './messages.js';

// The runtime's answers in podrun's words: sandboxes and containers as the records the pod cache
// keeps (observed.ts), states and times as an inspect gives them.

/**
 * Whether a CRI time (int64 ns since the epoch) is one: a runtime writes "unset" as 0, as int64's
 * minimum, or as Go's zero time converted (time.Time{}.UnixNano() overflows to 1754-08-30), all at
 * or before the epoch, which no container or sandbox of this machine was made at.
 */
function isSet(ns: bigint): boolean {
  return ns > 0n;
}

/** A CRI time in whole seconds since the epoch, undefined when unset (isSet). */
export function seconds(ns: bigint): number | undefined {
  return isSet(ns) ? Number(ns / 1_000_000_000n) : undefined;
}

/** A CRI time (ns since the epoch) as RFC 3339 with its nanoseconds; undefined when unset (isSet). */
export function rfc3339(ns: bigint): string | undefined {
  if (!isSet(ns)) return undefined;
  const secs = ns / 1_000_000_000n;
  const frac = (ns % 1_000_000_000n).toString().padStart(9, '0');
  return `${new Date(Number(secs) * 1000).toISOString().slice(0, 19)}.${frac}Z`;
}

export function stateOf(state: number): PodrunState {
  switch (state) {
    case ContainerState.CREATED:
      return 'created';
    case ContainerState.RUNNING:
      return 'running';
    case ContainerState.EXITED:
      return 'exited';
    default:
      // UNKNOWN: the runtime lost track of it (its shim died): it is replaced.
      return 'unknown';
  }
}

/** The runtime's PodSandboxState as it is: READY ready, NOTREADY (or a value past api.proto's) not ready. */
export function sandboxStateOf(state: number): PodrunSandboxState {
  return state === PodSandboxState.READY ? 'ready' : 'notready';
}

/** Labels and annotations as one map: podrun's identity is split over both (kuberuntime/sandbox-config.ts splitLabels). */
function identity(labels: Record<string, string>, annotations: Record<string, string>): Record<string, string> {
  return { ...labels, ...annotations };
}

function nameFrom(l: Record<string, string>, container: string, attempt: number): string {
  return engineName(
    {
      name: l[LABEL.podName] ?? '',
      namespace: l[LABEL.podNamespace] ?? '',
      uid: l[LABEL.podUid] ?? '',
      ...(l[LABEL.instance] ? { instance: l[LABEL.instance] } : {}),
    },
    container,
    attempt,
  );
}

/** A listed container; `exitCode` from its status (the list does not carry it). */
export function recordFromContainer(c: ContainerItem, exitCode?: number): EngineContainer {
  const labels = identity(c.labels, c.annotations);
  const state = stateOf(c.state);
  const created = seconds(c.createdAt);
  return {
    kind: 'container',
    id: c.id,
    name: nameFrom(labels, c.metadata?.name ?? '', c.metadata?.attempt ?? 0),
    image: c.image?.image ?? c.imageRef,
    labels,
    state,
    ...(state === 'exited' && exitCode !== undefined ? { exitCode } : {}),
    ...(created !== undefined ? { created } : {}),
  };
}

/**
 * A listed sandbox (or its status: `ip` from its network), its state straight from the runtime's;
 * `pauseImage` names what it runs, for the readings' series (the runtime does not say).
 */
export function recordFromSandbox(s: PodSandboxItem, pauseImage: string, ip?: string): EngineSandbox {
  const labels = identity(s.labels, s.annotations);
  const createdAt = seconds(s.createdAt);
  return {
    kind: 'sandbox',
    id: s.id,
    name: nameFrom(labels, SANDBOX_NAME, s.metadata?.attempt ?? 0),
    image: pauseImage,
    labels,
    state: sandboxStateOf(s.state),
    ...(createdAt !== undefined ? { createdAt } : {}),
    ...(ip ? { network: { ip } } : {}),
  };
}

/** The kubelet reads an OOM kill from the runtime's reason (kuberuntime_container.go toKubeContainerStatus). */
export function statusFromCri(s: ContainerStatusInfo): ContainerStatus {
  const startedAt = rfc3339(s.startedAt);
  const finishedAt = rfc3339(s.finishedAt);
  const state = stateOf(s.state);
  return {
    state,
    exitCode: s.exitCode,
    ...(startedAt ? { startedAt } : {}),
    ...(finishedAt ? { finishedAt } : {}),
    oomKilled: s.reason === 'OOMKilled',
    ...(state === 'exited' && s.reason && s.reason !== 'Completed' && s.reason !== 'Error' && s.reason !== 'OOMKilled' ? { error: s.message || s.reason } : {}),
    engineRestarts: 0,
    restarting: false,
  };
}

/** A container's status as a listed record (inspectContainers). */
export function recordFromStatus(s: ContainerStatusInfo): EngineContainer {
  return recordFromContainer(
    {
      id: s.id,
      podSandboxId: '',
      metadata: s.metadata,
      image: s.image,
      imageRef: s.imageRef,
      state: s.state,
      createdAt: s.createdAt,
      labels: s.labels,
      annotations: s.annotations,
      imageId: s.imageId,
    },
    s.exitCode,
  );
}
