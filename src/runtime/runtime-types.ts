import type { Container } from '../manifest/types.js';
import type { CgroupExtras } from './cgroup-extras.js';
import type { ContainerState } from './observed.js';
import type { PodSandboxState } from './kuberuntime/cri-types.js';
import type { ProcessFigures } from './proc-stats.js';

// The engine interface's vocabulary (roles.ts), whichever engine answers: its options, what it
// answers, how it fails. No engine's own types: those stay under src/runtime/<engine>/.

export interface EngineOptions {
  /** unix:///path, tcp://host:port, or a socket path; default DOCKER_HOST, else /var/run/docker.sock. */
  host?: string;
}

/** Where each pod volume lives on the engine's host, decided by the I/O layer. */
/** `readOnly`: every mount of it is read-only, whatever the container asks (downwardAPI volumes). */
export type VolumeBacking = { kind: 'bind'; path: string; hostPath?: boolean; readOnly?: boolean } | { kind: 'volume'; name: string };

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
  /** Something about the engine worth one line in the log (how its changes are followed). */
  notice?(message: string): void;
}

/**
 * One change of a container's life, whichever engine told it: Docker's create/start/die/destroy,
 * the CRI's ContainerEventType. Other news (execs, renames) is no event.
 */
export interface ContainerEvent {
  kind: 'created' | 'started' | 'exited' | 'removed';
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

/**
 * A sandbox's new state (the CRI's PodSandboxState), or its removal: a Docker pause container's
 * start and die, a CRI runtime's event or relist. Docker's create of a pause container is none: a
 * sandbox is never ready before its start, and the look podrun takes after it made one (or the
 * relist) tells one that never started.
 */
export interface SandboxEvent {
  kind: 'sandbox';
  state: PodSandboxState | 'removed';
  id: string;
  /** The sandbox's labels (and annotations): podrun's identity. */
  labels: Record<string, string>;
  name?: string;
  image?: string;
  timeMs: number;
}

/** What the engine tells of podrun's sandboxes and containers as it happens. */
export type EngineEvent = ContainerEvent | SandboxEvent;

/** One network interface's counters, as /proc/<pid>/net/dev has them. */
export interface InterfaceCounters {
  rxBytes: number;
  rxErrors: number;
  txBytes: number;
  txErrors: number;
  rxPackets?: number;
  txPackets?: number;
  rxDropped?: number;
  txDropped?: number;
}

/**
 * One reading of a container's counters, whichever engine (or cgroupfs) read it, in the CRI's and
 * cAdvisor's terms: CPU in ns, memory in bytes (the working set as the kubelet counts it: usage
 * less inactive file pages), its network namespace's interfaces.
 */
export interface ContainerReading {
  /** When it was read (RFC 3339). */
  time: string;
  cpu: { usageNs: number; userNs?: number; systemNs?: number };
  /** A sample the engine took a moment before this one, with it (a rate without the caller's own). */
  earlier?: { time: string; cpuUsageNs: number };
  memory: {
    workingSetBytes: number;
    usageBytes?: number;
    limitBytes?: number;
    rssBytes?: number;
    cacheBytes?: number;
    pageFaults?: number;
    majorPageFaults?: number;
  };
  networks?: Record<string, InterfaceCounters>;
  /** Processes (threads) in it. */
  processes?: number;
  /** Where it came from: cgroupfs, or the engine's own stats. */
  source?: 'cgroup' | 'engine';
  /** podrun's own: what cgroupfs and /proc tell beyond the engine's shape (none from its stats API). */
  cgroup?: CgroupExtras & ProcessFigures;
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
  constructor(
    message: string,
    readonly reason: 'ErrImagePull' | 'ErrImageNeverPull',
  ) {
    super(message);
    this.name = 'ImageError';
  }
}

/**
 * The engine refused to create or start a container (a bad mount, a missing binary): not a crash,
 * but retried with the same back-off, as the kubelet does. `reason` is the kubelet's waiting reason.
 */
export class ContainerStartError extends Error {
  constructor(
    message: string,
    readonly reason: 'CreateContainerConfigError' | 'CreateContainerError' | 'RunContainerError',
    options?: { cause: unknown },
  ) {
    super(message, options);
    this.name = 'ContainerStartError';
  }
}

/**
 * A bug in podrun, not a fault of the manifest or the engine: the language's own errors (a
 * property of undefined, a bad argument, a name not bound). Never turned into a user's reason
 * (CreateContainerConfigError); it is logged with its stack as podrun's and the turn is retried.
 */
export function isPodrunBug(err: unknown): err is Error {
  return err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError || err instanceof SyntaxError;
}

/** The engine refused the pod's sandbox (a port in use, a bad network option): the kubelet's FailedCreatePodSandBox. */
export class SandboxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxError';
  }
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

