import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { networkInterfaces, hostname } from 'node:os';
import { PassThrough } from 'node:stream';
import { FollowedFrames, Paced } from './log-frames.js';
import type Docker from 'dockerode';
import type { Container, Pod } from '../manifest/types.js';
import { authFor } from './auth.js';
import { connect, engineEndpoint, engineError, EngineRequestError, isNotFound, type EngineOptions } from './engine.js';
import { EngineTimeoutError } from './engine-errors.js';
import { formatDuration, timerDelay } from '../base/duration.js';
import { instanceId, LABEL, MANAGED_BY } from './labels.js';
import { groupObserved, listedFromInspect, type EngineContainer, type ObservedPod } from './observed.js';
import { containerCreateOptions, mountsToPin, needsImageUser, sandboxCreateOptions, type ContainerOptions, type PodIdentity, type VolumeBacking } from './spec.js';
import { parseResolvConf, podDns, type ResolvConf } from './dns.js';
import { Slots } from './slots.js';
import { pinMount } from './safe-mount.js';
import { prepareTerminationLog, prepareVolumes, removePodVolumes, stagingPath, terminationLogPath, writeHostNetworkHosts } from './volumes.js';

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
  /** The node's resolv.conf that pods inherit (the kubelet's --resolv-conf; default /etc/resolv.conf). */
  resolvConf?: string;
  /** Pull progress, for a TTY. */
  onPullProgress?: (image: string, line: string) => void;
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

export interface RuntimeObserver {
  /** `what` describes the call ("create container web of default/p"); failed: the engine refused or was gone. */
  call?(what: string, seconds: number, failed: boolean): void;
  pull?(seconds: number, ok: boolean): void;
}

export interface EngineEvent {
  action: string;
  id: string;
  attributes: Record<string, string>;
  timeMs: number;
}

/** The parts of the engine's stats answer podrun reads (cgroup v1 and v2 alike). */
export interface EngineStats {
  read: string;
  cpu_stats: { cpu_usage: { total_usage: number }; system_cpu_usage?: number; online_cpus?: number };
  precpu_stats?: { cpu_usage?: { total_usage?: number }; system_cpu_usage?: number };
  memory_stats: { usage?: number; stats?: Record<string, number> };
  networks?: Record<string, { rx_bytes: number; rx_errors: number; tx_bytes: number; tx_errors: number }>;
  pids_stats?: { current?: number };
  preread?: string;
}

export interface SandboxInfo {
  id: string;
  ip: string;
}

/**
 * Lowering a process's oom_score_adj takes CAP_SYS_RESOURCE. Where the node lacks it (some VMs
 * and nested containers), the engine fails to start a container asked for a negative value, so
 * podrun asks for 0 at the lowest there. Only a local engine can be judged from here.
 */
function oomScoreFloor(endpoint: string): number {
  if (!endpoint.startsWith('unix://') && !endpoint.startsWith('/')) return -1000;
  try {
    const eff = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    const CAP_SYS_RESOURCE = 24n;
    return eff !== undefined && (BigInt(`0x${eff}`) >> CAP_SYS_RESOURCE) & 1n ? -1000 : 0;
  } catch {
    return -1000;
  }
}

/** The node's resolver configuration; one that cannot be read counts as empty, as the kubelet takes it. */
function nodeResolvConf(path: string): ResolvConf {
  try {
    return parseResolvConf(readFileSync(path, 'utf8'));
  } catch {
    return { nameservers: [], searches: [], options: [] };
  }
}

