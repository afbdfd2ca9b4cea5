import type { Container, Pod } from '../manifest/types.js';
import type { CgroupLayout } from './cgroup-stats.js';
import type { PodIdentity } from './labels.js';
import type { EngineRecord, ObservedPod, RecordKind } from './observed.js';
import type {
  ContainerDisk,
  ContainerReading,
  ContainerStatus,
  EngineCapabilities,
  EngineEvent,
  EngineFacts,
  EngineRestartOn,
  ExecAttachOptions,
  ExecEnd,
  ExecRef,
  ExecResult,
  ExecStreams,
  FinishedInstance,
  ImageInventory,
  LogRequest,
  PullListener,
  RuntimeOptions,
  SandboxInfo,
  StartRequest,
  VolumeBacking,
} from './runtime-types.js';

// The engine as each part of podrun sees it, by role: podrun's own interface, in the shape of the
// kubelet's runtime interface (CRI), whichever engine is behind it (the Docker API,
// src/runtime/docker/; a CRI runtime; the in-memory fake the unit tests drive). Sandboxes and
// containers are records with states, exit codes, times and labels (observed.ts,
// runtime-types.ts); their life is one event type; failures are typed (engine-errors.ts: a
// `kind`, never an engine's status code). Nothing outside src/runtime/ names an engine's own
// types, and each module asks only for the roles it uses.

/** Who this podrun instance and node are, as the engine was set up. */
export interface EngineIdentity {
  /** Which podrun (state dir) owns what it makes: labels.ts `instance`. */
  readonly instance: string;
  readonly hostIP: string;
  readonly nodeName: string;
  /** The lowest oom_score_adj this node lets the engine set. */
  readonly oomScoreFloor: number;
  readonly options: RuntimeOptions;
  /** Where the engine answers, as the user named it (for messages). */
  readonly endpoint: string;
  /** The kubelet's runtime type: the scheme of container IDs (`docker://<id>`) and of the node's runtime version. */
  readonly runtimeName: string;
  /** What this engine can do: callers ask, rather than pass what it would ignore. */
  readonly capabilities: EngineCapabilities;
}

/** Containers and sandboxes: made, stopped, removed, listed and watched (the pod worker's and the cache's role). */
export interface EngineLifecycle extends EngineIdentity {
  /** Answers once the engine does (fails with EngineUnavailableError otherwise). */
  ping(): Promise<void>;
  /**
   * Resolves once what was asked of the engine so far has left for it (never rejects): work of the
   * caller's own done after it overlaps the engine's answer. Without it, a request leaves at the
   * event loop's next turn, which synchronous work holds back.
   */
  requestsSent?(): Promise<void>;
  /**
   * Tells `fn` of every sandbox and container this engine creates (and which it is), before it
   * starts, so the pod cache can look at it by id before the engine's event for it arrives.
   * Returns the unsubscribe.
   */
  onCreated(fn: (podUid: string, id: string, kind: RecordKind) => void): () => void;
  /** Every pod podrun made on this engine (or one, by uid), from one list. */
  listPods(uid?: string): Promise<ObservedPod[]>;
  /** podrun's sandboxes and containers (all of them, or one pod's), as the engine lists them, each as what it is. */
  listContainers(uid?: string): Promise<EngineRecord[]>;
  /**
   * Records by id, each asked for as what it is (a CRI runtime answers a sandbox and a container
   * each by its own call), as a list would show them; one that is gone (or not this instance's)
   * maps to undefined.
   */
  inspectContainers(ids: ReadonlyMap<string, RecordKind>): Promise<Map<string, EngineRecord | undefined>>;
  /**
   * Follows the life of podrun's sandboxes and containers. Resolves once subscribed; `onEnd` is
   * called once when the stream ends or fails (the engine went away), so the caller reconnects.
   * Returns the unsubscribe.
   */
  watchEvents(onEvent: (e: EngineEvent) => void, onEnd: (err?: Error) => void): Promise<() => void>;
  /** A container's state now (the CRI's ContainerStatus); undefined when it is gone. */
  containerState(id: string): Promise<ContainerStatus | undefined>;
  /** When an exited container finished (ms since epoch), for crash back-off. */
  finishedAt(id: string): Promise<number | undefined>;
  /** What a finished container left as its termination message (the kubelet's rules: its file, or its log's tail). */
  terminationMessage(c: FinishedInstance, podUid: string): Promise<string | undefined>;
  /**
   * Takes a running container's restarts over from the engine (adoption: an agent now supervises
   * a pod made without one), in place: no restart, no new container. Answers what the engine
   * still restarts it on: 'never' once it gave that up (or never did), else what it keeps (an
   * engine that cannot change it, Podman 4.x); undefined when the container is gone.
   */
  takeOverRestarts(id: string): Promise<EngineRestartOn | undefined>;
  /** Makes every volume of the pod exist and says where each lives. */
  prepareVolumes(pod: Pod): Promise<Map<string, VolumeBacking>>;
  /**
   * Makes and starts the pod's sandbox. `engineRestarts`: no agent supervises the pod, so the engine
   * keeps the sandbox up itself. Once `signal` is aborted (the pod is no longer wanted) no wait goes
   * on and nothing more is made: `Cancelled`, and what was made is the deletion's.
   */
  createSandbox(
    pod: Pod,
    id: PodIdentity,
    attempt: number,
    hash: string,
    engineRestarts: boolean,
    volumes?: ReadonlyMap<string, VolumeBacking>,
    signal?: AbortSignal,
  ): Promise<SandboxInfo>;
  /** A running sandbox's address (the node's on the host network). */
  sandboxInfo(id: string, pod: Pod): Promise<SandboxInfo>;
  /** Stops a pod's sandbox at once: it only holds the namespaces. Gone already is fine. */
  stopSandbox(id: string): Promise<void>;
  /** Removes a sandbox (after the pod's containers); `urgent`: a pod's deletion, ahead of creates. */
  removeSandbox(id: string, o?: { urgent?: boolean }): Promise<void>;
  /** Creates and starts one container in the pod's sandbox; resolves with its id. */
  startContainer(pod: Pod, id: PodIdentity, c: Container, o: StartRequest): Promise<string>;
  /** The stop signal, then SIGKILL after `graceSeconds`. Gone already is fine. */
  stopContainer(id: string, graceSeconds: number): Promise<void>;
  /** Removes a container (a running one is killed); `urgent` as for removeSandbox. Gone already is fine. */
  removeContainer(id: string, o?: { urgent?: boolean }): Promise<void>;
  /** Removes what prepareVolumes made for the pod (its directory, the engine's memory volumes). */
  removePodVolumes(uid: string): Promise<void>;
}

