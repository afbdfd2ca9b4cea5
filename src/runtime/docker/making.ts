import type Docker from 'dockerode';
import type { Container, Pod } from '../../manifest/types.js';
import { EngineRequestError, type EngineCalls } from './engine.js';
import {
  ContainerStartError,
  isPodrunBug,
  SandboxError,
  type PullListener,
  type RuntimeOptions,
  type SandboxInfo,
  type StartRequest,
} from '../runtime-types.js';
import type { ImageStore } from './images.js';
import type { ImagePresence } from '../image-presence.js';
import { nodeResolvConf } from '../host.js';
import {
  containerCreateOptions,
  engineRestartPolicy,
  mountsToPin,
  needsImageUser,
  sandboxCreateOptions,
  startOptions,
  type ContainerOptions,
  type PodIdentity,
  type VolumeBacking,
} from './spec.js';
import { podDns } from '../dns.js';
import { podIPNeededAtStart } from '../env.js';
import type { SlotRequest } from '../slots.js';
import { pinMount } from '../safe-mount.js';
import { prepareTerminationLog, prepareVolumes, stagingPath, terminationLogPath, writeHostNetworkHosts } from '../volumes.js';
import { ensureMemoryVolume } from './volumes.js';

/** What making a pod's objects needs of the runtime (runtime.ts): its client, identity, images and bounded calls. */
export interface MakerParts {
  readonly calls: EngineCalls;
  readonly instance: string;
  readonly nodeName: string;
  readonly oomScoreFloor: number;
  hostIP(): string;
  readonly images: ImageStore;
  readonly presence: ImagePresence;
  /** A call that costs the engine, in a slot (runtime.ts: work). */
  work<T>(what: string, fn: () => Promise<T>, o?: SlotRequest): Promise<T>;
  /** A create, in a slot, that the pod cache hears of (runtime.ts: create). */
  create(pod: Pod, what: string, opts: Docker.ContainerCreateOptions, signal: AbortSignal | undefined): Promise<Docker.Container>;
  ensureImage(image: string, policy: Container['imagePullPolicy'], onPull?: PullListener, signal?: AbortSignal): Promise<void>;
}

/**
 * Makes a pod's objects on the Docker engine: its volumes, its sandbox (the pause container) and
 * its containers, from the pod spec (spec.ts) and the node's settings. PodRuntime is its one door.
 */
export class PodMaker {
  constructor(private readonly p: MakerParts) {}

  private get options(): RuntimeOptions {
    return this.p.calls.options;
  }

  /** The pod's volumes on the host; `medium: Memory` as an engine tmpfs volume (./volumes.ts). */
  async prepareVolumes(pod: Pod): Promise<Map<string, VolumeBacking>> {
    const uid = pod.metadata.uid ?? '';
    return this.p.calls.call(`prepare volumes of ${pod.metadata.name}`, () =>
      prepareVolumes(this.options.stateDir, pod, (v) => ensureMemoryVolume(this.p.calls.docker, uid, v, this.p.instance), this.options.allowedHostPaths),
    );
  }

