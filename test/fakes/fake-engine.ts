import type { Container, Pod } from '../../src/manifest/types.js';
import { containerLabels, engineName, instanceId, LABEL, sandboxLabels, type PodIdentity } from '../../src/runtime/labels.js';
import { groupObserved, type EngineContainer, type EngineRecord, type ObservedPod, type RecordKind } from '../../src/runtime/observed.js';
import type { PodEngine } from '../../src/runtime/roles.js';
import {
  ContainerStartError,
  ImageError,
  type EngineCapabilities,
  type EngineEvent,
  type EngineRestartOn,
  type RuntimeOptions,
  type SandboxInfo,
  type StartRequest,
  type VolumeBacking,
} from '../../src/runtime/runtime-types.js';

/**
 * What the fake holds of a container, or of a sandbox as its pause process (as Docker does): the
 * interface is told a sandbox as one (`record`, `emit`), ready while that process runs.
 */
type FakeContainer = Omit<EngineContainer, 'kind'> & { startedAt?: number; finishedAt?: number; engineRestarts?: number };

const isSandbox = (c: FakeContainer): boolean => c.labels[LABEL.containerType] === 'sandbox';

/** A copy of what the fake holds, as the engine interface says it: a sandbox as a sandbox. */
function record(c: FakeContainer): EngineRecord {
  const copy = structuredClone(c);
  if (!isSandbox(copy)) return { kind: 'container', ...copy };
  const { id, name, image, labels, state, created, ip, engineRestarting } = copy;
  return {
    kind: 'sandbox',
    id,
    name,
    image,
    labels,
    state: state === 'running' ? 'ready' : 'notready',
    createdAt: created,
    ...(ip ? { network: { ip } } : {}),
    ...(engineRestarting ? { engineRestarting } : {}),
  };
}

/** What a started container does: keep running, or exit at once with a code (a crash loop); `ignoresTerm`: a stop waits out its grace period, then kills (137). */
export type Behaviour = { exitCode?: number; ignoresTerm?: boolean };

/**
 * An in-memory engine behind podrun's engine interface (roles.ts), as a CRI runtime would be:
 * sandboxes and containers carry the labels every engine writes (labels.ts), the cache sees the
 * same lifecycle events, and a test decides
 * how each container behaves. Everything is synchronous underneath, so thousands of cycles run in
 * seconds. No engine, no I/O.
 */
export class FakeEngine implements PodEngine {
  readonly options: RuntimeOptions;
  readonly endpoint = 'fake://';
  readonly runtimeName = 'fake';
  readonly nodeName = 'fake-node';
  readonly hostIP = '127.0.0.2';
  readonly instance: string;
  readonly oomScoreFloor = -1000;
  /** What the fake says it can do: all of it unless a test turns a capability off. */
  capabilities: EngineCapabilities = { restartPolicy: true, execKill: true, streaming: true, events: true, stats: true };
  readonly containers = new Map<string, FakeContainer>();
  /** Every call by name, for tests that count what the engine was asked. */
  readonly calls = new Map<string, number>();
  /** How containers behave, by container name (default: they keep running). */
  behaviour: (c: { pod: string; container: string }) => Behaviour = () => ({});
  /** Containers (and sandboxes) made with an engine restart policy (no agent: `apply` runs alone), by id. */
  readonly engineRestarting = new Set<string>();
  /** Its list tells each running container's uptime, in whole seconds, as Docker's status text does (`startedBy`). */
  listsUptime = false;
  /** Makes the engine refuse every call, as a dead engine would. */
  down = false;
  /** When set, every create waits for it first: an engine slow to answer. */
  hold: Promise<void> | undefined;
  /** When set, every list waits for it first: a relist that takes long (an engine holding many dead containers). */
  listHold: Promise<void> | undefined;
  /** When set, a list is read at once but answered only once it resolves: a list in flight while podrun acts. */
  listAnswerHold: Promise<void> | undefined;
  /** Called between a container's create and its start, with its id: a list read then sees it created. */
  betweenCreateAndStart: ((id: string) => void) | undefined;
  /** When set, the engine refuses to create a container of this name (a bad mount, a missing binary): CreateContainerError. */
  refuseCreate: (c: { pod: string; container: string; image: string }) => string | undefined = () => undefined;
  /** The event stream is cut and cannot be followed again until `restoreEvents` (an engine whose events API hangs). */
  private eventsCut = false;
  private readonly watchers = new Set<{ onEvent: (e: EngineEvent) => void; onEnd: (err?: Error) => void }>();
  private readonly createdListeners = new Set<(podUid: string, id: string, kind: RecordKind) => void>();
  private next = 1;

