import { hostname } from 'node:os';
import { defaultHostIP, oomScoreFloor } from '../host.js';
import { instanceId, LABEL, MANAGED_BY } from '../labels.js';
import { groupObserved, type EngineRecord, type ObservedPod, type RecordKind } from '../observed.js';
import type { ContainerStatus, EngineEvent, RuntimeOptions } from '../runtime-types.js';
import { CriClient } from './client.js';
import type { CriRuntimeService } from './runtime-service.js';
import { criEngineError } from './engine-errors.js';
import { observedCall } from './observed-call.js';
import { CriImages } from './images.js';
import { ImagePresence } from '../image-presence.js';
import { ContainerState, PodSandboxState } from './messages.js';
import { recordFromContainer, recordFromSandbox, statusFromCri } from './records.js';
import { lookUpRecord } from './sandbox-lookups.js';
import { relistWatch, type RelistWatch } from './relist.js';
import { followContainerEvents } from './container-events.js';
import { criExitSignals, exitSignalTaps } from './exit-watch.js';
import type { ExitSignals } from './exit-signals.js';
import { CriReadings } from './readings.js';
import type { ProcView } from '../exec-reaper.js';

/** The kubelet's pod log root; a CRI runtime writes each container's log below it. */
export const DEFAULT_POD_LOGS_DIR = '/var/log/pods';

export interface CriEngineOptions extends RuntimeOptions {
  /** `unix:///run/containerd/containerd.sock`: the kubelet's --container-runtime-endpoint. */
  runtimeEndpoint: string;
  /** The kubelet's --image-service-endpoint (default: the runtime endpoint). */
  imageEndpoint?: string;
  /** The kubelet's podLogsDir (default /var/log/pods). */
  podLogsDir?: string;
  /** How often lifecycle events are found by relisting (the generic PLEG's 1 s). */
  relistPeriodMs?: number;
  /** How often the relist runs as a safety net once the runtime's container events are followed (default 10 s). */
  eventedRelistPeriodMs?: number;
  /** How often logs are checked for rotation (the kubelet's containerLogMonitorInterval, 10 s). */
  logRotationPeriodMs?: number;
}

/**
 * The reading half of CriEngine (engine.ts): the client and its observed call, and what the
 * runtime holds as podrun's records (list, inspect, watch, status), with the caches that make a
 * relist cheap. CriEngine adds what changes the runtime; the two halves are one engine, split
 * so each reads at once.
 */
export abstract class CriRuntimeView {
  readonly endpoint: string;
  /** The kubelet's runtime type (`containerd://<id>`): the runtime's own name, once it said it. */
  runtimeName = 'cri';
  readonly nodeName: string;
  readonly hostIP: string;
  readonly instance: string;
  readonly oomScoreFloor: number;
  readonly client: CriRuntimeService;
  protected readonly images: CriImages;
  /** ImageStatus answers of "present", so a burst of starts asks once per image. */
  protected readonly presence: ImagePresence;
  protected readonly logRoot: string;
  private readonly createdListeners = new Set<(podUid: string, id: string, kind: RecordKind) => void>();
  /** Exit codes of exited containers (they never change), so a relist costs one status call per exit, not per exited container. */
  protected readonly exits = new Map<string, number>();
  /** Sandbox IPs (fixed for a sandbox's life). */
  protected readonly ips = new Map<string, string>();
  protected readonly readings: CriReadings;
  /** The runtime's /proc (it runs on this host), for ending abandoned execs. */
  protected procView: ProcView | undefined;
  /** What the runtime said of GetContainerEvents: Unimplemented is asked once per engine. */
  private readonly eventsKnown = { unsupported: false, followed: false };
  /** Each running container's own end signal while the agent watches (exit-watch.ts): a crash seen before the next relist. */
  protected exitSignals: ExitSignals | undefined;

