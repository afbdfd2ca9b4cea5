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
import { LABEL, type PodIdentity } from '../labels.js';
import type { VolumeBacking } from '../runtime-types.js';
import { containerConfig, needsImageUser } from '../kuberuntime/container-config.js';
import { prepareContainerFiles } from '../kuberuntime/container-files.js';
import { podSandboxConfig } from '../kuberuntime/sandbox-config.js';
import { containerCreateOptions, engineRestartPolicy, sandboxCreateOptions, type DockerContainerExtras } from './translate.js';
import { podDns } from '../dns.js';
import { podIPNeededAtStart } from '../env.js';
import type { SlotRequest } from '../slots.js';
import { prepareVolumes } from '../volumes.js';
import { ensureMemoryVolume } from './volumes.js';

/** What making a pod's objects needs of the runtime (docker-engine.ts): its client, identity, images and bounded calls. */
export interface CreatorParts {
  readonly calls: EngineCalls;
  readonly instance: string;
  readonly nodeName: string;
  readonly oomScoreFloor: number;
  hostIP(): string;
  readonly images: ImageStore;
  readonly presence: ImagePresence;
  /** A call that costs the engine, in a slot (docker-engine.ts: work). */
  work<T>(what: string, fn: () => Promise<T>, o?: SlotRequest): Promise<T>;
  /** A create, in a slot, that the pod cache hears of (docker-engine.ts: create). */
  create(pod: Pod, what: string, opts: Docker.ContainerCreateOptions, signal: AbortSignal | undefined): Promise<Docker.Container>;
  ensureImage(image: string, policy: Container['imagePullPolicy'], onPull?: PullListener, signal?: AbortSignal): Promise<void>;
}

/**
 * Makes a pod's objects on the Docker engine: its volumes, its sandbox (the pause container) and
 * its containers, from their CRI configs (kuberuntime/) translated (translate.ts). DockerEngine is its one door.
 */
export class PodCreator {
  constructor(private readonly p: CreatorParts) {}

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
    const config = podSandboxConfig(pod, id, { instance: this.p.instance, attempt, hash, ...(dns ? { dns } : {}) });
    const s = pod.spec;
    const opts = sandboxCreateOptions(config, {
      pauseImage: this.options.pauseImage,
      network: this.options.network ?? 'bridge',
      restartPolicy,
      oomScoreFloor: this.p.oomScoreFloor,
      extraHosts: (s.hostAliases ?? []).flatMap((a) => (a.hostnames ?? []).map((h) => `${h}:${a.ip}`)),
      ...(s.subdomain ? { domainname: `${s.subdomain}.${id.namespace}.svc` } : {}),
      heldVolumes: engineVolumes(volumes),
      ...(this.options.podPidsLimit ? { pidsLimit: this.options.podPidsLimit } : {}),
    });
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
    let opts: Docker.ContainerCreateOptions;
    try {
      const files = await prepareContainerFiles(this.options, pod, c, o.volumes, o.restartCount);
      const logConfig = await this.logConfig();
      const config = containerConfig(pod, id, c, {
        ...files,
        instance: this.p.instance,
        type: o.type,
        restartCount: o.restartCount,
        hash: o.hash,
        volumes: o.volumes,
        ...(imageUser !== undefined ? { imageUser } : {}),
        runtime: { podIP: o.sandbox.ip, hostIP: this.p.hostIP(), nodeName: this.p.nodeName, oomScoreFloor: this.p.oomScoreFloor },
      });
      // Only what names the container: the whole sandbox config would serialize the pod spec for
      // its annotation at every start, and Docker's create has no use for it.
      const sandbox = {
        metadata: { name: id.name, uid: id.uid, namespace: id.namespace, attempt: 0 },
        labels: { [LABEL.instance]: this.p.instance },
      };
      const extras: DockerContainerExtras = {
        sandboxId: o.sandbox.id,
        restartPolicy: o.engineRestarts ? engineRestartPolicy(pod, o.type, c) : 'no',
        engineVolumes: new Set(engineVolumes(o.volumes).values()),
        ...(logConfig ? { logConfig } : {}),
        ...(this.options.podPidsLimit ? { pidsLimit: this.options.podPidsLimit } : {}),
      };
      opts = containerCreateOptions(config, sandbox, extras);
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
  private async logConfig(): Promise<DockerContainerExtras['logConfig']> {
    const limits = this.options.containerLog;
    if (!limits) return undefined;
    const driver = await this.defaultLogDriver();
    if (driver !== 'json-file' && driver !== 'local') return undefined;
    return { Type: driver, Config: { 'max-size': String(limits.maxBytes), 'max-file': String(limits.maxFiles) } };
  }
}

/** The pod's engine volumes (its `medium: Memory` emptyDirs) by pod volume name. */
function engineVolumes(volumes: ReadonlyMap<string, VolumeBacking> | undefined): Map<string, string> {
  return new Map([...(volumes ?? [])].flatMap(([name, b]) => (b.kind === 'volume' ? [[name, b.name] as const] : [])));
}
