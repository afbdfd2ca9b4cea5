import type Docker from 'dockerode';
import type { EngineOptions } from './engine.js';
import type { ContainerState } from './observed.js';
import type { VolumeBacking } from './spec.js';

// The runtime's vocabulary, apart from the class: its options, what it answers, how it fails, and
// the engine client and bounded call the role modules (images, streams, readings) share.

export interface RuntimeOptions extends EngineOptions {
  stateDir: string;
  pauseImage: string;
  /** Docker network for pods without hostNetwork. */
  network?: string;
  nodeName?: string;
  hostIP?: string;
  /** hostPath volumes only at or below these paths, judged where they really lead when mounted. */
  allowedHostPaths?: readonly string[];
  /** Log rotation of every container made (the kubelet's containerLogMaxSize and containerLogMaxFiles). */
  containerLog?: { maxBytes: number; maxFiles: number };
  /**
   * The kubelet's podPidsLimit: the most processes (threads) a pod may have, so a fork bomb in
   * one pod cannot take the node's pids. The kubelet sets it on the pod's cgroup; on Docker it is
   * each container's PidsLimit, the sandbox's included (a pod of n containers: n times as many).
   */
  podPidsLimit?: number;
  /** The node's resolv.conf that pods inherit (the kubelet's --resolv-conf; default /etc/resolv.conf). */
  resolvConf?: string;
  /** Each pull's progress, summed over its layers (the CLI draws it; the agent logs it). */
  onPullProgress?: (p: PullProgress) => void;
  /** Registry credentials: config.json files read at each pull, first match wins (default: the user's). */
  credentialFiles?: readonly string[];
  /** Containers' counters from cgroupfs when the engine is local (the default); false: always its stats API. */
  cgroupReadings?: boolean;
  /** Pulls at once: 1 is the kubelet's serializeImagePulls (its default), 0 any number. */
  pullSlots?: number;
  /** Engine calls that create, start, remove or list at once (default 4: the engine gains little past that). */
  engineSlots?: number;
  /** Told of every engine call and pull, for metrics. */
  observer?: RuntimeObserver;
  /**
   * How long one engine call may take before podrun gives up on it (a stop: the grace period
   * plus this), as the kubelet's --runtime-request-timeout (default 2 min). Pulls are not bounded.
   */
  requestTimeoutMs?: number;
}

/** How far one pull has come, summed over its layers (the engine reports each layer on its own). */
export interface PullProgress {
  image: string;
  layers: number;
  layersDone: number;
  /** Bytes downloaded so far, and the sum of the sizes the engine announced (0 until it does). */
  bytes: number;
  totalBytes: number;
  /** Set once on the last report: how the pull ended and how long it took. */
  end?: { ok: boolean; seconds: number; error?: string };
}

export interface RuntimeObserver {
  /** `what` describes the call ("create container web of default/p"); failed: the engine refused or was gone. */
  call?(what: string, seconds: number, failed: boolean): void;
  pull?(seconds: number, ok: boolean): void;
}

/**
 * One change of a container's (or sandbox's) life, whichever engine told it: Docker's
 * create/start/die/destroy, the CRI's ContainerEventType. Other news (execs, renames) is no event.
 */
export interface EngineEvent {
  kind: 'created' | 'started' | 'paused' | 'exited' | 'removed';
  id: string;
  /** The container's labels: podrun's identity (labels.ts). */
  labels: Record<string, string>;
  /** Its name and image, where the engine said (a create does). */
  name?: string;
  image?: string;
  /** An exit's code, where the engine said. */
  exitCode?: number;
  timeMs: number;
}

/** The parts of the engine's stats answer podrun reads (cgroup v1 and v2 alike). */
export interface EngineStats {
  read: string;
  cpu_stats: { cpu_usage: { total_usage: number; usage_in_usermode?: number; usage_in_kernelmode?: number }; system_cpu_usage?: number; online_cpus?: number };
  precpu_stats?: { cpu_usage?: { total_usage?: number }; system_cpu_usage?: number };
  memory_stats: { usage?: number; limit?: number; stats?: Record<string, number> };
  networks?: Record<string, { rx_bytes: number; rx_errors: number; tx_bytes: number; tx_errors: number; rx_packets?: number; tx_packets?: number; rx_dropped?: number; tx_dropped?: number }>;
  pids_stats?: { current?: number };
  preread?: string;
  /** podrun's own: where the reading came from (cgroupfs, or the engine's stats API). */
  source?: 'cgroup' | 'engine';
}

/** One container's state as the engine holds it now (an inspect; the CRI's ContainerStatus). */
export interface ContainerStatus {
  state: ContainerState;
  exitCode: number;
  /** RFC 3339, to the engine's precision (ns); absent: never started, or not finished. */
  startedAt?: string;
  finishedAt?: string;
  oomKilled: boolean;
  /** Why the engine could not run it, in its words. */
  error?: string;
  /** Times the engine restarted it in place under its own restart policy (0 where it has none). */
  engineRestarts: number;
  /** The engine is about to restart it in place. */
  restarting: boolean;
}

export interface SandboxInfo {
  id: string;
  ip: string;
}

/** Thrown when an image cannot be had; `reason` is the kubelet's (ErrImagePull, ErrImageNeverPull). */
export class ImageError extends Error {
  constructor(message: string, readonly reason: 'ErrImagePull' | 'ErrImageNeverPull') {
    super(message);
    this.name = 'ImageError';
  }
}

/**
 * The engine refused to create or start a container (a bad mount, a missing binary): not a crash,
 * but retried with the same back-off, as the kubelet does. `reason` is the kubelet's waiting reason.
 */
export class ContainerStartError extends Error {
  constructor(message: string, readonly reason: 'CreateContainerConfigError' | 'CreateContainerError' | 'RunContainerError') {
    super(message);
    this.name = 'ContainerStartError';
  }
}

/** The engine refused the pod's sandbox (a port in use, a bad network option): the kubelet's FailedCreatePodSandBox. */
export class SandboxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxError';
  }
}

/** The engine client and its bounded call (a timeout, an observer, one kind of error), for the role modules. */
export interface EngineCalls {
  readonly docker: Docker;
  readonly endpoint: string;
  readonly options: RuntimeOptions;
  call<T>(what: string, fn: () => Promise<T>, timeoutMs?: number): Promise<T>;
}

/** One container start, as the pod worker asks for it. */
export interface StartRequest {
  type: 'init' | 'app';
  restartCount: number;
  hash: string;
  sandbox: SandboxInfo;
  volumes: ReadonlyMap<string, VolumeBacking>;
  /**
   * No agent supervises the pod: the engine restarts the container itself as the pod's
   * restartPolicy says, where it can (Docker: its restart policy). False: the caller restarts it.
   */
  engineRestarts: boolean;
  onPull?: (phase: 'pulling' | 'pulled', message?: string) => void;
  /** The image was had just before (pulled ahead of a replacement): not asked for again. */
  imageReady?: boolean;
  /** Aborted when the pod is no longer wanted: no wait goes on and nothing more is made (`Cancelled`). */
  signal?: AbortSignal;
}

/** One exec, as what ends it needs it: which, where, and when it was made (opaque above the runtime). */
export interface ExecRef {
  containerId: string;
  execId: string;
  /** The engine's /proc clock when the exec was made (0 when the engine is not local). */
  since: number;
}

/** How an end went: its processes killed (how many), nothing left to kill, or out of podrun's reach. */
export type ExecEnd = { killed: number } | 'finished' | 'unreachable';
