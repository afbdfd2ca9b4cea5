import { hostname } from 'node:os';
import type Docker from 'dockerode';
import type { Container, Pod } from '../../manifest/types.js';
import { boundedCall, connect, createRefusal, DockerRequestError, engineCalls, engineEndpoint, isNotFound, type ReadingCalls } from './engine.js';
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
} from '../runtime-types.js';
import { ImageStore } from './images.js';
import { ImagePresence } from '../image-presence.js';
import { containerDiskOf, engineFactsOf } from './readings.js';
import { LocalReadings } from './local-readings.js';
import { cgroupCandidates, type CgroupLayout } from '../cgroup-stats.js';
import { execAttachedIn, execIn, terminationMessageOf, writeLogsOf } from './streams.js';
import { endExec, localEngine } from './exec-end.js';
import { defaultHostIP, oomScoreFloor } from '../host.js';
import { instanceId, LABEL, MANAGED_BY } from '../labels.js';
import { groupObserved, type EngineRecord, type ObservedPod, type RecordKind } from '../observed.js';
import type { PodIdentity } from '../labels.js';
import type { VolumeBacking } from '../runtime-types.js';
import { Slots, unlessAborted, type SlotRequest } from '../slots.js';
import { engineClockMs, recordFromInspect, recordFromListed, statusFromInspect } from './records.js';
import { followEventStream } from './events.js';
import { removePodVolumes } from './volumes.js';
import { PodCreator } from './pod-creator.js';
import { takeOverRestarts } from './restarts.js';
import type { PodEngine } from '../roles.js';

/**
 * The Docker engine behind podrun's engine interface (roles.ts): pods in, engine objects out,
 * labels carrying identity. Also reaches Podman's Docker-compatible socket.
 */
export class DockerEngine implements PodEngine {
  readonly endpoint: string;
  /** The kubelet's runtime type: the scheme of container IDs (`docker://<id>`) and of the node's runtime version. */
  readonly runtimeName: string = 'docker';
  /**
   * Docker and Podman restart containers by their restart policy, stream, tell events and read
   * stats; an exec is killed from /proc, which is the engine's only when it is on this machine.
   */
  readonly capabilities: EngineCapabilities;
  readonly nodeName: string;
  private nodeIP: string | undefined;
  readonly instance: string;
  /** The lowest oom_score_adj this node lets the engine set. */
  readonly oomScoreFloor: number;
  /** The client and its bounded call, for the role modules. */
  private readonly calls: ReadingCalls;
  private readonly images: ImageStore;
  /** Image inspects that found the image, so a burst of starts asks once per image. */
  private readonly presence: ImagePresence;
  private readonly readings: LocalReadings;
  /** Bounds the calls that cost the engine; stops, execs, events and pulls are waits, not work, and are not bounded. */
  private readonly slots: Slots;
  /** Makes pods' volumes, sandboxes and containers (pod-creator.ts). */
  private readonly maker: PodCreator;
  private readonly createdListeners = new Set<(podUid: string, id: string, kind: RecordKind) => void>();

  constructor(readonly options: RuntimeOptions) {
    this.endpoint = engineEndpoint(options);
    this.nodeName = options.nodeName ?? hostname();
    this.instance = instanceId(options.stateDir);
    this.capabilities = { restartPolicy: true, execKill: localEngine({ endpoint: this.endpoint }), streaming: true, events: true, stats: true };
    this.oomScoreFloor = oomScoreFloor(this.endpoint);
    this.slots = new Slots(options.engineSlots ?? 4);
    this.calls = engineCalls(
      () => connect(options),
      this.endpoint,
      options,
      (what, fn, timeoutMs) => this.call(what, fn, timeoutMs),
    );
    this.images = new ImageStore(this.calls);
    this.presence = new ImagePresence((image) => this.images.present(image));
    this.readings = new LocalReadings(this.calls);
    const hostIP = (): string => this.hostIP;
    this.maker = new PodCreator({
      calls: this.calls,
      instance: this.instance,
      nodeName: this.nodeName,
      oomScoreFloor: this.oomScoreFloor,
      hostIP,
      images: this.images,
      presence: this.presence,
      work: (what, fn, o) => this.work(what, fn, o),
      create: (pod, what, opts, signal) => this.create(pod, what, opts, signal),
      ensureImage: (image, policy, onPull, signal) => this.ensureImage(image, policy, onPull, signal),
    });
  }

  /** The engine's client, made on first use (engineCalls). */
  private get docker(): Docker {
    return this.calls.docker;
  }