  constructor(options: Partial<RuntimeOptions> & { stateDir: string }) {
    this.options = { pauseImage: 'pause:fake', ...options };
    this.instance = instanceId(options.stateDir);
  }

  /** Called after every call to the engine and every event it sends: a test waits on these, not on a clock. */
  readonly activity = new Set<() => void>();

  /**
   * Resolves once `ok()` holds: looked at right after each engine call or event (in the turn after,
   * once the caller's step is done), and every 10 ms besides, for what the agent does without the
   * engine. A test waiting so pays no timer's delay per step (a poll every 1 ms slept through
   * most of a fast update loop on a loaded machine).
   */
  until(what: string, ok: () => boolean, timeoutMs = 60_000): Promise<void> {
    if (ok()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      let pending = false;
      const look = (): void => {
        pending = false;
        if (!ok()) return;
        end();
        resolve();
      };
      const soon = (): void => {
        if (pending) return;
        pending = true;
        setImmediate(look);
      };
      const poll = setInterval(soon, 10);
      const timer = setTimeout(() => {
        end();
        reject(new Error(`timed out waiting for ${what}`));
      }, timeoutMs);
      const end = (): void => {
        clearInterval(poll);
        clearTimeout(timer);
        this.activity.delete(soon);
      };
      this.activity.add(soon);
    });
  }

  private count(what: string): void {
    this.calls.set(what, (this.calls.get(what) ?? 0) + 1);
    for (const fn of this.activity) fn();
    if (this.down) throw Object.assign(new Error(`cannot reach the fake engine: ${what}`), { code: 'ECONNREFUSED' });
  }

  /** The wall clock, as the engine's (instances order by their restart count, as podrun reads them). */
  private now(): number {
    return Date.now();
  }

  private emit(kind: 'created' | 'started' | 'exited' | 'removed', c: FakeContainer): void {
    const base = { id: c.id, labels: { ...c.labels }, name: c.name, image: c.image, timeMs: this.now() };
    // A sandbox's pause process told as its sandbox's state, as the Docker engine tells it: its create is no news.
    const state = ({ created: undefined, started: 'ready', exited: 'notready', removed: 'removed' } as const)[kind];
    if (isSandbox(c) && !state) return;
    const e: EngineEvent =
      isSandbox(c) && state ? { kind: 'sandbox', state, ...base } : { kind, ...base, ...(kind === 'exited' ? { exitCode: c.exitCode ?? 0 } : {}) };
    if (this.held) this.held.push(e);
    else for (const w of [...this.watchers]) w.onEvent(e);
    for (const fn of this.activity) fn();
  }

  private held: EngineEvent[] | undefined;

  /**
   * Events are kept back until the returned function tells them, in order: an event stream (or the
   * CRI relist that stands in for one) that is slower than podrun's own look at what it made.
   * `after` runs after each event is told.
   */
  holdEvents(): (after?: () => void) => void {
    this.held = [];
    return (after) => {
      const late = this.held ?? [];
      this.held = undefined;
      for (const e of late) {
        for (const w of [...this.watchers]) w.onEvent(e);
        after?.();
      }
    };
  }

  /** `byPodrun`: podrun's own create, told to its listeners as the runtime tells them (not someone else's). */
  private make(name: string, image: string, labels: Record<string, string>, ip?: string, byPodrun = true): FakeContainer {
    const id = `fake${String(this.next++).padStart(12, '0')}`;
    const c: FakeContainer = { id, name, image, labels, state: 'created', created: Math.floor(this.now() / 1000), ...(ip ? { ip } : {}) };
    this.containers.set(id, c);
    if (byPodrun) for (const fn of this.createdListeners) fn(labels[LABEL.podUid] ?? '', id, isSandbox(c) ? 'sandbox' : 'container');
    this.emit('created', c);
    return c;
  }

  private run(c: FakeContainer): void {
    c.state = 'running';
    delete c.engineRestarting;
    delete c.exitCode;
    c.startedAt = this.now();
    delete c.finishedAt;
    this.emit('started', c);
    const b = this.behaviour({ pod: c.labels[LABEL.podName] ?? '', container: c.labels[LABEL.containerName] ?? '' });
    // A process ends after its start returns, in a later turn, as a real one does.
    const code = b.exitCode;
    if (code !== undefined) setImmediate(() => this.exit(c.id, code));
  }

  /** The container's process ends with `code` (a crash when not 0). */
  exit(id: string, code: number): void {
    const c = this.containers.get(id);
    if (!c || c.state !== 'running') return;
    c.state = 'exited';
    c.exitCode = code;
    c.finishedAt = this.now();
    this.emit('exited', c);
  }

  /**
   * The engine decides to restart an exited container in place and waits before it does (Docker's
   * restart manager): `unknown` and engine-restarting (cri-dockerd's words), its restart counted already, as Docker raises RestartCount.
   */
  restartPending(id: string): void {
    const c = this.containers.get(id);
    if (c?.state !== 'exited') return;
    c.state = 'unknown';
    c.engineRestarting = true;
    c.engineRestarts = (c.engineRestarts ?? 0) + 1;
  }

  /** The engine restarts an exited container in place (its own restart policy): same id, running again. */
  restartInPlace(id: string): void {
    const c = this.containers.get(id);
    if (c?.state === 'exited' || c?.engineRestarting) this.run(c);
  }

  /** Cuts the event stream, as an engine restart does. */
  dropEvents(err = new Error('the fake event stream ended')): void {
    for (const w of [...this.watchers]) {
      this.watchers.delete(w);
      w.onEnd(err);
    }
  }

  /** Cuts the event stream and keeps it cut: what happens meanwhile is never told. */
  cutEvents(): void {
    this.eventsCut = true;
    this.dropEvents();
  }

  restoreEvents(): void {
    this.eventsCut = false;
  }

  /** Someone else destroys a container (docker rm, a prune): told only to an event stream that is up. */
  destroy(id: string): void {
    const c = this.containers.get(id);
    if (!c) return;
    this.containers.delete(id);
    this.emit('removed', c);
  }

  /** A dead instance of a container of the pod that `like` belongs to, under another container name (an earlier spec's). */
  addExited(like: string, name: string, image?: string): string {
    const model = this.containers.get(like);
    if (!model) throw new Error(`no container ${like}`);
    const labels = { ...model.labels, [LABEL.containerName]: name, [LABEL.restartCount]: '0' };
    const c = this.make(`${model.name}-${name}`, image ?? model.image, labels, undefined, false);
    this.run(c);
    this.exit(c.id, 0);
    return c.id;
  }

  podCount(): number {
    return groupObserved([...this.containers.values()].map(record)).length;
  }

  // --- EngineLifecycle

  onCreated(fn: (podUid: string, id: string, kind: RecordKind) => void): () => void {
    this.createdListeners.add(fn);
    return () => this.createdListeners.delete(fn);
  }

  async ping(): Promise<void> {
    this.count('ping');
  }

  async listContainers(uid?: string): Promise<EngineRecord[]> {
    this.count('list');
    if (this.listHold) await this.listHold;
    const now = this.now();
    const list = [...this.containers.values()]
      .filter((c) => !uid || c.labels[LABEL.podUid] === uid)
      .map((c) => {
        const rec = record(c);
        if (rec.kind === 'container' && this.listsUptime && c.state === 'running' && c.startedAt !== undefined)
          rec.startedBy = now - Math.floor((now - c.startedAt) / 1000) * 1000;
        return rec;
      });
    if (this.listAnswerHold) await this.listAnswerHold;
    return list;
  }

  async listPods(uid?: string): Promise<ObservedPod[]> {
    return groupObserved(await this.listContainers(uid));
  }

  /** Asked for as what it is not (a sandbox as a container), a record is none: a CRI runtime's NotFound. */
  async inspectContainers(ids: ReadonlyMap<string, RecordKind>): Promise<Map<string, EngineRecord | undefined>> {
    this.count('inspect');
    return new Map(
      [...ids].map(([id, kind]) => {
        const c = this.containers.get(id);
        const rec = c ? record(c) : undefined;
        return [id, rec?.kind === kind ? rec : undefined];
      }),
    );
  }

  async watchEvents(onEvent: (e: EngineEvent) => void, onEnd: (err?: Error) => void): Promise<() => void> {
    this.count('events');
    if (this.eventsCut) throw Object.assign(new Error('the fake event stream is cut'), { code: 'ECONNRESET' });
    const w = { onEvent, onEnd };
    this.watchers.add(w);
    return () => this.watchers.delete(w);
  }

  async containerState(id: string): ReturnType<PodEngine['containerState']> {
    this.count('inspect');
    const c = this.containers.get(id);
    if (!c) return undefined;
    return {
      state: c.state,
      exitCode: c.exitCode ?? 0,
      ...(c.startedAt ? { startedAt: new Date(c.startedAt).toISOString() } : {}),
      ...(c.finishedAt ? { finishedAt: new Date(c.finishedAt).toISOString() } : {}),
      oomKilled: false,
      engineRestarts: c.engineRestarts ?? 0,
      restarting: c.engineRestarting === true,
    };
  }

  async finishedAt(id: string): Promise<number | undefined> {
    return this.containers.get(id)?.finishedAt;
  }

  async terminationMessage(): Promise<string | undefined> {
    return undefined;
  }

  /** The fake restarts nothing by itself: there is never anything to take over. */
  async takeOverRestarts(id: string): Promise<EngineRestartOn | undefined> {
    this.count('inspect');
    return this.containers.has(id) ? 'never' : undefined;
  }

  async prepareVolumes(pod: Pod): Promise<Map<string, VolumeBacking>> {
    return new Map((pod.spec.volumes ?? []).map((v) => [v.name, { kind: 'bind' as const, path: `/fake/volumes/${v.name}` }]));
  }

  // The fake restarts nothing by itself: `engineRestarts` is only noted (a test restarts in place); its volumes are the prepared ones.
  async createSandbox(
    pod: Pod,
    id: PodIdentity,
    attempt: number,
    hash: string,
    engineRestarts?: boolean,
    _volumes?: ReadonlyMap<string, VolumeBacking>,
  ): Promise<SandboxInfo> {
    await this.hold;
    this.count('create');
    const labels = { ...sandboxLabels(pod, id, attempt, hash), [LABEL.instance]: this.instance };
    const ip = pod.spec.hostNetwork ? undefined : `10.88.${(this.next >> 8) & 255}.${this.next & 255}`;
    this.refuseUnable(engineRestarts);
    const c = this.make(engineName({ ...id, instance: this.instance }, 'POD', attempt), this.options.pauseImage, labels, ip);
    if (engineRestarts) this.engineRestarting.add(c.id);
    this.count('start');
    this.run(c);
    return { id: c.id, ip: ip ?? this.hostIP };
  }

  /** A caller that asks for engine restarts of an engine without them has not asked its capabilities. */
  private refuseUnable(engineRestarts: boolean | undefined): void {
    if (engineRestarts && !this.capabilities.restartPolicy) throw new Error('the fake engine was asked for restarts it says it cannot keep');
  }

  async sandboxInfo(id: string, pod: Pod): Promise<SandboxInfo> {
    this.count('inspect');
    return { id, ip: pod.spec.hostNetwork ? this.hostIP : (this.containers.get(id)?.ip ?? '') };
  }

  async startContainer(pod: Pod, id: PodIdentity, c: Container, o: StartRequest): Promise<string> {
    await this.hold;
    if (!o.imageReady) await this.ensureImage(c.image);
    this.count('create');
    const refused = this.refuseCreate({ pod: pod.metadata.name, container: c.name, image: c.image });
    if (refused) {
      this.count('create refused');
      await new Promise((r) => setImmediate(r));
      throw new ContainerStartError(refused, 'CreateContainerError');
    }
    this.refuseUnable(o.engineRestarts);
    const labels = { ...containerLabels(pod, id, c, o.type, o.restartCount, o.hash), [LABEL.instance]: this.instance };
    const made = this.make(engineName({ ...id, instance: this.instance }, c.name, o.restartCount), c.image, labels);
    if (o.engineRestarts) this.engineRestarting.add(made.id);
    this.betweenCreateAndStart?.(made.id);
    this.count('start');
    this.run(made);
    return made.id;
  }

  async stopContainer(id: string, graceSeconds = 0): Promise<void> {
    this.count('stop');
    this.notSandbox(id, 'stopContainer');
    const c = this.containers.get(id);
    const b = c ? this.behaviour({ pod: c.labels[LABEL.podName] ?? '', container: c.labels[LABEL.containerName] ?? '' }) : {};
    // The stop signal ends it: 143 for SIGTERM, as a shell that traps nothing exits. One that
    // ignores it runs out its grace period, as the engine's stop does, and is killed.
    if (!b.ignoresTerm || c?.state !== 'running') return this.exit(id, 143);
    await new Promise((r) => setTimeout(r, graceSeconds * 1000));
    this.exit(id, 137);
  }

  async removeContainer(id: string): Promise<void> {
    this.count('remove');
    this.notSandbox(id, 'removeContainer');
    const c = this.containers.get(id);
    if (!c) return;
    if (c.state === 'running') this.exit(id, 137);
    this.containers.delete(id);
    this.emit('removed', c);
  }

  /** A sandbox is not a container to the engine interface (on a CRI runtime it is not one at all). */
  private notSandbox(id: string, call: string): void {
    if (this.containers.get(id)?.labels[LABEL.containerType] === 'sandbox') throw new Error(`${call} of ${id}: a sandbox (use stopSandbox/removeSandbox)`);
  }

  async stopSandbox(id: string): Promise<void> {
    this.count('stop sandbox');
    if (this.containers.get(id)?.labels[LABEL.containerType] !== 'sandbox') throw new Error(`stopSandbox of ${id}: not a sandbox`);
    this.exit(id, 0);
  }

  async removeSandbox(id: string): Promise<void> {
    this.count('remove sandbox');
    const c = this.containers.get(id);
    if (!c) return;
    if (c.labels[LABEL.containerType] !== 'sandbox') throw new Error(`removeSandbox of ${id}: not a sandbox`);
    if (c.state === 'running') this.exit(id, 137);
    this.containers.delete(id);
    this.emit('removed', c);
  }

  async removePodVolumes(): Promise<void> {
    this.count('volumes');
  }

  // --- EngineImages, EngineStreams, EngineReadings

  /** Images whose pull fails (a registry that is down, a tag that is missing). */
  readonly failingPulls = new Set<string>();

  /** The images the engine holds, by reference, each with its id. */
  readonly images = new Map<string, string>();

  async ensureImage(image: string): Promise<void> {
    this.count('image');
    if (this.failingPulls.has(image)) {
      this.count('image failed');
      // The registry's answer comes in a later turn, as real I/O's does (a retry at once is then no busy loop).
      await new Promise((r) => setImmediate(r));
      throw new ImageError(`failed to pull image ${image}: registry unreachable`, 'ErrImagePull');
    }
    if (!this.images.has(image)) this.images.set(image, `sha256:fake${String(this.next++).padStart(12, '0')}`);
  }

  async hasImage(): Promise<boolean> {
    return true;
  }

  /** Each image is one byte on the state directory's file system (so any usage is above a 0 % threshold). */
  async imageInventory(): ReturnType<PodEngine['imageInventory']> {
    const inUse = new Set([...this.containers.values()].flatMap((c) => this.images.get(c.image) ?? []));
    const images = [...this.images].map(([ref, id]) => ({ id, tags: [ref], digests: [], sizeBytes: 1 }));
    return { rootDir: this.options.stateDir, images, inUse, pinnedId: this.images.get(this.options.pauseImage) ?? '' };
  }

  async removeImage(id: string): Promise<void> {
    this.count('image remove');
    for (const [ref, have] of this.images) if (have === id) this.images.delete(ref);
  }

  /** What an exec answers (probes, hooks). */
  execResult: (containerId: string, command: string[]) => { exitCode: number; output: string } = () => ({ exitCode: 0, output: '' });

  async exec(containerId: string, command: string[]): ReturnType<PodEngine['exec']> {
    this.count('exec');
    return this.execResult(containerId, command);
  }

  async execAttached(): Promise<number> {
    return 0;
  }

  async endAbandonedExec(): ReturnType<PodEngine['endAbandonedExec']> {
    return 'finished';
  }

  async writeLogs(): Promise<void> {
    return undefined;
  }

  async containerStats(): ReturnType<PodEngine['containerStats']> {
    return undefined;
  }

  async cgroupLayout(): ReturnType<PodEngine['cgroupLayout']> {
    return undefined;
  }

  async containerCgroups(): ReturnType<PodEngine['containerCgroups']> {
    return (id) => `/fake/${id}`;
  }

  async containerDisk(): ReturnType<PodEngine['containerDisk']> {
    return undefined;
  }

  async engineFacts(): ReturnType<PodEngine['engineFacts']> {
    return { version: 'fake', rootDir: '/fake', cpus: 2, memoryBytes: 2 ** 34, operatingSystem: 'fake', kernelVersion: '6.0', architecture: 'x86_64' };
  }
}
