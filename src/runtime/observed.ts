import { LABEL, MANAGED_BY, type ContainerType } from './labels.js';
import type { Container, Pod } from '../manifest/types.js';

/**
 * One container or sandbox as the engine lists it: what the pod cache keeps, in podrun's words
 * (each engine turns its own answers into these: runtime/docker/records.ts).
 */
export interface EngineContainer {
  id: string;
  /** The engine's name for it (labels.ts `engineName`). */
  name: string;
  image: string;
  labels: Record<string, string>;
  state: ContainerState;
  /** Undefined unless it exited (and the engine said with which code). */
  exitCode?: number;
  /** Seconds since the epoch. */
  created: number;
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
 * CRI's container states (ContainerState in api.proto). Each engine says its own in these words:
 * Docker's paused is running, its dead and removing are unknown (as cri-dockerd says them).
 */
export type ContainerState = 'created' | 'running' | 'exited' | 'unknown';

/** One engine container as podrun sees it: identity from labels, state from the list call. */
export interface ObservedContainer {
  id: string;
  engineName: string;
  type: ContainerType;
  name: string;
  hash: string;
  restartCount: number;
  state: ContainerState;
  /** From the list call's status text; undefined unless exited. */
  exitCode?: number;
  created: number;
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
  sandboxes: ObservedContainer[];
  containers: ObservedContainer[];
}

export function isActive(c: ObservedContainer): boolean {
  return c.state === 'running' || c.engineRestarting === true;
}

/** Groups the engine's container list into pods. Pure, so it is tested with plain data. */
export function groupObserved(list: readonly EngineContainer[]): ObservedPod[] {
  const pods = new Map<string, ObservedPod>();
  const sandboxLabels = new Map<string, Record<string, string>>();
  for (const info of list) {
    const l = info.labels ?? {};
    if (l[LABEL.managedBy] !== MANAGED_BY) continue;
    const uid = l[LABEL.podUid];
    const type = l[LABEL.containerType] as ContainerType | undefined;
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
    const c: ObservedContainer = {
      id: info.id,
      engineName: info.name,
      type,
      name: l[LABEL.containerName] ?? '',
      hash: l[LABEL.hash] ?? '',
      restartCount: Number(l[LABEL.restartCount] ?? 0) || 0,
      state: info.state,
      exitCode: info.exitCode,
      created: info.created,
      image: info.image,
    };
    if (info.ip) c.ip = info.ip;
    if (info.startedBy !== undefined) c.startedBy = info.startedBy;
    if (info.engineRestarting) c.engineRestarting = true;
    const own = parseJson<Container>(l[LABEL.containerSpec]);
    if (own) c.spec = own;
    const grace = Number(l[LABEL.gracePeriod]);
    if (l[LABEL.gracePeriod] !== undefined && Number.isFinite(grace)) c.graceSeconds = grace;
    if (type === 'sandbox') {
      pod.sandboxes.push(c);
      sandboxLabels.set(c.id, l);
    } else {
      pod.containers.push(c);
    }
  }
  for (const pod of pods.values()) {
    pod.sandboxes.sort(newestFirst);
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

/** The sandbox's pod, brought up to date by what the newest container instances carry. */
function inForce(sandboxPod: Pod, containers: ObservedContainer[]): Pod {
  const newest = new Map<string, ObservedContainer>();
  for (const c of containers) if (!newest.has(c.name)) newest.set(c.name, c);
  const swap = (list: Container[] | undefined): Container[] | undefined => list?.map((c) => newest.get(c.name)?.spec ?? c);
  // The grace period of the most recently made container is the newest the engine knows.
  const latest = [...newest.values()].filter((c) => c.graceSeconds !== undefined).sort((a, b) => b.created - a.created)[0];
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
  return b.restartCount - a.restartCount || b.created - a.created;
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
