import { LABEL, MANAGED_BY } from './labels.js';
import type { Container, Pod } from '../manifest/types.js';
import type { PodSandboxState, PodSandboxStatus } from './kuberuntime/cri-types.js';

/** What an engine record is: the CRI asks for each by its own calls (ListPodSandbox, ListContainers). */
export type RecordKind = 'sandbox' | 'container';

/**
 * One container as the engine lists it: what the pod cache keeps, in podrun's words (each engine
 * turns its own answers into these: runtime/docker/records.ts, runtime/cri/records.ts).
 */
export interface EngineContainer {
  kind: 'container';
  id: string;
  /** The engine's name for it (labels.ts `engineName`). */
  name: string;
  image: string;
  labels: Record<string, string>;
  state: ContainerState;
  /** Undefined unless it exited (and the engine said with which code). */
  exitCode?: number;
  /** Seconds since the epoch; absent when the engine gave a zero time (its "unset"). */
  created?: number;
  /** Its IP on its network, when the engine's answer carried one (a list does; an event does not). */
  ip?: string;
  /**
   * Running: the latest time (ms, this machine's clock) its instance can have started, when the
   * engine's list tells its uptime (Docker's "Up 5 minutes"). Gone with any news of it since.
   */
  startedBy?: number;
  /**
   * The engine restarts it itself (Docker's restart policy: no agent supervised its pod, or an
   * adopted container whose policy could not be taken over) and is between two runs: its state
   * is `unknown` (cri-dockerd's word for Docker's restarting), and it is active, not finished.
   */
  engineRestarting?: true;
}

/**
 * One sandbox as the engine lists it: its PodSandboxStatus (kuberuntime/cri-types.ts), with what
 * only the Docker engine knows of its pause container.
 */
export interface EngineSandbox extends PodSandboxStatus {
  kind: 'sandbox';
  /** The engine's name for it (labels.ts `engineName`). */
  name: string;
  /**
   * The pause image it runs, as the readings' series name it (a CRI runtime runs its own and does
   * not say which: podrun's --pause-image stands for it).
   */
  image: string;
  /**
   * Docker restarts its pause container itself (no agent supervised the pod) and is between two
   * runs: not ready, but alive, as EngineContainer's.
   */
  engineRestarting?: true;
}

/** What the engine holds of podrun's: sandboxes and containers, each as what it is. */
export type EngineRecord = EngineContainer | EngineSandbox;

/**
 * CRI's container states (ContainerState in api.proto). Each engine says its own in these words:
 * Docker's paused is running, its dead and removing are unknown (as cri-dockerd says them).
 */
export type ContainerState = 'created' | 'running' | 'exited' | 'unknown';

/** One engine container as podrun sees it: identity from labels, state from the list call. */
export interface ObservedContainer {
  id: string;
  engineName: string;
  type: 'init' | 'app';
  name: string;
  hash: string;
  restartCount: number;
  state: ContainerState;
  /** From the list call's status text; undefined unless exited. */
  exitCode?: number;
  /** EngineContainer's: absent when the engine gave none. */
  created?: number;
  image: string;
  /** The spec it was made from (its own label; absent on containers made by podrun before 0.2). */
  spec?: Container;
  /** The pod's terminationGracePeriodSeconds when it was made (its own label). */
  graceSeconds?: number;
  /** Its IP on its network, when the engine's answer carried one (a list does; an event does not). */
  ip?: string;
  /** EngineContainer's: the latest its running instance can have started, by the list's uptime. */
  startedBy?: number;
  /** EngineContainer's: the engine restarts it itself, between runs now. */
  engineRestarting?: true;
}

/**
 * One sandbox of a pod as podrun sees it: the CRI's PodSandboxStatus with what its labels say
 * (the sandbox spec's hash, its attempt). The kubelet reads a pod's sandboxes so (PodStatus's
 * SandboxStatuses), never as containers.
 */
export interface ObservedSandbox {
  id: string;
  state: PodSandboxState;
  /** PodSandboxMetadata's attempt (its restart-count label): a new sandbox is made with one more. */
  attempt: number;
  /** The pod-level spec it was made from (manifest/hash.ts sandboxHash). */
  hash: string;
  /** Seconds since the epoch; absent when the engine gave a zero time. */
  createdAt?: number;
  /** The pod's address, when the engine's answer carried one. */
  ip?: string;
  /** The engine's name and image for it: the readings' series say them, as cAdvisor's do for the pause container. */
  engineName: string;
  image: string;
  /** EngineSandbox's: the engine restarts it itself, between runs now. */
  engineRestarting?: true;
}

export interface ObservedPod {
  uid: string;
  name: string;
  namespace: string;
  source: string;
  applySet?: string;
  /**
   * The pod spec in force: the sandbox's pod (as it was when the sandbox was made) with each
   * container as its newest instance was made, and the newest grace period.
   */
  spec?: Pod;
  /** Newest first, as the kubelet's SandboxStatuses: the first is the pod's sandbox. */
  sandboxes: ObservedSandbox[];
  containers: ObservedContainer[];
}

/** Running (a container) or ready (a sandbox), or between two runs of the engine's own restarts. */
export function isActive(c: ObservedContainer | ObservedSandbox): boolean {
  return c.state === 'running' || c.state === 'ready' || c.engineRestarting === true;
}

