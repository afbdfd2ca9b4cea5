import { join } from 'node:path';
import {
  CriDeadlineError,
  CriExecTimeoutError,
  CriNotFoundError,
  CriNotSupportedError,
  CriRequestError,
  CriUnreachableError,
} from '../../src/runtime/cri/errors.js';
import { ContainerEventType, ContainerState, PodSandboxState } from '../../src/runtime/cri/messages.js';
import type * as M from '../../src/runtime/cri/messages.js';
import type { ContainerFilter, CriRuntimeService, ExecOptions, SandboxFilter } from '../../src/runtime/cri/runtime-service.js';

// An in-memory CRI runtime, shaped like cri-api's FakeRuntimeService
// (k8s.io/cri-api/pkg/apis/testing/fake_runtime_service.go): sandboxes and containers in CRI's
// states, labels and annotations kept as sent, lists filtered as containerd filters them (labels
// only: an annotation never matches a selector). Every call is recorded with its request, in
// order; an error injected for a call is thrown by its next use, before it acts. The image service
// is here too: a container is made only from an image the runtime holds, as containerd refuses.
// Where the fake answers as containerd does (1.6/1.7), it says so beside the call.

export const FAKE_ENDPOINT = 'fake:///cri';

/** One call as the runtime received it. */
export interface RecordedCall {
  name: string;
  request: Record<string, unknown>;
}

export interface FakeSandbox {
  status: M.PodSandboxStatusInfo;
  config: M.PodSandboxConfigInput;
}

export interface FakeContainer {
  status: M.ContainerStatusInfo;
  sandboxId: string;
  config: M.ContainerConfigInput;
}

/** What an ExecSync answers: a result, or 'timeout' (the runtime ended the command at its timeout). */
export type ExecAnswer = { exitCode: number; stdout?: string; stderr?: string } | 'timeout';

/** The client's typed errors, as a runtime's refusals reach the engine (errors.ts). */
export const criErrors = {
  notFound: (method: string, detail = 'not found'): Error => new CriNotFoundError(FAKE_ENDPOINT, method, detail),
  deadline: (method: string, timeoutMs = 120_000): Error => new CriDeadlineError(FAKE_ENDPOINT, method, timeoutMs),
  unimplemented: (method: string): Error => new CriNotSupportedError(FAKE_ENDPOINT, method, `unknown method ${method}`),
  /** The socket gone (gRPC Unavailable as the channel tells it: nobody listening). */
  unavailable: (): Error => new CriUnreachableError(FAKE_ENDPOINT, 'connect ECONNREFUSED', 'ECONNREFUSED'),
  invalidArgument: (method: string, detail: string): Error => new CriRequestError(FAKE_ENDPOINT, method, detail, 3),
  failedPrecondition: (method: string, detail: string): Error => new CriRequestError(FAKE_ENDPOINT, method, detail, 9),
  alreadyExists: (method: string, detail: string): Error => new CriRequestError(FAKE_ENDPOINT, method, detail, 6),
};

const labelsMatch = (selector: M.Labels | undefined, labels: M.Labels): boolean => Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);

export class FakeCriRuntime implements CriRuntimeService {
  readonly calls: RecordedCall[] = [];
  readonly sandboxes = new Map<string, FakeSandbox>();
  readonly containers = new Map<string, FakeContainer>();
  /** Images by id; found by id, tag or digest. */
  readonly images = new Map<string, M.ImageInfo>();
  /** containerd before 1.7: GetContainerEvents answers Unimplemented. */
  eventsUnimplemented = false;
  /** Events made while held wait for releaseEvents(): a stream slower than a relist, as under load. */
  private held: M.ContainerEvent[] | undefined;
  /** How an ExecSync ends; exit 0 with no output unless a test says otherwise. */
  execAnswer: (containerId: string, cmd: string[]) => ExecAnswer = () => ({ exitCode: 0 });
  /** The runtime's verbose Status `info` (containerd: `config` as JSON). */
  info: M.Labels = {};
  closed = false;
  private readonly errors = new Map<string, Error[]>();
  private readonly subscribers = new Set<(ev: M.ContainerEvent) => void>();
  private nextId = 1;
  private nextIp = 2;
  /** The runtime's clock, in ns: each change is a second after the one before, so times order. */
  private clockNs = 1_700_000_000_000_000_000n;

  constructor(readonly endpoint = FAKE_ENDPOINT) {}

  // ---- what a test scripts and reads ----