  /**
   * The node's IP, looked up on first use: listing the node's interfaces takes milliseconds on a
   * node with many containers (a veth each), and most commands (get, logs, delete) never need it.
   */
  get hostIP(): string {
    return (this.nodeIP ??= this.options.hostIP ?? defaultHostIP());
  }

  /**
   * Tells `fn` of every container this runtime creates, before it starts, so the pod cache can
   * look at it by id before the engine's event for it arrives.
   */
  onCreated(fn: (podUid: string, id: string, kind: RecordKind) => void): () => void {
    this.createdListeners.add(fn);
    return () => this.createdListeners.delete(fn);
  }

  private created(pod: Pod, id: string, kind: RecordKind): void {
    for (const fn of this.createdListeners) fn(pod.metadata.uid ?? '', id, kind);
  }

  /**
   * Containers and sandboxes by id, as a list call would show them; one that is gone maps to
   * undefined. Each inspect costs the engine O(1), where a list costs O(every container it
   * holds). Docker inspects a pause container as any other: its labels say it is a sandbox.
   */
  async inspectContainers(ids: ReadonlyMap<string, RecordKind>): Promise<Map<string, EngineRecord | undefined>> {
    const out = new Map<string, EngineRecord | undefined>();
    await Promise.all(
      [...ids.keys()].map(async (id) => {
        const info = await this.call('inspect container', () => this.calls.inspect(id)).catch((err: unknown) => {
          if (isNotFound(err)) return undefined;
          throw err;
        });
        out.set(id, info && info.Config.Labels?.[LABEL.instance] === this.instance ? recordFromInspect(info) : undefined);
      }),
    );
    return out;
  }

  /**
   * An engine call that costs the engine: it waits for a slot (removals first). Once the signal is
   * aborted (the pod went) the caller waits no more, for the slot or for the call: the call keeps
   * its slot until the engine answers, and whatever it made is the deletion's.
   */
  private work<T>(what: string, fn: () => Promise<T>, o?: SlotRequest): Promise<T> {
    return unlessAborted(
      this.slots.run(() => this.call(what, fn), o),
      o?.signal,
    );
  }

  /**
   * Creates a container of the pod. The cache hears of it as soon as the engine answers, also when
   * the caller gave up waiting: a create abandoned when its pod went lands later, for the
   * deletion to find.
   */
  private create(pod: Pod, what: string, opts: Docker.ContainerCreateOptions, signal: AbortSignal | undefined): Promise<Docker.Container> {
    const made = this.slots.run(
      () =>
        this.call(what, () => this.docker.createContainer(this.owned(opts))).catch((err: unknown) => {
          throw createRefusal(err);
        }),
      signal ? { signal } : {},
    );
    void made.then(
      // A pause container is the pod's sandbox: podrun's own label says so, as in its records.
      (c) => this.created(pod, c.id, opts.Labels?.[LABEL.containerType] === 'sandbox' ? 'sandbox' : 'container'),
      () => undefined,
    );
    return unlessAborted(made, signal);
  }

  private owned(opts: Docker.ContainerCreateOptions): Docker.ContainerCreateOptions {
    return { ...opts, Labels: { ...opts.Labels, [LABEL.instance]: this.instance } };
  }

  private call<T>(what: string, fn: () => Promise<T>, timeoutMs = this.options.requestTimeoutMs ?? 120_000): Promise<T> {
    return boundedCall(what, fn, timeoutMs, this.endpoint, this.options.observer, () => this.calls.engineName);
  }

  async ping(): Promise<void> {
    await this.call('ping', () => this.docker.ping());
  }

  /** Every pod podrun made on this engine (or one, by uid), from one list call. */
  async listPods(uid?: string): Promise<ObservedPod[]> {
    return groupObserved(await this.listContainers(uid));
  }

  /**
   * podrun's containers (all of them, or one pod's), as the engine lists them. One pod's list is a
   * deletion's last look (is anything of it left?): it goes before creates and waits for no removal.
   */
  async listContainers(uid?: string): Promise<EngineRecord[]> {
    const label = [`${LABEL.instance}=${this.instance}`, ...(uid ? [`${LABEL.podUid}=${uid}`] : [`${LABEL.managedBy}=${MANAGED_BY}`])];
    const list = await this.work('list containers', () => this.calls.list(label), uid ? { urgent: true, look: true } : {});
    const now = Date.now();
    return list.map((info) => recordFromListed(info, now));
  }