/** Groups the engine's sandboxes and containers into pods. Pure, so it is tested with plain data. */
export function groupObserved(list: readonly EngineRecord[]): ObservedPod[] {
  const pods = new Map<string, ObservedPod>();
  const sandboxLabels = new Map<string, Record<string, string>>();
  for (const info of list) {
    const l = info.labels ?? {};
    if (l[LABEL.managedBy] !== MANAGED_BY) continue;
    const uid = l[LABEL.podUid];
    const type = l[LABEL.containerType];
    if (!uid || !type) continue;
    let pod = pods.get(uid);
    if (!pod) {
      pod = {
        uid,
        name: l[LABEL.podName] ?? '',
        namespace: l[LABEL.podNamespace] ?? '',
        source: l[LABEL.source] ?? '',
        sandboxes: [],
        containers: [],
      };
      pods.set(uid, pod);
    }
    if (info.kind === 'sandbox') {
      pod.sandboxes.push(observedSandbox(info));
      sandboxLabels.set(info.id, l);
    } else if (type === 'init' || type === 'app') {
      pod.containers.push(observedContainer(info, type));
    }
  }
  for (const pod of pods.values()) {
    // A time the engine did not give sorts as the oldest: it cannot be placed later than any.
    pod.sandboxes.sort((a, b) => b.attempt - a.attempt || (b.createdAt ?? 0) - (a.createdAt ?? 0));
    pod.containers.sort(newestFirst);
    const newest = pod.sandboxes[0];
    const l = newest ? sandboxLabels.get(newest.id) : undefined;
    if (l) {
      pod.source = l[LABEL.source] ?? pod.source;
      pod.applySet = l[LABEL.applySet];
      const sandboxPod = parseJson<Pod>(l[LABEL.podSpec]);
      if (sandboxPod) pod.spec = inForce(sandboxPod, pod.containers);
    }
  }
  return [...pods.values()];
}

function observedSandbox(info: EngineSandbox): ObservedSandbox {
  const l = info.labels;
  const s: ObservedSandbox = {
    id: info.id,
    state: info.state,
    attempt: Number(l[LABEL.restartCount] ?? 0) || 0,
    hash: l[LABEL.hash] ?? '',
    engineName: info.name,
    image: info.image,
  };
  if (info.createdAt !== undefined) s.createdAt = info.createdAt;
  if (info.network?.ip) s.ip = info.network.ip;
  if (info.engineRestarting) s.engineRestarting = true;
  return s;
}

function observedContainer(info: EngineContainer, type: 'init' | 'app'): ObservedContainer {
  const l = info.labels;
  const c: ObservedContainer = {
    id: info.id,
    engineName: info.name,
    type,
    name: l[LABEL.containerName] ?? '',
    hash: l[LABEL.hash] ?? '',
    restartCount: Number(l[LABEL.restartCount] ?? 0) || 0,
    state: info.state,
    exitCode: info.exitCode,
    image: info.image,
  };
  if (info.created !== undefined) c.created = info.created;
  if (info.ip) c.ip = info.ip;
  if (info.startedBy !== undefined) c.startedBy = info.startedBy;
  if (info.engineRestarting) c.engineRestarting = true;
  const own = parseJson<Container>(l[LABEL.containerSpec]);
  if (own) c.spec = own;
  const grace = Number(l[LABEL.gracePeriod]);
  if (l[LABEL.gracePeriod] !== undefined && Number.isFinite(grace)) c.graceSeconds = grace;
  return c;
}

/** The sandbox's pod, brought up to date by what the newest container instances carry. */
function inForce(sandboxPod: Pod, containers: ObservedContainer[]): Pod {
  const newest = new Map<string, ObservedContainer>();
  for (const c of containers) if (!newest.has(c.name)) newest.set(c.name, c);
  const swap = (list: Container[] | undefined): Container[] | undefined => list?.map((c) => newest.get(c.name)?.spec ?? c);
  // The grace period of the most recently made container is the newest the engine knows.
  const latest = [...newest.values()].filter((c) => c.graceSeconds !== undefined).sort((a, b) => (b.created ?? 0) - (a.created ?? 0))[0];
  const initContainers = swap(sandboxPod.spec.initContainers);
  return {
    ...sandboxPod,
    spec: {
      ...sandboxPod.spec,
      containers: swap(sandboxPod.spec.containers) ?? [],
      ...(initContainers ? { initContainers } : {}),
      ...(latest?.graceSeconds !== undefined ? { terminationGracePeriodSeconds: latest.graceSeconds } : {}),
    },
  };
}

/** Newest instance of each container name, by restart count. */
export function latestByName(pod: ObservedPod): Map<string, ObservedContainer> {
  const out = new Map<string, ObservedContainer>();
  for (const c of pod.containers) if (!out.has(c.name)) out.set(c.name, c);
  return out;
}

/** Attempts only grow, so the restart count orders instances; creation time breaks ties. */
function newestFirst(a: ObservedContainer, b: ObservedContainer): number {
  return b.restartCount - a.restartCount || (b.created ?? 0) - (a.created ?? 0);
}

function parseJson<T>(text: string | undefined): T | undefined {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    // A damaged label only costs the spec; identity still comes from the other labels.
    return undefined;
  }
}