/** Images: pulled when a container needs one, listed and removed by the image GC. */
export interface EngineImages {
  /** Has the image as its pull policy says, pulling it once however many containers want it. */
  ensureImage(image: string, policy: Container['imagePullPolicy'], onPull?: PullListener, signal?: AbortSignal): Promise<void>;
  /** Whether the engine has the image under this reference. */
  hasImage(image: string): Promise<boolean>;
  /** What image GC needs to know of the engine (`pinned`: the sandbox image, never removed). */
  imageInventory(pinned: string): Promise<ImageInventory>;
  /** Removes an unused image, tag by tag, never by force. */
  removeImage(id: string, tags: readonly string[]): Promise<void>;
}

/** Commands and logs: probes' and hooks' exec, `podrun exec` and `podrun logs`. */
export interface EngineStreams {
  /** Runs a command in a running container (probes, hooks); gives up after `timeoutMs` or when `signal` aborts. */
  exec(containerId: string, command: string[], timeoutMs: number, signal?: AbortSignal): Promise<ExecResult>;
  /** `podrun exec`: attached to the caller's streams, with a TTY when asked; resolves with the exit code. */
  execAttached(containerId: string, command: string[], o: ExecAttachOptions, streams: ExecStreams): Promise<number>;
  /** Ends an exec whose client went away: its processes killed where the engine's are in reach. */
  endAbandonedExec(ref: ExecRef): Promise<ExecEnd>;
  /** A container's log to `out` and `err`, at the reader's pace; with `follow`, until it stops. */
  writeLogs(id: string, o: LogRequest, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<void>;
}

/** Readings: container usage, disk, and the engine's facts about the node. */
export interface EngineReadings {
  /** One container's counters (`oneShot`: at once, without a previous sample; `network`: its namespace's too). */
  containerStats(id: string, oneShot: boolean, network?: boolean): Promise<ContainerReading | undefined>;
  /** A container's writable layer and log files (the engine may sum the layer: call it seldom). */
  containerDisk(id: string): Promise<ContainerDisk | undefined>;
  /** What the node status says of the engine. */
  engineFacts(): Promise<EngineFacts>;
  /** Where the engine keeps containers' cgroups, when readings come from them (undefined: its own stats). */
  cgroupLayout(): Promise<CgroupLayout | undefined>;
  /** cAdvisor's name for each container: its cgroup's path, where this engine puts it. */
  containerCgroups(): Promise<(id: string) => string>;
}

/** Every role: what the agent runs on. */
export interface PodEngine extends EngineLifecycle, EngineImages, EngineStreams, EngineReadings {}