/**
 * What an engine can do, said by the engine so that callers ask instead of assuming, and never
 * hand it an option it would drop.
 */
export interface EngineCapabilities {
  /**
   * It restarts containers itself, by a restart policy given when they are made: what `apply`
   * with no agent leaves its pods to (`engineRestarts`). A CRI runtime has none: the kubelet is
   * its only restart policy.
   */
  readonly restartPolicy: boolean;
  /** An exec past its deadline or abandoned by its client can be killed (its processes reached from this host). */
  readonly execKill: boolean;
  /** Attached exec (`podrun exec`) and followed logs (`podrun logs -f`). */
  readonly streaming: boolean;
  /** It tells containers' life as it happens (`watchEvents`); else the pod cache learns it only from its relists. */
  readonly events: boolean;
  /** Containers' usage readings (`containerStats`): the Summary API, `top pods`, the cAdvisor metrics. */
  readonly stats: boolean;
}

/**
 * A probe's or hook's command as the engine ran it: its exit code and output; 'timeout' (past its
 * timeout, or given up); or never run because its container was not running by then, which says
 * nothing of the container's health (`detail`: the engine's words, for people).
 */
export type ExecResult = { exitCode: number; output: string } | 'timeout' | { notRun: 'container-not-running'; detail: string };

/** One exec, as what ends it needs it: which, where, and when it was made (opaque above the runtime). */
export interface ExecRef {
  containerId: string;
  execId: string;
  /** The engine's /proc clock when the exec was made (0 when the engine is not local). */
  since: number;
}

/** How an end went: its processes killed (how many), nothing left to kill, or out of podrun's reach. */
export type ExecEnd = { killed: number } | 'finished' | 'unreachable';

/** Told of a pull as it begins and ends (the pod's Pulling and Pulled events). */
export type PullListener = (phase: 'pulling' | 'pulled', message?: string) => void;

/**
 * Bounds of a log read, as the engine takes them: seconds since the epoch, whole or `S.NANOS` (the
 * runs of a container the engine restarted in place are told apart by their start, to the ns).
 */
export interface LogWindow {
  since?: number | string;
  until?: string;
}

/** One `podrun logs` read: follow it, with timestamps, the last `tail` lines, in a window. */
export type LogRequest = { follow: boolean; timestamps: boolean; tail?: number } & LogWindow;

/** An attached exec's options (`podrun exec`). */
export interface ExecAttachOptions {
  tty: boolean;
  stdin: boolean;
  size?: () => { rows: number; columns: number } | undefined;
  onResize?: (fn: () => void) => () => void;
  /**
   * Told of the exec once it is made and before it starts, so the caller can have it ended if
   * the caller dies (`podrun exec` hands it to its guard process: see `endAbandonedExec`).
   */
  onCreated?: (ref: ExecRef) => void;
}

/** The caller's end of an attached exec. */
export interface ExecStreams {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** The instance whose termination message is asked for: which, and what its spec says of the message. */
export interface FinishedInstance {
  id: string;
  name: string;
  restartCount: number;
  exitCode?: number;
  spec?: Container;
}

/** One image as the engine holds it: tags without the engine's placeholders (`<none>:<none>`). */
export interface EngineImage {
  id: string;
  tags: string[];
  /** Repository digests (`name@sha256:…`), matched like tags. */
  digests: string[];
  sizeBytes: number;
}

/** What image GC needs of the engine: where it keeps its data, its images, which are in use, the sandbox image's id. */
export interface ImageInventory {
  rootDir: string;
  images: EngineImage[];
  inUse: Set<string>;
  pinnedId: string;
  /** Images the engine itself keeps (a CRI runtime's `pinned` images and its own sandbox image): never collected. */
  enginePinned?: ReadonlySet<string>;
}

/** What the node status says of the engine. */
export interface EngineFacts {
  version: string;
  rootDir: string;
  cpus: number;
  memoryBytes: number;
  operatingSystem: string;
  kernelVersion: string;
  architecture: string;
}

/** A container's use of the node's disk: its writable layer and its log files (bytes), where the engine can tell. */
export interface ContainerDisk {
  rwBytes?: number;
  logBytes?: number;
}

/**
 * Which exits the engine itself restarts a container on (its own supervision, for pods no agent
 * watches): never, only on a failure (exit code not 0), or always.
 */
export type EngineRestartOn = 'never' | 'failure' | 'always';