  /** The next call of `name` (a gRPC method, e.g. `StopContainer`) throws `err` instead of acting. Queued, one per call. */
  injectError(name: string, err: Error): void {
    this.errors.set(name, [...(this.errors.get(name) ?? []), err]);
  }

  /** The names of the calls made, in order. */
  callNames(): string[] {
    return this.calls.map((c) => c.name);
  }

  /** The calls of one method, with their requests. */
  callsOf(name: string): RecordedCall[] {
    return this.calls.filter((c) => c.name === name);
  }

  clearCalls(): void {
    this.calls.length = 0;
  }

  addImage(ref: string, o: { id?: string; user?: string; pinned?: boolean } = {}): M.ImageInfo {
    const info: M.ImageInfo = {
      id: o.id ?? `sha256:${(this.nextId++).toString(16).padStart(64, '0')}`,
      repoTags: [ref],
      repoDigests: [],
      size: 1_000_000n,
      uid: o.user && /^\d+$/.test(o.user) ? { value: BigInt(o.user) } : undefined,
      username: o.user && !/^\d+$/.test(o.user) ? o.user : '',
      pinned: o.pinned ?? false,
    };
    this.images.set(info.id, info);
    return info;
  }

  /** The container's process ends by itself (a crash, a completion): EXITED with its code, told as containerd tells it. */
  exitContainer(id: string, exitCode: number, o: { finishedAt?: bigint; reason?: string; message?: string } = {}): void {
    const c = this.mustContainer(id, 'exitContainer');
    c.status.state = ContainerState.EXITED;
    c.status.exitCode = exitCode;
    c.status.finishedAt = o.finishedAt ?? this.tick();
    c.status.reason = o.reason ?? (exitCode === 0 ? 'Completed' : 'Error');
    c.status.message = o.message ?? '';
    this.tell(ContainerEventType.STOPPED, id);
  }

  /** The runtime lost track of the container (its shim died): UNKNOWN. */
  loseContainer(id: string): void {
    this.mustContainer(id, 'loseContainer').status.state = ContainerState.UNKNOWN;
  }

  /** The sandbox's pause process died (killed, OOM): NOTREADY, no stop asked. */
  killSandbox(id: string): void {
    const s = this.sandboxes.get(id);
    if (!s) throw new Error(`fake: no sandbox ${id}`);
    s.status.state = PodSandboxState.NOTREADY;
    this.tell(ContainerEventType.STOPPED, id);
  }

  holdEvents(): void {
    this.held ??= [];
  }