  /** `client`: the runtime to speak to; a CriClient on the options' endpoints unless given (tests give an in-memory one). */
  constructor(
    readonly options: CriEngineOptions,
    client?: CriRuntimeService,
  ) {
    this.endpoint = options.runtimeEndpoint;
    this.client =
      client ??
      new CriClient({
        endpoint: options.runtimeEndpoint,
        ...(options.imageEndpoint ? { imageEndpoint: options.imageEndpoint } : {}),
        ...(options.requestTimeoutMs ? { timeoutMs: options.requestTimeoutMs } : {}),
      });
    this.images = new CriImages(this.client, options);
    this.presence = new ImagePresence((image) => this.images.present(image));
    this.nodeName = options.nodeName ?? hostname();
    this.hostIP = options.hostIP ?? defaultHostIP();
    this.instance = instanceId(options.stateDir);
    this.oomScoreFloor = oomScoreFloor(this.endpoint);
    this.logRoot = options.podLogsDir ?? DEFAULT_POD_LOGS_DIR;
    this.readings = new CriReadings(this.client, options);
  }

  /** A CRI call with podrun's error kinds and the observer told of it. */
  protected call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return observedCall(this.options.observer, what, fn).catch((err: unknown) => {
      throw criEngineError(err, what);
    });
  }

  protected created(uid: string, id: string, kind: RecordKind): void {
    for (const fn of this.createdListeners) fn(uid, id, kind);
  }

  onCreated(fn: (podUid: string, id: string, kind: RecordKind) => void): () => void {
    this.createdListeners.add(fn);
    return () => this.createdListeners.delete(fn);
  }

  private identified?: Promise<void>;

  /** Version, once: the runtime's name for container IDs (`containerd://`), and where a wrong endpoint shows first. */
  private identify(): Promise<void> {
    this.identified ??= this.call('version', () => this.client.version()).then(
      (v) => {
        this.runtimeName = v.runtimeName || 'cri';
      },
      (err: unknown) => {
        this.identified = undefined;
        throw err;
      },
    );
    return this.identified;
  }

  /**
   * Once the runtime's connection is up and what was asked of it so far has gone out (at most a
   * quarter of a second: a runtime slow to accept holds nothing up), so that a command's own work
   * (`apply` parsing its manifests) runs while the runtime answers, not before the asking.
   */
  requestsSent(): Promise<void> {
    return this.client.sent(250);
  }

  async ping(): Promise<void> {
    this.identified = undefined;
    await this.identify();
  }

  close(): void {
    this.stopRotation?.();
    this.client.close();
  }

  private selector(uid?: string): Record<string, string> {
    return { [LABEL.instance]: this.instance, ...(uid ? { [LABEL.podUid]: uid } : { [LABEL.managedBy]: MANAGED_BY }) };
  }

  /** podrun's sandboxes and containers (all, or one pod's), as records; exits and IPs asked once each. */
  async listContainers(uid?: string): Promise<EngineRecord[]> {
    const labelSelector = this.selector(uid);
    // Asked together (a round trip less for a command's first look); Version's failure is the one told.
    const identified = this.identify();
    const listed = this.call('list containers', () =>
      Promise.all([this.client.listPodSandbox({ labelSelector }), this.client.listContainers({ labelSelector })]),
    );
    listed.catch(() => undefined);
    await identified;
    const [sandboxes, containers] = await listed;
    await Promise.all([
      ...containers
        .filter((c) => c.state === ContainerState.EXITED && !this.exits.has(c.id))
        .map(async (c) => {
          const s = await this.client.containerStatus(c.id).catch(() => undefined);
          if (s) this.exits.set(c.id, s.exitCode);
        }),
      ...sandboxes
        .filter((s) => s.state === PodSandboxState.READY && !this.ips.has(s.id))
        .map(async (s) => {
          const st = await this.client.podSandboxStatus(s.id).catch(() => undefined);
          if (st) this.ips.set(s.id, st.network?.ip ?? '');
        }),
    ]);
    const live = new Set([...sandboxes.map((s) => s.id), ...containers.map((c) => c.id)]);
    // Only a list of every pod can tell what is gone: one pod's list shows none of the others'.
    if (uid === undefined) for (const m of [this.exits, this.ips]) for (const id of m.keys()) if (!live.has(id)) m.delete(id);
    return [
      ...sandboxes.map((s) => recordFromSandbox(s, this.options.pauseImage, this.ips.get(s.id))),
      ...containers.map((c) => recordFromContainer(c, this.exits.get(c.id))),
    ];
  }

  async listPods(uid?: string): Promise<ObservedPod[]> {
    return groupObserved(await this.listContainers(uid));
  }

  /**
   * Containers and sandboxes by id, each asked for by its own call (the caller says which it is:
   * the cache knows its records' kinds, and each create is told with its kind); one that is gone,
   * or not this instance's, maps to undefined.
   */
  async inspectContainers(ids: ReadonlyMap<string, RecordKind>): Promise<Map<string, EngineRecord | undefined>> {
    const out = new Map<string, EngineRecord | undefined>();
    await Promise.all(
      [...ids].map(async ([id, kind]) => {
        const rec = await this.call(`${kind} status`, () => lookUpRecord(this.client, id, kind, this.options.pauseImage));
        out.set(id, rec && rec.labels[LABEL.instance] === this.instance ? rec : undefined);
      }),
    );
    return out;
  }

  private stopRotation: (() => void) | undefined;

  /**
   * The relist, and (once, while the agent watches) the container log manager's rotation that a
   * CRI runtime leaves to its client (log-rotation.ts).
   */
  async watchEvents(onEvent: (e: EngineEvent) => void, onEnd: (err?: Error) => void): Promise<() => void> {
    const fastPeriodMs = this.options.relistPeriodMs ?? 1000;
    let relisting: RelistWatch | undefined;
    const signals = criExitSignals(this.client, this.instance, () => relisting, this.options.observer ? { observer: this.options.observer } : {});
    this.exitSignals = signals;
    const taps = exitSignalTaps(signals, () => this.listContainers(), onEvent);
    const watch = await relistWatch(
      taps.list,
      taps.onEvent,
      (err) => {
        signals?.stop();
        onEnd(err);
      },
      fastPeriodMs,
    );
    relisting = watch;
    const abort = new AbortController();
    if (!this.eventsKnown.unsupported) {
      void followContainerEvents(this.client.containerEvents(abort.signal), watch, {
        instance: this.instance,
        fastPeriodMs,
        slowPeriodMs: this.options.eventedRelistPeriodMs ?? 10_000,
        notice: (m) => this.options.observer?.notice?.(m),
        pauseImage: this.options.pauseImage,
        known: this.eventsKnown,
      });
    }
    const policy = this.options.containerLog;
    if (policy && !this.stopRotation) {
      // The log manager (gzip, streams, fs/promises) loaded by the agent that rotates, not by every command.
      const { startLogRotation } = await import('./log-rotation.js');
      this.stopRotation ??= startLogRotation(
        this.client,
        this.selector(),
        policy,
        () => this.options.observer?.call?.('rotate container log', 0, true),
        this.options.logRotationPeriodMs,
      );
    }
    return () => {
      abort.abort();
      watch.stop();
      signals?.stop();
    };
  }

  /** A container's ContainerStatus; a sandbox is no container (its state is its record's, `inspectContainers`). */
  protected async status(id: string): Promise<ContainerStatus | undefined> {
    const s = await this.client.containerStatus(id).catch(() => undefined);
    return s ? statusFromCri(s) : undefined;
  }

  async containerState(id: string): Promise<ContainerStatus | undefined> {
    return this.status(id);
  }

  async finishedAt(id: string): Promise<number | undefined> {
    const t = Date.parse((await this.status(id))?.finishedAt ?? '');
    return Number.isFinite(t) && t > 0 ? t : undefined;
  }
}