  /**
   * Makes and starts the pod's sandbox. `engineRestarts`: no agent supervises the pod, so the engine
   * keeps the sandbox up itself. Once `signal` is aborted (the pod is no longer wanted) no wait goes
   * on and nothing more is made: `Cancelled`, and what was made is the deletion's.
   */
  async createSandbox(
    pod: Pod,
    id: PodIdentity,
    attempt: number,
    hash: string,
    engineRestarts: boolean,
    volumes?: ReadonlyMap<string, VolumeBacking>,
    signal?: AbortSignal,
  ): Promise<SandboxInfo> {
    const restartPolicy = engineRestarts ? engineRestartPolicy(pod, 'sandbox') : 'no';
    // Asked early, awaited by logConfig(); it cannot reject (an engine error means json-file).
    if (this.options.containerLog) void this.defaultLogDriver();
    // The containers' image inspects while the sandbox is made: their starts find the answer.
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) if (c.imagePullPolicy !== 'Always') this.p.presence.lookAhead(c.image);
    const dns = podDns(pod.spec.dnsPolicy, pod.spec.dnsConfig, nodeResolvConf(this.options.resolvConf ?? '/etc/resolv.conf'), pod.spec.hostNetwork === true);
    const opts = sandboxCreateOptions(
      pod,
      { ...id, instance: this.p.instance },
      {
        pauseImage: this.options.pauseImage,
        attempt,
        hash,
        network: this.options.network ?? 'bridge',
        restartPolicy,
        oomScoreFloor: this.p.oomScoreFloor,
        ...(volumes ? { volumes } : {}),
        ...(dns ? { dns } : {}),
        ...(this.options.podPidsLimit ? { pidsLimit: this.options.podPidsLimit } : {}),
      },
    );
    const refused = (err: unknown): never => {
      throw err instanceof EngineRequestError ? new SandboxError(err.message) : err;
    };
    const slot = signal ? { signal } : {};
    // The pause image is looked for only when the create fails (it is there but on a new node):
    // missing, it is pulled and the create tried again, as with a look first, a round trip less.
    const pause = this.options.pauseImage;
    const container = await this.p.presence
      .create(
        pause,
        () => this.p.create(pod, `create sandbox for ${id.namespace}/${id.name}`, opts, signal),
        () => this.p.ensureImage(pause, 'IfNotPresent', undefined, signal),
        signal,
      )
      .catch(refused);
    await this.p.work(`start sandbox for ${id.namespace}/${id.name}`, () => container.start(), slot).catch(refused);
    // The IP is asked now only if a start needs it (an env var, a postStart hook); else on first use.
    // sandboxInfo asks the engine nothing on the host network.
    return podIPNeededAtStart(pod) || pod.spec.hostNetwork ? this.sandboxInfo(container.id, pod) : { id: container.id, ip: '' };
  }

  async sandboxInfo(id: string, pod: Pod): Promise<SandboxInfo> {
    if (pod.spec.hostNetwork) return { id, ip: this.p.hostIP() };
    const info = await this.p.calls.call('inspect sandbox', () => this.p.calls.docker.getContainer(id).inspect());
    const ip = Object.values(info.NetworkSettings.Networks ?? {}).find((n) => n.IPAddress)?.IPAddress ?? '';
    return { id, ip };
  }

  async startContainer(pod: Pod, id: PodIdentity, c: Container, o: StartRequest): Promise<string> {
    if (!o.imageReady) await this.p.ensureImage(c.image, c.imagePullPolicy, o.onPull, o.signal);
    const imageUser = needsImageUser(pod, c) ? await this.p.images.imageUser(c.image) : undefined;
    const terminationLog = terminationLogPath(this.options.stateDir, pod.metadata.uid ?? '', c.name, o.restartCount);
    let opts: Docker.ContainerCreateOptions;
    try {
      prepareTerminationLog(terminationLog);
      const pinned = await this.pinMounts(pod, c, o.volumes);
      const hostsFile = pod.spec.hostNetwork && pod.spec.hostAliases?.length ? writeHostNetworkHosts(this.options.stateDir, pod) : undefined;
      const logConfig = await this.logConfig();
      opts = containerCreateOptions(pod, { ...id, instance: this.p.instance }, c, {
        pinned,
        ...(hostsFile ? { hostsFile } : {}),
        ...(logConfig ? { logConfig } : {}),
        ...(imageUser !== undefined ? { imageUser } : {}),
        ...(this.options.podPidsLimit ? { pidsLimit: this.options.podPidsLimit } : {}),
        terminationLog,
        ...startOptions(pod, c, o, { hostIP: this.p.hostIP(), nodeName: this.p.nodeName, oomScoreFloor: this.p.oomScoreFloor }),
      });
    } catch (err) {
      // What the manifest asks that cannot be made (a mount refused, a user that cannot be
      // checked) is the user's to fix; a bug of podrun's is not, and goes up as it is.
      if (isPodrunBug(err)) throw err;
      throw new ContainerStartError((err as Error).message, 'CreateContainerConfigError', { cause: err });
    }
    const refused =
      (reason: ContainerStartError['reason']) =>
      (err: unknown): never => {
        throw err instanceof EngineRequestError ? new ContainerStartError(err.message, reason, { cause: err }) : err;
      };
    const slot = o.signal ? { signal: o.signal } : {};
    const container = await this.p.presence
      .create(
        c.image,
        () => this.p.create(pod, `create container ${c.name} of ${id.namespace}/${id.name}`, opts, o.signal),
        () => this.p.ensureImage(c.image, c.imagePullPolicy, o.onPull, o.signal),
        o.signal,
      )
      .catch(refused('CreateContainerError'));
    await this.p.work(`start container ${c.name} of ${id.namespace}/${id.name}`, () => container.start(), slot).catch(refused('RunContainerError'));
    return container.id;
  }

  private logDriver?: Promise<string>;

  /** The engine's default log driver, asked once per runtime (first asked while the sandbox is made, off the critical path). */
  private defaultLogDriver(): Promise<string> {
    this.logDriver ??= this.p.calls
      .call('engine info', () => this.p.calls.docker.info())
      .then(
        (i) => String(i.LoggingDriver ?? 'json-file'),
        () => 'json-file',
      );
    return this.logDriver;
  }

  /**
   * Rotation for the engine's own file drivers (json-file, local), as the kubelet rotates CRI
   * logs. A node whose engine sends logs elsewhere by default (journald, syslog) keeps that.
   */
  private async logConfig(): Promise<ContainerOptions['logConfig']> {
    const limits = this.options.containerLog;
    if (!limits) return undefined;
    const driver = await this.defaultLogDriver();
    if (driver !== 'json-file' && driver !== 'local') return undefined;
    return { Type: driver, Config: { 'max-size': String(limits.maxBytes), 'max-file': String(limits.maxFiles) } };
  }

  /** Checks and pins the container's subPath and allow-listed hostPath mounts (safe-mount.ts). */
  private async pinMounts(pod: Pod, c: Container, volumes: ReadonlyMap<string, VolumeBacking>): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    const allowed = this.options.allowedHostPaths;
    for (const { index, mount: m, backing: b } of mountsToPin(c, volumes, allowed !== undefined)) {
      const staging = stagingPath(this.options.stateDir, pod.metadata.uid ?? '', m.name, c.name, index);
      await pinMount(
        { base: b.path, ...(m.subPath ? { subPath: m.subPath } : {}), ...(b.hostPath && allowed ? { allowed } : {}), what: `volume "${m.name}"` },
        staging,
      );
      out.set(index, staging);
    }
    return out;
  }
}