  /** Sends the events held, in the order they were made. */
  releaseEvents(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const ev of held) for (const push of this.subscribers) push(ev);
  }

  // ---- RuntimeService ----

  async version(): Promise<M.VersionInfo> {
    this.call('Version', { version: 'v1' });
    return { version: '0.1.0', runtimeName: 'fakeRuntime', runtimeVersion: '0.1.0', runtimeApiVersion: 'v1' };
  }

  async runPodSandbox(config: M.PodSandboxConfigInput, runtimeHandler = ''): Promise<string> {
    this.call('RunPodSandbox', { config, runtimeHandler });
    const id = this.newId('sandbox');
    const hostNetwork = config.linux?.securityContext?.namespaceOptions?.network === 2;
    this.sandboxes.set(id, {
      config,
      status: {
        id,
        metadata: { ...config.metadata },
        state: PodSandboxState.READY,
        createdAt: this.tick(),
        // containerd reports no pod IP for a host-network sandbox.
        network: { ip: hostNetwork ? '' : `10.88.0.${this.nextIp++}`, additionalIps: [] },
        labels: { ...config.labels },
        annotations: { ...config.annotations },
        runtimeHandler,
      },
    });
    this.tell(ContainerEventType.CREATED, id);
    this.tell(ContainerEventType.STARTED, id);
    return id;
  }

  /** Stops what still runs in it (SIGKILL: 137), then NOTREADY. Missing: NotFound, as containerd 1.6. */
  async stopPodSandbox(podSandboxId: string): Promise<void> {
    this.call('StopPodSandbox', { podSandboxId });
    const s = this.sandboxes.get(podSandboxId);
    if (!s) throw criErrors.notFound('StopPodSandbox', `an error occurred when try to find sandbox ${podSandboxId}`);
    for (const [id, c] of this.containers) if (c.sandboxId === podSandboxId && c.status.state === ContainerState.RUNNING) this.stopped(id, c, 137);
    if (s.status.state === PodSandboxState.READY) {
      s.status.state = PodSandboxState.NOTREADY;
      this.tell(ContainerEventType.STOPPED, podSandboxId);
    }
  }

  /** Removes it and its containers; removing what is gone is no error (containerd: "called for sandbox that does not exist"). */
  async removePodSandbox(podSandboxId: string): Promise<void> {
    this.call('RemovePodSandbox', { podSandboxId });
    const s = this.sandboxes.get(podSandboxId);
    if (!s) return;
    if (s.status.state === PodSandboxState.READY) throw criErrors.failedPrecondition('RemovePodSandbox', `sandbox ${podSandboxId} is not stopped`);
    for (const [id, c] of this.containers) if (c.sandboxId === podSandboxId) this.removed(id);
    this.tell(ContainerEventType.DELETED, podSandboxId);
    this.sandboxes.delete(podSandboxId);
  }

  async podSandboxStatus(podSandboxId: string): Promise<M.PodSandboxStatusInfo> {
    return (await this.podSandboxStatusAs(podSandboxId, false)).status;
  }

  podSandboxStatusVerbose(podSandboxId: string): Promise<{ status: M.PodSandboxStatusInfo; info: M.Labels }> {
    return this.podSandboxStatusAs(podSandboxId, true);
  }

  async listPodSandbox(filter?: SandboxFilter): Promise<M.PodSandboxItem[]> {
    this.call('ListPodSandbox', { filter });
    return [...this.sandboxes.values()]
      .filter(
        ({ status: s }) =>
          (!filter?.id || filter.id === s.id) && (!filter?.state || filter.state.state === s.state) && labelsMatch(filter?.labelSelector, s.labels),
      )
      .map(({ status: s }) =>
        structuredClone({
          id: s.id,
          metadata: s.metadata,
          state: s.state,
          createdAt: s.createdAt,
          labels: s.labels,
          annotations: s.annotations,
          runtimeHandler: s.runtimeHandler,
        }),
      );
  }

  /** From an image the runtime holds, in a READY sandbox (containerd refuses either otherwise). */
  async createContainer(podSandboxId: string, config: M.ContainerConfigInput, sandboxConfig: M.PodSandboxConfigInput): Promise<string> {
    this.call('CreateContainer', { podSandboxId, config, sandboxConfig });
    const s = this.sandboxes.get(podSandboxId);
    if (!s) throw criErrors.notFound('CreateContainer', `failed to get sandbox ${podSandboxId}`);
    if (s.status.state !== PodSandboxState.READY) throw criErrors.failedPrecondition('CreateContainer', `sandbox ${podSandboxId} is not ready`);
    const image = this.findImage(config.image.image);
    if (!image) throw criErrors.notFound('CreateContainer', `failed to get image "${config.image.image}": not found`);
    const id = this.newId('container');
    this.containers.set(id, {
      sandboxId: podSandboxId,
      config,
      status: {
        id,
        metadata: { name: config.metadata.name, attempt: config.metadata.attempt ?? 0 },
        state: ContainerState.CREATED,
        createdAt: this.tick(),
        startedAt: 0n,
        finishedAt: 0n,
        exitCode: 0,
        image: { image: config.image.image },
        imageRef: image.id,
        reason: '',
        message: '',
        labels: { ...config.labels },
        annotations: { ...config.annotations },
        mounts: (config.mounts ?? []).map((m) => ({
          containerPath: m.containerPath,
          hostPath: m.hostPath,
          readonly: m.readonly ?? false,
          selinuxRelabel: m.selinuxRelabel ?? false,
          propagation: m.propagation ?? 0,
          recursiveReadOnly: m.recursiveReadOnly ?? false,
        })),
        logPath: config.logPath ? join(sandboxConfig.logDirectory ?? '', config.logPath) : '',
        imageId: image.id,
      },
    });
    this.tell(ContainerEventType.CREATED, id);
    return id;
  }

  async startContainer(containerId: string): Promise<void> {
    this.call('StartContainer', { containerId });
    const c = this.mustContainer(containerId, 'StartContainer');
    if (c.status.state !== ContainerState.CREATED) throw criErrors.failedPrecondition('StartContainer', `container ${containerId} is not in created state`);
    c.status.state = ContainerState.RUNNING;
    c.status.startedAt = this.tick();
    this.tell(ContainerEventType.STARTED, containerId);
  }

  /** The fake's process dies of its stop signal within the grace (SIGTERM: 143). Stopped already is fine; missing is NotFound. */
  async stopContainer(containerId: string, graceSeconds: number): Promise<void> {
    this.call('StopContainer', { containerId, timeout: graceSeconds });
    const c = this.mustContainer(containerId, 'StopContainer');
    if (c.status.state === ContainerState.RUNNING) this.stopped(containerId, c, 143);
  }

  /** Refused while it runs (containerd: "must be stopped before deletion"); removing what is gone is no error. */
  async removeContainer(containerId: string): Promise<void> {
    this.call('RemoveContainer', { containerId });
    const c = this.containers.get(containerId);
    if (!c) return;
    if (c.status.state === ContainerState.RUNNING)
      throw criErrors.failedPrecondition('RemoveContainer', `container ${containerId} is still running, must be stopped before deletion`);
    this.removed(containerId);
  }

  async listContainers(filter?: ContainerFilter): Promise<M.ContainerItem[]> {
    this.call('ListContainers', { filter });
    return [...this.containers.values()]
      .filter(
        (c) =>
          (!filter?.id || filter.id === c.status.id) &&
          (!filter?.podSandboxId || filter.podSandboxId === c.sandboxId) &&
          (!filter?.state || filter.state.state === c.status.state) &&
          labelsMatch(filter?.labelSelector, c.status.labels),
      )
      .map(({ status: s, sandboxId }) =>
        structuredClone({
          id: s.id,
          podSandboxId: sandboxId,
          metadata: s.metadata,
          image: s.image,
          imageRef: s.imageRef,
          state: s.state,
          createdAt: s.createdAt,
          labels: s.labels,
          annotations: s.annotations,
          imageId: s.imageId,
        }),
      );
  }

  async containerStatus(containerId: string): Promise<M.ContainerStatusInfo> {
    return (await this.containerStatusAs(containerId, false)).status;
  }

  containerStatusVerbose(containerId: string): Promise<{ status: M.ContainerStatusInfo; info: M.Labels }> {
    return this.containerStatusAs(containerId, true);
  }

  async containerStats(containerId: string): Promise<M.ContainerStatsInfo | undefined> {
    this.call('ContainerStats', { containerId });
    this.mustContainer(containerId, 'ContainerStats');
    return undefined;
  }

  async execSync(containerId: string, cmd: string[], timeoutSeconds: number): Promise<M.ExecSyncResult> {
    this.call('ExecSync', { containerId, cmd, timeout: timeoutSeconds });
    this.mustRun(containerId, 'ExecSync');
    const a = this.execAnswer(containerId, cmd);
    if (a === 'timeout') throw new CriExecTimeoutError(this.endpoint, `command ${JSON.stringify(cmd)} timed out`);
    return { exitCode: a.exitCode, stdout: Buffer.from(a.stdout ?? ''), stderr: Buffer.from(a.stderr ?? '') };
  }

  async exec(containerId: string, cmd: string[], o: ExecOptions = { stdout: true, stderr: true }): Promise<string> {
    this.call('Exec', { containerId, cmd, ...o });
    this.mustRun(containerId, 'Exec');
    return `http://127.0.0.1:1/exec/${this.nextId++}`;
  }

  async reopenContainerLog(containerId: string): Promise<void> {
    this.call('ReopenContainerLog', { containerId });
    this.mustRun(containerId, 'ReopenContainerLog');
  }

  /**
   * The events of every change from the first read on, until `signal` aborts. Each carries the
   * sandbox's status and its containers' statuses, as containerd 1.7 sends them.
   */
  async *containerEvents(signal?: AbortSignal): AsyncGenerator<M.ContainerEvent> {
    this.call('GetContainerEvents', {});
    if (this.eventsUnimplemented) throw criErrors.unimplemented('GetContainerEvents');
    const queue: M.ContainerEvent[] = [];
    let wake: (() => void) | undefined;
    const push = (ev: M.ContainerEvent): void => {
      queue.push(ev);
      wake?.();
    };
    const onAbort = (): void => wake?.();
    this.subscribers.add(push);
    signal?.addEventListener('abort', onAbort);
    try {
      while (!signal?.aborted) {
        const ev = queue.shift();
        if (ev) yield ev;
        else await new Promise<void>((r) => (wake = r));
      }
    } finally {
      this.subscribers.delete(push);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  // ---- ImageService ----

  async listImages(image?: string): Promise<M.ImageInfo[]> {
    this.call('ListImages', { filter: image ? { image: { image } } : undefined });
    return [...this.images.values()].filter((i) => !image || this.findImage(image) === i).map((i) => structuredClone(i));
  }

  async imageStatus(image: string): Promise<M.ImageInfo | undefined> {
    this.call('ImageStatus', { image: { image } });
    const i = this.findImage(image);
    return i ? structuredClone(i) : undefined;
  }

  async pullImage(image: string, auth?: M.AuthConfigInput, sandboxConfig?: M.PodSandboxConfigInput): Promise<string> {
    this.call('PullImage', { image: { image }, auth, sandboxConfig });
    return (this.findImage(image) ?? this.addImage(image)).id;
  }

  async removeImage(image: string): Promise<void> {
    this.call('RemoveImage', { image: { image } });
    const i = this.findImage(image);
    if (i) this.images.delete(i.id);
  }

  async imageFsInfo(): Promise<{ imageFilesystems: M.FilesystemUsageInfo[]; containerFilesystems: M.FilesystemUsageInfo[] }> {
    this.call('ImageFsInfo', {});
    const fs = { timestamp: this.clockNs, fsId: { mountpoint: '/var/lib/fake-runtime' }, usedBytes: { value: 0n }, inodesUsed: { value: 0n } };
    return { imageFilesystems: [fs], containerFilesystems: [fs] };
  }

  async runtimeInfo(): Promise<M.Labels> {
    this.call('Status', { verbose: true });
    return { ...this.info };
  }

  async sent(): Promise<void> {}

  close(): void {
    this.closed = true;
  }

  // ---- the runtime's own bookkeeping ----

  /** Records the call, then throws the error a test injected for it, if any. */
  private call(name: string, request: Record<string, unknown>): void {
    this.calls.push({ name, request });
    const err = this.errors.get(name)?.shift();
    if (err) throw err;
  }

  private tick(): bigint {
    this.clockNs += 1_000_000_000n;
    return this.clockNs;
  }

  private newId(kind: string): string {
    return `${kind}-${(this.nextId++).toString().padStart(4, '0')}`;
  }

  private findImage(ref: string): M.ImageInfo | undefined {
    return [...this.images.values()].find((i) => i.id === ref || i.repoTags.includes(ref) || i.repoDigests.includes(ref));
  }

  private mustContainer(id: string, method: string): FakeContainer {
    const c = this.containers.get(id);
    if (!c) throw criErrors.notFound(method, `an error occurred when try to find container "${id}"`);
    return c;
  }

  private mustRun(id: string, method: string): FakeContainer {
    const c = this.mustContainer(id, method);
    if (c.status.state !== ContainerState.RUNNING) throw criErrors.failedPrecondition(method, `container ${id} is not running`);
    return c;
  }

  private stopped(id: string, c: FakeContainer, exitCode: number): void {
    c.status.state = ContainerState.EXITED;
    c.status.exitCode = exitCode;
    c.status.finishedAt = this.tick();
    c.status.reason = 'Error';
    this.tell(ContainerEventType.STOPPED, id);
  }

  private removed(id: string): void {
    this.tell(ContainerEventType.DELETED, id);
    this.containers.delete(id);
  }

  private async podSandboxStatusAs(podSandboxId: string, verbose: boolean): Promise<{ status: M.PodSandboxStatusInfo; info: M.Labels }> {
    this.call('PodSandboxStatus', { podSandboxId, verbose });
    const s = this.sandboxes.get(podSandboxId);
    if (!s) throw criErrors.notFound('PodSandboxStatus', `an error occurred when try to find sandbox "${podSandboxId}"`);
    return { status: structuredClone(s.status), info: {} };
  }

  private async containerStatusAs(containerId: string, verbose: boolean): Promise<{ status: M.ContainerStatusInfo; info: M.Labels }> {
    this.call('ContainerStatus', { containerId, verbose });
    return { status: structuredClone(this.mustContainer(containerId, 'ContainerStatus').status), info: {} };
  }

  /** A container event to each reader of GetContainerEvents, with the sandbox's and its containers' statuses of now. */
  private tell(type: number, id: string): void {
    if (!this.subscribers.size) return;
    const sandboxId = this.sandboxes.has(id) ? id : this.containers.get(id)?.sandboxId;
    const sb = sandboxId ? this.sandboxes.get(sandboxId) : undefined;
    const ev: M.ContainerEvent = {
      containerId: id,
      containerEventType: type,
      createdAt: this.clockNs,
      podSandboxStatus: sb ? structuredClone(sb.status) : undefined,
      containersStatuses: [...this.containers.values()].filter((c) => c.sandboxId === sandboxId).map((c) => structuredClone(c.status)),
    };
    if (this.held) this.held.push(ev);
    else for (const push of this.subscribers) push(ev);
  }
}