  /**
   * Follows the engine's container events for podrun's containers. Resolves once subscribed; `onEnd`
   * is called once when the stream ends or fails (the engine went away), so the caller reconnects.
   */
  async watchEvents(onEvent: (e: EngineEvent) => void, onEnd: (err?: Error) => void): Promise<() => void> {
    const stream = (await this.call('follow events', () =>
      this.docker.getEvents({ filters: JSON.stringify({ type: ['container'], label: [`${LABEL.instance}=${this.instance}`] }) }),
    )) as NodeJS.ReadableStream & { destroy?: () => void };
    // The engine's time once it follows: whatever its events file held then is stamped before it,
    // and in the list the caller makes next; it comes again only in a replay (Podman's, after the
    // file is cut: events.ts). The stream holds its events meanwhile (no reader yet); its end or
    // failure meanwhile fails the watch, as its own would.
    let failed: Error | undefined;
    const early = (err?: Error): void => void (failed ??= err ?? new Error('the engine ended its event stream'));
    stream.on('error', early);
    stream.on('close', early);
    const info: unknown = await this.call('engine time', () => this.docker.info()).catch((err: Error) => void (failed ??= err));
    stream.removeListener('error', early);
    stream.removeListener('close', early);
    if (failed) {
      stream.destroy?.();
      throw failed;
    }
    return followEventStream(stream, onEvent, onEnd, engineClockMs(info));
  }

  /** Runs a command in a running container (probes, hooks); gives up after `timeoutMs` or when `signal` aborts. */
  exec(containerId: string, command: string[], timeoutMs: number, signal?: AbortSignal): Promise<ExecResult> {
    return execIn(this.calls, containerId, command, timeoutMs, signal);
  }

  /** `podrun exec`: attached to the caller's streams, with a TTY when asked; resolves with the exit code. */
  execAttached(containerId: string, command: string[], o: ExecAttachOptions, streams: ExecStreams): Promise<number> {
    return execAttachedIn(this.calls, containerId, command, o, streams);
  }

  /**
   * Ends an exec whose client went away (a `podrun exec` killed, or its output closed): if its
   * process still runs, it and what it started are killed. Needs the engine's /proc (a local
   * engine); the answer says whether it could.
   */
  endAbandonedExec(ref: ExecRef): Promise<ExecEnd> {
    return endExec(this.calls, ref, false);
  }