function defaultHostIP(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
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

/** The only code that talks to the engine: pods in, engine objects out, labels carrying identity. */
export class PodRuntime {
  private readonly docker: Docker;
  readonly endpoint: string;
  readonly nodeName: string;
  readonly hostIP: string;
  readonly instance: string;
  /** The lowest oom_score_adj this node lets the engine set. */
  readonly oomScoreFloor: number;
  private readonly pulls = new Map<string, Promise<void>>();
  /** Bounds the calls that cost the engine; stops, execs, events and pulls are waits, not work, and are not bounded. */
  private readonly slots: Slots;
  private readonly createdListeners = new Set<(podUid: string, id: string) => void>();

  constructor(readonly options: RuntimeOptions) {
    this.docker = connect(options);
    this.endpoint = engineEndpoint(options);
    this.nodeName = options.nodeName ?? hostname();
    this.hostIP = options.hostIP ?? defaultHostIP();
    this.instance = instanceId(options.stateDir);
    this.oomScoreFloor = oomScoreFloor(this.endpoint);
    this.slots = new Slots(options.engineSlots ?? 4);
  }

  /**
   * Tells `fn` of every container this runtime creates, before it starts, so the pod cache can
   * look at it by id before the engine's event for it arrives.
   */
  onCreated(fn: (podUid: string, id: string) => void): () => void {
    this.createdListeners.add(fn);
    return () => this.createdListeners.delete(fn);
  }

  private created(pod: Pod, id: string): void {
    for (const fn of this.createdListeners) fn(pod.metadata.uid ?? '', id);
  }

  /**
   * Containers by id, as a list call would show them; a container that is gone maps to undefined.
   * Each inspect costs the engine O(1), where a list costs O(every container it holds).
   */
  async inspectContainers(ids: readonly string[]): Promise<Map<string, EngineContainer | undefined>> {
    const out = new Map<string, EngineContainer | undefined>();
    await Promise.all(
      ids.map(async (id) => {
        const info = await this.call('inspect container', () => this.docker.getContainer(id).inspect()).catch((err: unknown) => {
          if (isNotFound(err)) return undefined;
          throw err;
        });
        out.set(id, info && info.Config.Labels?.[LABEL.instance] === this.instance ? listedFromInspect(info) : undefined);
      }),
    );
    return out;
  }

  /** An engine call that costs the engine: it waits for a slot. */
  private work<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return this.slots.run(() => this.call(what, fn));
  }

  private owned(opts: Docker.ContainerCreateOptions): Docker.ContainerCreateOptions {
    return { ...opts, Labels: { ...opts.Labels, [LABEL.instance]: this.instance } };
  }

  private async call<T>(what: string, fn: () => Promise<T>, timeoutMs = this.options.requestTimeoutMs ?? 120_000): Promise<T> {
    const observer = this.options.observer;
    const t0 = observer ? performance.now() : 0;
    let failed = false;
    let timer: NodeJS.Timeout | undefined;
    try {
      // A request the engine never answers must not hold a pod (or a delete) forever.
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new EngineTimeoutError(what, formatDuration(timeoutMs))), timerDelay(timeoutMs));
        timer.unref();
      });
      return await Promise.race([fn(), timeout]);
    } catch (err) {
      failed = true;
      throw err instanceof EngineTimeoutError ? err : engineError(err, what, this.endpoint);
    } finally {
      clearTimeout(timer);
      observer?.call?.(what, (performance.now() - t0) / 1000, failed);
    }
  }

  async ping(): Promise<void> {
    await this.call('ping', () => this.docker.ping());
  }

  /** Every pod podrun made on this engine (or one, by uid), from one list call. */
  async listPods(uid?: string): Promise<ObservedPod[]> {
    return groupObserved(await this.listContainers(uid));
  }

  /** podrun's containers (all of them, or one pod's), as the engine lists them. */
  async listContainers(uid?: string): Promise<Docker.ContainerInfo[]> {
    const label = [`${LABEL.instance}=${this.instance}`, ...(uid ? [`${LABEL.podUid}=${uid}`] : [`${LABEL.managedBy}=${MANAGED_BY}`])];
    return this.work('list containers', () => this.docker.listContainers({ all: true, filters: JSON.stringify({ label }) }));
  }

  /**
   * Follows the engine's container events for podrun's containers. Resolves once subscribed; `onEnd`
   * is called once when the stream ends or fails (the engine went away), so the caller reconnects.
   */
  async watchEvents(onEvent: (e: EngineEvent) => void, onEnd: (err?: Error) => void): Promise<() => void> {
    const stream = (await this.call('follow events', () =>
      this.docker.getEvents({ filters: JSON.stringify({ type: ['container'], label: [`${LABEL.instance}=${this.instance}`] }) }),
    )) as NodeJS.ReadableStream & { destroy?: () => void };
    let buffered = '';
    let ended = false;
    const end = (err?: Error): void => {
      if (ended) return;
      ended = true;
      onEnd(err);
    };
    // The stream is newline-delimited JSON in arbitrary chunks: buffer and split.
    stream.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (!line) continue;
        try {
          const raw = JSON.parse(line) as { Action?: string; id?: string; Actor?: { ID?: string; Attributes?: Record<string, string> }; timeNano?: number; time?: number };
          onEvent({
            action: raw.Action ?? '',
            id: raw.Actor?.ID ?? raw.id ?? '',
            attributes: raw.Actor?.Attributes ?? {},
            timeMs: raw.timeNano ? Math.floor(raw.timeNano / 1e6) : (raw.time ?? 0) * 1000,
          });
        } catch {
          // A malformed line is skipped; the periodic relist covers whatever it said.
        }
      }
    });
    stream.on('end', () => end());
    stream.on('close', () => end());
    stream.on('error', (err: Error) => end(err));
    return () => {
      ended = true;
      stream.destroy?.();
    };
  }

  /** Runs a command in a running container (probes, hooks); gives up after `timeoutMs`. */
  async exec(containerId: string, command: string[], timeoutMs: number, signal?: AbortSignal): Promise<{ exitCode: number; output: string } | 'timeout'> {
    const container = this.docker.getContainer(containerId);
    const exec = await this.call('exec create', () => container.exec({ Cmd: command, AttachStdout: true, AttachStderr: true }));
    const stream = await this.call('exec start', () => exec.start({ hijack: true, stdin: false }));
    let output = '';
    const sink = new PassThrough();
    sink.on('data', (c: Buffer) => {
      if (output.length < 4096) output += c.toString('utf8');
    });
    // Non-TTY exec output is multiplexed (stdout/stderr frames).
    this.docker.modem.demuxStream(stream, sink, sink);
    const finished = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timerDelay(timeoutMs));
      const done = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      stream.on('end', done);
      stream.on('close', done);
      stream.on('error', done);
      const abort = (): void => {
        clearTimeout(timer);
        resolve(false);
      };
      if (signal?.aborted) abort();
      else signal?.addEventListener('abort', abort, { once: true });
    });
    if (!finished) {
      stream.destroy();
      return 'timeout';
    }
    const info = await this.call('exec inspect', () => exec.inspect());
    return { exitCode: info.ExitCode ?? -1, output };
  }

  /**
   * `podrun exec`: a command in a running container, attached to the caller's streams, with a
   * TTY (resized with the terminal) when asked. Resolves with the command's exit code.
   */
  async execAttached(
    containerId: string,
    command: string[],
    o: { tty: boolean; stdin: boolean; size?: () => { rows: number; columns: number } | undefined; onResize?: (fn: () => void) => () => void },
    streams: { stdin: NodeJS.ReadableStream; stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream },
  ): Promise<number> {
    const container = this.docker.getContainer(containerId);
    const exec = await this.call('exec create', () => container.exec({ Cmd: command, AttachStdin: o.stdin, AttachStdout: true, AttachStderr: true, Tty: o.tty }));
    const stream = await this.call('exec start', () => exec.start({ hijack: true, stdin: o.stdin, Tty: o.tty }));
    const resize = (): void => {
      const size = o.size?.();
      if (size) void exec.resize({ h: size.rows, w: size.columns }).catch(() => undefined);
    };
    const stopResizing = o.tty ? o.onResize?.(resize) : undefined;
    if (o.tty) {
      resize();
      stream.pipe(streams.stdout, { end: false });
    } else {
      this.docker.modem.demuxStream(stream, streams.stdout, streams.stderr);
    }
    if (o.stdin) {
      streams.stdin.pipe(stream);
      // End of input closes the command's stdin, as kubectl exec -i does.
      streams.stdin.on('end', () => (stream as unknown as { end?: () => void }).end?.());
    }
    await new Promise<void>((resolve) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', () => resolve());
    });
    stopResizing?.();
    if (o.stdin) streams.stdin.unpipe(stream);
    const info = await this.call('exec inspect', () => exec.inspect());
    return info.ExitCode ?? 1;
  }

  /** Details only an inspect gives: exit reason, times, OOM. */
  /** A container's state, and how often the engine restarted it in place (under its own restart policy). */
  async containerState(id: string): Promise<(Docker.ContainerInspectInfo['State'] & { RestartCount: number }) | undefined> {
    const info = await this.call('inspect container', () => this.docker.getContainer(id).inspect()).catch(() => undefined);
    return info ? { ...info.State, RestartCount: info.RestartCount ?? 0 } : undefined;
  }

  /** When an exited container finished (ms since epoch), for crash backoff. */
  async finishedAt(id: string): Promise<number | undefined> {
    const info = await this.call('inspect container', () => this.docker.getContainer(id).inspect()).catch(() => undefined);
    const t = info ? Date.parse(info.State.FinishedAt) : NaN;
    return Number.isFinite(t) && t > 0 ? t : undefined;
  }

  async restartPolicyOf(id: string): Promise<string | undefined> {
    const info = await this.call('inspect container', () => this.docker.getContainer(id).inspect()).catch(() => undefined);
    return info?.HostConfig.RestartPolicy?.Name;
  }

  /** Changes the engine's restart policy in place: no restart, no new container. */
  async setRestartPolicy(id: string, name: string): Promise<void> {
    await this.call('update container', () => this.docker.getContainer(id).update({ RestartPolicy: { Name: name } }));
  }

  async ensureImage(image: string, policy: Container['imagePullPolicy'], onPull?: (phase: 'pulling' | 'pulled', message?: string) => void): Promise<void> {
    const present = await this.call(`inspect image ${image}`, () => this.docker.getImage(image).inspect()).then(
      () => true,
      (err: unknown) => {
        if (isNotFound(err)) return false;
        throw err;
      },
    );
    if (policy === 'Never') {
      if (!present) throw new ImageError(`image ${image} is not present and its imagePullPolicy is Never`, 'ErrImageNeverPull');
      return;
    }
    if (present && policy !== 'Always') return;
    // One pull per image at a time, however many containers want it.
    let pending = this.pulls.get(image);
    if (!pending) {
      pending = this.pull(image).finally(() => this.pulls.delete(image));
      this.pulls.set(image, pending);
    }
    onPull?.('pulling');
    const started = Date.now();
    await pending;
    onPull?.('pulled', `in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  }

  private async pull(image: string): Promise<void> {
    const auth = authFor(image);
    const t0 = performance.now();
    let ok = false;
    try {
      const stream = await this.docker.pull(image, auth ? { authconfig: auth } : {});
      await new Promise<void>((resolve, reject) => {
        this.docker.modem.followProgress(
          stream,
          (err: Error | null) => (err ? reject(err) : resolve()),
          (event: { status?: string; progress?: string; id?: string; error?: string }) => {
            if (event.error) return;
            const line = [event.id, event.status, event.progress].filter(Boolean).join(' ');
            this.options.onPullProgress?.(image, line);
          },
        );
      });
      ok = true;
    } catch (err) {
      const e = engineError(err, `pull ${image}`, this.endpoint);
      if (e instanceof EngineRequestError) throw new ImageError(`failed to pull image ${image}: ${e.message.replace(/^pull [^:]+: /, '')}`, 'ErrImagePull');
      throw e;
    } finally {
      this.options.observer?.pull?.((performance.now() - t0) / 1000, ok);
    }
  }

  /**
   * What a finished container left as its termination message (the kubelet's rules): the file at
   * its terminationMessagePath, up to 4 KiB; with FallbackToLogsOnError, an empty file and a
   * failure, the last 80 lines of its log, up to 2 KiB.
   */
  async terminationMessage(c: { id: string; name: string; restartCount: number; exitCode?: number; spec?: Container }, podUid: string): Promise<string | undefined> {
    let text = '';
    try {
      const fd = openSync(terminationLogPath(this.options.stateDir, podUid, c.name, c.restartCount), 'r');
      try {
        const buf = Buffer.alloc(4096);
        text = buf.subarray(0, readSync(fd, buf, 0, 4096, 0)).toString('utf8');
      } finally {
        closeSync(fd);
      }
    } catch {
      // No file: made by an older podrun, or collected.
    }
    if (text || c.spec?.terminationMessagePolicy !== 'FallbackToLogsOnError' || !c.exitCode) return text || undefined;
    const logs = new PassThrough();
    let tail = '';
    logs.on('data', (d: Buffer) => (tail += d.toString('utf8')));
    await this.writeLogs(c.id, { follow: false, timestamps: false, tail: 80 }, logs, logs).catch(() => undefined);
    const bytes = Buffer.from(tail);
    return bytes.length > 2048 ? bytes.subarray(bytes.length - 2048).toString('utf8') : tail || undefined;
  }

  /** The image's configured USER ('' for root by default). */
  private async imageUser(image: string): Promise<string> {
    const info = await this.call(`inspect image ${image}`, () => this.docker.getImage(image).inspect());
    return info.Config?.User ?? '';
  }

  async prepareVolumes(pod: Pod): Promise<Map<string, VolumeBacking>> {
    return this.call(`prepare volumes of ${pod.metadata.name}`, () => prepareVolumes(this.docker, this.options.stateDir, pod, this.instance, this.options.allowedHostPaths));
  }

  async createSandbox(pod: Pod, id: PodIdentity, attempt: number, hash: string, restartPolicy: string, volumes?: ReadonlyMap<string, VolumeBacking>): Promise<SandboxInfo> {
    if (this.options.containerLog) void this.defaultLogDriver();
    await this.ensureImage(this.options.pauseImage, 'IfNotPresent');
    const dns = podDns(pod.spec.dnsPolicy, pod.spec.dnsConfig, nodeResolvConf(this.options.resolvConf ?? '/etc/resolv.conf'), pod.spec.hostNetwork === true);
    const opts = sandboxCreateOptions(pod, { ...id, instance: this.instance }, { pauseImage: this.options.pauseImage, attempt, hash, network: this.options.network ?? 'bridge', restartPolicy, oomScoreFloor: this.oomScoreFloor, ...(volumes ? { volumes } : {}), ...(dns ? { dns } : {}) });
    const refused = (err: unknown): never => {
      throw err instanceof EngineRequestError ? new SandboxError(err.message) : err;
    };
    const container = await this.work(`create sandbox for ${id.namespace}/${id.name}`, () => this.docker.createContainer(this.owned(opts))).catch(refused);
    this.created(pod, container.id);
    await this.work(`start sandbox for ${id.namespace}/${id.name}`, () => container.start()).catch(refused);
    return this.sandboxInfo(container.id, pod);
  }

  async sandboxInfo(id: string, pod: Pod): Promise<SandboxInfo> {
    if (pod.spec.hostNetwork) return { id, ip: this.hostIP };
    const info = await this.call('inspect sandbox', () => this.docker.getContainer(id).inspect());
    const ip = Object.values(info.NetworkSettings.Networks ?? {}).find((n) => n.IPAddress)?.IPAddress ?? '';
    return { id, ip };
  }

  async startContainer(
    pod: Pod,
    id: PodIdentity,
    c: Container,
    o: {
      type: 'init' | 'app';
      restartCount: number;
      hash: string;
      sandbox: SandboxInfo;
      volumes: ReadonlyMap<string, VolumeBacking>;
      restartPolicy: string;
      onPull?: (phase: 'pulling' | 'pulled', message?: string) => void;
    },
  ): Promise<string> {
    await this.ensureImage(c.image, c.imagePullPolicy, o.onPull);
    const imageUser = needsImageUser(pod, c) ? await this.imageUser(c.image) : undefined;
    const terminationLog = terminationLogPath(this.options.stateDir, pod.metadata.uid ?? '', c.name, o.restartCount);
    let opts: Docker.ContainerCreateOptions;
    try {
      prepareTerminationLog(terminationLog);
      const pinned = await this.pinMounts(pod, c, o.volumes);
      const hostsFile = pod.spec.hostNetwork && pod.spec.hostAliases?.length ? writeHostNetworkHosts(this.options.stateDir, pod) : undefined;
      const logConfig = await this.logConfig();
      opts = containerCreateOptions(pod, { ...id, instance: this.instance }, c, {
        pinned,
        ...(hostsFile ? { hostsFile } : {}),
        ...(logConfig ? { logConfig } : {}),
        ...(imageUser !== undefined ? { imageUser } : {}),
        terminationLog,
        type: o.type,
        restartCount: o.restartCount,
        hash: o.hash,
        sandboxId: o.sandbox.id,
        volumes: o.volumes,
        runtime: { podIP: o.sandbox.ip, hostIP: this.hostIP, nodeName: this.nodeName, oomScoreFloor: this.oomScoreFloor },
        restartPolicy: o.restartPolicy,
      });
    } catch (err) {
      throw new ContainerStartError((err as Error).message, 'CreateContainerConfigError');
    }
    const refused = (reason: ContainerStartError['reason']) => (err: unknown): never => {
      throw err instanceof EngineRequestError ? new ContainerStartError(err.message, reason) : err;
    };
    const container = await this.work(`create container ${c.name} of ${id.namespace}/${id.name}`, () => this.docker.createContainer(this.owned(opts))).catch(refused('CreateContainerError'));
    this.created(pod, container.id);
    await this.work(`start container ${c.name} of ${id.namespace}/${id.name}`, () => container.start()).catch(refused('RunContainerError'));
    return container.id;
  }

  private logDriver?: Promise<string>;

  /** The engine's default log driver, asked once per runtime (first asked while the sandbox is made, off the critical path). */
  private defaultLogDriver(): Promise<string> {
    this.logDriver ??= this.call('engine info', () => this.docker.info()).then((i) => String(i.LoggingDriver ?? 'json-file'), () => 'json-file');
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
      await pinMount({ base: b.path, ...(m.subPath ? { subPath: m.subPath } : {}), ...(b.hostPath && allowed ? { allowed } : {}), what: `volume "${m.name}" of container ${c.name}` }, staging);
      out.set(index, staging);
    }
    return out;
  }

  /** SIGTERM (or the image's stop signal), then SIGKILL after `graceSeconds`. Gone already is fine. */
  async stopContainer(id: string, graceSeconds: number): Promise<void> {
    const t = Math.max(0, Math.round(graceSeconds));
    await this.call('stop container', () => this.docker.getContainer(id).stop({ t }), t * 1000 + (this.options.requestTimeoutMs ?? 120_000)).catch((err: unknown) => {
      if (isNotFound(err) || (err instanceof EngineRequestError && err.statusCode === 304)) return;
      throw err;
    });
  }

  async removeContainer(id: string): Promise<void> {
    await this.work('remove container', () => this.docker.getContainer(id).remove({ force: true, v: true })).catch((err: unknown) => {
      if (isNotFound(err) || (err instanceof EngineRequestError && err.statusCode === 409)) return;
      throw err;
    });
  }

  /**
   * Writes a container's log to `out` and `err` (split as the container wrote them); with
   * `follow`, until the container stops or the stream ends.
   */
  async writeLogs(id: string, o: { follow: boolean; timestamps: boolean; tail?: number; since?: number }, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<void> {
    const c = this.docker.getContainer(id);
    const opts = { stdout: true, stderr: true, timestamps: o.timestamps, ...(o.tail !== undefined ? { tail: o.tail } : {}), ...(o.since !== undefined ? { since: o.since } : {}) };
    const tty = (await this.call('inspect container', () => c.inspect())).Config.Tty;
    // Non-TTY: timestamps always, so a stretch the engine reads twice when a file rotates under a
    // follower (json-file re-reads part of the rotated file) is dropped rather than printed again.
    // Streamed, never buffered, and at the reader's pace: a log of any size costs constant memory.
    const query = { ...opts, ...(tty ? {} : { timestamps: true }), follow: o.follow };
    const stream = await this.call(o.follow ? 'follow logs' : 'read logs', () => this.logStream(id, query));
    const ended = new Promise<void>((resolve) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', () => resolve());
    });
    stream.pipe(tty ? new Paced(out) : new FollowedFrames(out, err, o.timestamps));
    await ended;
  }

  /** GET /containers/{id}/logs as a stream, followed or not (dockerode buffers a log that is not followed). */
  private logStream(id: string, query: Record<string, unknown>): Promise<NodeJS.ReadableStream> {
    return new Promise((resolve, reject) => {
      this.docker.modem.dial(
        { path: `/containers/${id}/logs?`, method: 'GET', options: query, isStream: true, statusCodes: { 200: true, 404: 'no such container', 500: 'server error' } } as Parameters<Docker['modem']['dial']>[0],
        (err, result) => (err ? reject(err) : resolve(result as NodeJS.ReadableStream)),
      );
    });
  }

  /**
   * One container's resource counters as the engine reads them from its cgroup. `oneShot` answers
   * at once with no previous sample (the caller keeps its own, for rates); without it the engine
   * waits about a second to include one, as `docker stats --no-stream` does.
   */
  async containerStats(id: string, oneShot: boolean): Promise<EngineStats | undefined> {
    const c = this.docker.getContainer(id);
    return this.call('stats container', () => c.stats({ stream: false, ...(oneShot ? { 'one-shot': true } : {}) } as { stream: false })).then(
      (s) => s as unknown as EngineStats,
      (err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      },
    );
  }

  /** A container's writable layer size and log file, for filesystem usage (the engine sums the layer: call it seldom). */
  async containerDisk(id: string): Promise<{ rwBytes?: number; logPath?: string } | undefined> {
    const info = await this.call('inspect container size', () => this.docker.getContainer(id).inspect({ size: true } as Docker.ContainerInspectOptions)).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    if (!info) return undefined;
    const sized = info as Docker.ContainerInspectInfo & { SizeRw?: number };
    return { ...(sized.SizeRw !== undefined ? { rwBytes: sized.SizeRw } : {}), ...(info.LogPath ? { logPath: info.LogPath } : {}) };
  }

  /** What the node status says of the engine. */
  async engineFacts(): Promise<{ version: string; rootDir: string; cpus: number; memoryBytes: number; operatingSystem: string; kernelVersion: string; architecture: string }> {
    const [info, version] = await Promise.all([this.call('engine info', () => this.docker.info()), this.call('engine version', () => this.docker.version())]);
    return {
      version: String(version.Version),
      rootDir: String(info.DockerRootDir ?? '/var/lib/docker'),
      cpus: Number(info.NCPU ?? 0),
      memoryBytes: Number(info.MemTotal ?? 0),
      operatingSystem: String(info.OperatingSystem ?? ''),
      kernelVersion: String(info.KernelVersion ?? ''),
      architecture: String(info.Architecture ?? ''),
    };
  }

  /** What image GC needs to know of the engine: where it keeps its data, its images, which are in use. */
  async imageInventory(pinned: string): Promise<{ rootDir: string; images: Docker.ImageInfo[]; inUse: Set<string>; pinnedId: string }> {
    const info = await this.call('engine info', () => this.docker.info());
    const inUse = new Set((await this.call('list containers', () => this.docker.listContainers({ all: true }))).map((c) => c.ImageID));
    const pinnedId = await this.call(`inspect image ${pinned}`, () => this.docker.getImage(pinned).inspect()).then((i) => i.Id, () => '');
    const images = await this.call('list images', () => this.docker.listImages());
    return { rootDir: String(info.DockerRootDir ?? '/var/lib/docker'), images, inUse, pinnedId };
  }

  /**
   * Removes an unused image. An image with several tags cannot be removed by id without force
   * (which would also take it from under stopped containers): each tag goes first, then the image.
   */
  async removeImage(id: string, tags: readonly string[]): Promise<void> {
    for (const tag of tags) {
      await this.call(`untag image ${tag}`, () => this.docker.getImage(tag).remove({ force: false, noprune: false })).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
    }
    await this.call(`remove image ${id}`, () => this.docker.getImage(id).remove({ force: false })).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
  }

  async removePodVolumes(uid: string): Promise<void> {
    await this.call('remove pod volumes', () => removePodVolumes(this.docker, this.options.stateDir, uid, this.instance));
  }
}