  /** A container's log to `out` and `err`, streamed at the reader's pace; with `follow`, until it stops. */
  writeLogs(id: string, o: LogRequest, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<void> {
    return writeLogsOf(this.calls, id, o, out, err);
  }

  /** Has the image as its pull policy says, pulling it once however many containers want it. */
  ensureImage(image: string, policy: Container['imagePullPolicy'], onPull?: PullListener, signal?: AbortSignal): Promise<void> {
    return this.presence.ensure(image, policy, () => this.images.ensureImage(image, policy, onPull, signal));
  }

  /** Whether the engine has the image under this reference. */
  hasImage(image: string): Promise<boolean> {
    return this.images.present(image);
  }

  /** What image GC needs to know of the engine: where it keeps its data, its images, which are in use. */
  imageInventory(pinned: string): Promise<ImageInventory> {
    return this.images.inventory(pinned);
  }

  /** Removes an unused image, tag by tag, never by force. */
  removeImage(id: string, tags: readonly string[]): Promise<void> {
    // By id: any reference seen present may have been this image.
    this.presence.forget();
    return this.images.remove(id, tags);
  }

  /** Where the engine keeps containers' cgroups, when readings come from them (undefined: its stats API). */
  cgroupLayout(): Promise<CgroupLayout | undefined> {
    return this.readings.cgroupLayout();
  }

  /**
   * cAdvisor's name for each container: its cgroup's path, where this engine puts it (with
   * readings from the engine's API, where Docker puts it by default).
   */
  async containerCgroups(): Promise<(id: string) => string> {
    const layout = await this.cgroupLayout().catch(() => undefined);
    return (id) => `/${cgroupCandidates(layout?.driver ?? 'cgroupfs', id)[0] ?? id}`;
  }

  /** One container's resource counters from its cgroup (`oneShot`: at once, without a previous sample). */
  containerStats(id: string, oneShot: boolean, network = true): Promise<ContainerReading | undefined> {
    return this.readings.stats(id, oneShot, network);
  }

  /** A container's writable layer size and log file's (the engine sums the layer: call it seldom). */
  containerDisk(id: string): Promise<ContainerDisk | undefined> {
    return containerDiskOf(this.calls, id);
  }

  /** What the node status says of the engine. */
  engineFacts(): Promise<EngineFacts> {
    return engineFactsOf(this.calls);
  }

  /** A container's state, and how often the engine restarted it in place (under its own restart policy). */
  async containerState(id: string): Promise<ContainerStatus | undefined> {
    const info = await this.call('inspect container', () => this.calls.inspect(id)).catch(() => undefined);
    return info ? statusFromInspect(info.State, info.RestartCount) : undefined;
  }

  /** When an exited container finished (ms since epoch), for crash backoff. */
  async finishedAt(id: string): Promise<number | undefined> {
    const info = await this.call('inspect container', () => this.calls.inspect(id)).catch(() => undefined);
    const t = info ? Date.parse(info.State.FinishedAt) : NaN;
    return Number.isFinite(t) && t > 0 ? t : undefined;
  }

  /**
   * Takes a container's restarts over from the engine: its restart policy becomes `no`, in place
   * (restarts.ts). Undefined: the container is gone.
   */
  takeOverRestarts(id: string): Promise<EngineRestartOn | undefined> {
    return takeOverRestarts(this.calls, id);
  }

  /** What a finished container left as its termination message (the kubelet's rules: its file, or its log's tail). */
  terminationMessage(c: FinishedInstance, podUid: string): Promise<string | undefined> {
    return terminationMessageOf(this.calls, c, podUid);
  }

  /** Makes every volume of the pod exist on the host and says where it lives (pod-creator.ts, ../volumes.ts). */
  prepareVolumes(pod: Pod): Promise<Map<string, VolumeBacking>> {
    return this.maker.prepareVolumes(pod);
  }

  /**
   * Makes and starts the pod's sandbox (pod-creator.ts). `engineRestarts`: no agent supervises the pod,
   * so the engine keeps the sandbox up itself. Once `signal` is aborted nothing more is made.
   */
  createSandbox(
    pod: Pod,
    id: PodIdentity,
    attempt: number,
    hash: string,
    engineRestarts: boolean,
    volumes?: ReadonlyMap<string, VolumeBacking>,
    signal?: AbortSignal,
  ): Promise<SandboxInfo> {
    return this.maker.createSandbox(pod, id, attempt, hash, engineRestarts, volumes, signal);
  }

  /** The sandbox's id and IP (a hostNetwork pod's is the node's). */
  sandboxInfo(id: string, pod: Pod): Promise<SandboxInfo> {
    return this.maker.sandboxInfo(id, pod);
  }

  /** Makes and starts one of the pod's containers (pod-creator.ts); resolves with its id. */
  startContainer(pod: Pod, id: PodIdentity, c: Container, o: StartRequest): Promise<string> {
    return this.maker.startContainer(pod, id, c, o);
  }

  /** SIGTERM (or the image's stop signal), then SIGKILL after `graceSeconds`. Gone already is fine. */
  async stopContainer(id: string, graceSeconds: number): Promise<void> {
    const t = Math.max(0, Math.round(graceSeconds));
    await this.call('stop container', () => this.docker.getContainer(id).stop({ t }), t * 1000 + (this.options.requestTimeoutMs ?? 120_000)).catch(
      (err: unknown) => {
        if (isNotFound(err)) return;
        throw err;
      },
    );
  }

  /** Removes a container (forced: a running one is killed). `urgent`: a pod's deletion (see SlotRequest). */
  async removeContainer(id: string, o: { urgent?: boolean } = {}): Promise<void> {
    await this.work('remove container', () => this.docker.getContainer(id).remove({ force: true, v: true }), o.urgent ? { urgent: true } : {}).catch(
      (err: unknown) => {
        // 409: its removal is in progress already.
        if (isNotFound(err) || (err instanceof DockerRequestError && err.status === 409)) return;
        throw err;
      },
    );
  }

  /**
   * Stops a pod's sandbox at once: it only holds the namespaces, nothing in it shuts down cleanly.
   * On the Docker API a sandbox is the pause container.
   */
  stopSandbox(id: string): Promise<void> {
    return this.stopContainer(id, 0);
  }

  /** Removes a sandbox (after the pod's containers, which may still hold its namespaces); `urgent` as for removeContainer. */
  removeSandbox(id: string, o: { urgent?: boolean } = {}): Promise<void> {
    return this.removeContainer(id, o);
  }

  async removePodVolumes(uid: string): Promise<void> {
    await this.call('remove pod volumes', () => removePodVolumes(this.docker, this.options.stateDir, uid, this.instance));
  }
}
