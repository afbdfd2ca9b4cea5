import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import type { ContainerState, EngineRecord } from '../../src/runtime/observed.js';
import type { PodSandboxState } from '../../src/runtime/kuberuntime/cri-types.js';
import { openEngine } from '../../src/runtime/open-engine.js';
import type { PodEngine } from '../../src/runtime/roles.js';
import { AgentProcess } from './agent-helpers.js';
import { CONTAINERD_2 } from './containerd-config.js';
import { PrivateContainerd } from './cri-engine.js';
import { PodmanService } from './engine-helpers.js';
import { pidNamespaceProcesses } from './pidns-procs.js';
import { vanished } from './vanished.js';
import { BIN, docker, PAUSE_IMAGE, World, type CliResult } from './helpers.js';

// An engine bed: what one test file needs to run podrun's engine suites on one engine, so a
// suite is defined once (x.suite.ts, a function of the bed) and run on each engine by a runner
// file of three lines (x.test.ts on Docker, x.podman.test.ts on Podman's Docker API,
// x.cri.test.ts on containerd 1.6, x.cri2.test.ts on containerd 2): vitest runs them in
// parallel. Everything a suite observes or pokes goes through podrun's own engine interface
// (PodEngine), so the same assertion holds on both engines; what only one engine has (Docker's
// proxy faults, json-file details, a CRI runtime's lack of restart policies) stays in that
// engine's case, with the reason beside it.

/** Docker, Podman through its Docker API, containerd 1.6 and containerd 2 through CRI. */
export type EngineKind = 'docker' | 'podman' | 'cri' | 'cri2';

/** One sandbox or container of this bed's podrun instance, as the engine lists it. */
export interface BedContainer {
  id: string;
  /** The spec's container name (`POD` for a sandbox). */
  name: string;
  type: 'sandbox' | 'init' | 'app' | string;
  /** A container's state; a sandbox's (ready, notready) as the engine says it. */
  state: ContainerState | PodSandboxState;
  restartCount: number;
  hash: string;
  podUid: string;
  podName: string;
  exitCode?: number;
  labels: Record<string, string>;
}

/** A process in a container: what `ps -o pid,stat,args` says in it, zombies included. */
export interface BedProc {
  pid: number;
  stat: string;
  args: string;
}

export interface EngineBed {
  readonly kind: EngineKind;
  /** The API podrun speaks to it: Docker's (Docker, Podman) or CRI (containerd). */
  readonly api: 'docker' | 'cri';
  /** For test names: `[docker]`, `[podman]`, `[cri]`, `[cri2]`. */
  readonly tag: string;
  /** The Docker API's socket, on the Docker-API engines (a test may put a proxy in front of it). */
  readonly dockerSocket?: string;
  readonly world: World;
  /** The CLI's and agent's flags that choose this engine. */
  readonly args: readonly string[];
  /** The environment of the binary and agent (on CRI: no Docker engine reachable at all). */
  readonly env: Readonly<Record<string, string>>;
  /** The CLI in-process on this world and engine. */
  cli(...args: string[]): Promise<CliResult>;
  /** The built binary on this world and engine. */
  bin(args: string[], o?: { input?: string }): Promise<CliResult>;
  /** The built binary as a long-running process (exec, logs -f). */
  spawnBin(args: string[]): ChildProcessWithoutNullStreams;
  /** `podrun run` on this world and engine (stopped by its caller). */
  agent(args: string[], env?: Record<string, string>): AgentProcess;
  /** podrun's engine on this world's instance, opened once for the file. */
  engine(): Promise<PodEngine>;
  /** This instance's sandboxes and containers of one pod (or of a namespace), newest restart first. */
  containers(namespace: string, name?: string): Promise<BedContainer[]>;
  /** SIGKILL now, as a crash would (the engine's stop with no grace). */
  kill(id: string): Promise<void>;
  /** Runs a command in a running container to its end. */
  exec(id: string, command: string[], timeoutMs?: number): Promise<{ exitCode: number; output: string }>;
  /** The container's processes, seen from inside it; undefined once it runs no more. */
  processes(id: string): Promise<BedProc[] | undefined>;
  /** The host paths the engine mounts into a container (each engine's own record of it). */
  mountSources(id: string): Promise<string[]>;
  /** The bed's own runtime, stopped and started again under the agent (on CRI: the private containerd; Docker is the machine's). */
  readonly runtime?: { readonly endpoint: string; stop(): Promise<void>; start(): Promise<void> };
}

/** A container id without the runtime's scheme (`docker://…`, `containerd://…`). */
export function bareId(containerID: string | undefined): string {
  return (containerID ?? '').replace(/^[a-z0-9-]+:\/\//, '');
}

function toBed(c: EngineRecord): BedContainer {
  const l = c.labels;
  return {
    id: c.id,
    name: l[LABEL.containerName] ?? '',
    type: l[LABEL.containerType] ?? '',
    state: c.state,
    restartCount: Number(l[LABEL.restartCount] ?? 0) || 0,
    hash: l[LABEL.hash] ?? '',
    podUid: l[LABEL.podUid] ?? '',
    podName: l[LABEL.podName] ?? '',
    ...(c.kind === 'container' && c.exitCode !== undefined ? { exitCode: c.exitCode } : {}),
    labels: l,
  };
}

function parsePs(text: string): BedProc[] {
  return text
    .split('\n')
    .slice(1)
    .map((l) => /^\s*(\d+)\s+(\S+)\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ pid: Number(m[1]), stat: m[2] ?? '', args: (m[3] ?? '').trim() }))
    .filter((p) => p.args !== 'ps -o pid,stat,args');
}

/**
 * A bed for the calling test file (hooks registered here): Docker, the machine's running engine;
 * Podman, a `podman system service` of the file's own (engine-helpers.ts) with the test images;
 * CRI, a private containerd of the file's own (cri-engine.ts: 1.6, or 2 for `cri2`) with the
 * test images, and no Docker engine reachable by the binary or agent.
 */
export function engineBed(kind: EngineKind): EngineBed {
  const world = new World();
  const ctrd = kind === 'cri' || kind === 'cri2' ? new PrivateContainerd(kind === 'cri2' ? { release: CONTAINERD_2 } : {}) : undefined;
  const podman = kind === 'podman' ? new PodmanService() : undefined;
  const dockerApi = podman ? podman.docker : docker;
  const podLogs = join(world.dir, 'pod-logs');
  const args: string[] = ctrd ? ['--container-runtime-endpoint', ctrd.endpoint, '--pod-logs-dir', podLogs] : podman ? ['--docker-host', podman.host] : [];
  const env: Record<string, string> = ctrd ? { DOCKER_HOST: 'unix:///nonexistent/docker.sock' } : podman ? { DOCKER_HOST: podman.host } : {};
  let opened: Promise<PodEngine> | undefined;
  const engine = (): Promise<PodEngine> =>
    (opened ??= openEngine(
      { stateDir: world.stateDir, pauseImage: PAUSE_IMAGE, hostIP: '127.0.0.1', ...(podman ? { host: podman.host } : {}) },
      ctrd ? { containerRuntimeEndpoint: ctrd.endpoint, podLogsDir: podLogs } : {},
    ));

  if (ctrd) {
    beforeAll(async () => {
      await ctrd.start();
      ctrd.importTestImages();
    }, 90_000);
    // The runtime goes first (its containers hold the world's volumes and log files), once.
    let destroyed: Promise<void> | undefined;
    world.beforeCleanup.push(async () => {
      if (opened) ((await opened) as { close?: () => void }).close?.();
      await (destroyed ??= ctrd.destroy());
    });
  }
  if (podman) {
    beforeAll(() => podman.start(), 90_000);
    world.beforeCleanup.push(async () => {
      await removePodmanInstance(podman, world.instance);
      await podman.stop();
    });
  }
  afterAll(() => world.cleanup(), 90_000);

  const bed: EngineBed = {
    kind,
    api: ctrd ? 'cri' : 'docker',
    tag: `[${kind}]`,
    ...(podman ? { dockerSocket: podman.socket } : kind === 'docker' ? { dockerSocket: '/var/run/docker.sock' } : {}),
    world,
    args,
    env,
    ...(ctrd ? { runtime: { endpoint: ctrd.endpoint, stop: () => ctrd.stop(), start: () => ctrd.start() } } : {}),
    cli: (...a) => world.cli(...args, ...a),
    bin: (a, o = {}) => world.bin([...args, ...a], { ...o, env }),
    spawnBin: (a) =>
      spawn(BIN, ['--state-dir', world.stateDir, '--pause-image', PAUSE_IMAGE, '--node-ip', '127.0.0.1', ...args, ...a], {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { ...process.env, ...env },
      }),
    agent: (a, e = {}) => new AgentProcess(world.stateDir, [...args, ...a], { ...env, ...e }),
    engine,
    async containers(namespace, name) {
      const all = await (await engine()).listContainers();
      return all
        .filter((c) => c.labels[LABEL.podNamespace] === namespace && (name === undefined || c.labels[LABEL.podName] === name))
        .map(toBed)
        .sort((a, b) => b.restartCount - a.restartCount);
    },
    async kill(id) {
      await (await engine()).stopContainer(id, 0);
    },
    async exec(id, command, timeoutMs = 20_000) {
      const r = await (await engine()).exec(id, command, timeoutMs);
      if (r === 'timeout') throw new Error(`${command.join(' ')}: timed out`);
      if ('notRun' in r) throw new Error(`${command.join(' ')}: not run: ${r.detail}`);
      return r;
    },
    async processes(id) {
      const r = await (await engine()).exec(id, ['ps', '-o', 'pid,stat,args'], 10_000).catch(() => undefined);
      if (r && r !== 'timeout' && 'exitCode' in r && r.exitCode === 0) return parsePs(r.output);
      // Podman refuses an exec into a container it is stopping ("can only create exec sessions on
      // running containers: container state improper"), for the whole grace period, where Docker
      // and containerd take one: its processes are read from the host's /proc then, by the
      // container's pid namespace (Podman still gives its first process's pid while stopping).
      if (!podman) return undefined;
      const pid = (
        await podman.docker
          .getContainer(id)
          .inspect()
          .catch(() => undefined)
      )?.State.Pid;
      return pid ? pidNamespaceProcesses(pid) : undefined;
    },
    async mountSources(id) {
      // A container the agent removed between the list and this look mounts nothing any more
      // (a restarting pod's old instances go while a test reads them).
      if (!ctrd) {
        const inspected = await dockerApi
          .getContainer(id)
          .inspect()
          .catch((e: unknown) => {
            if (vanished(e)) return undefined;
            throw e;
          });
        return (inspected?.Mounts ?? []).map((m) => String(m.Source));
      }
      // The OCI spec containerd made the container with: what runc bind-mounted.
      const r = spawnSync('ctr', ['-a', ctrd.socket, '-n', 'k8s.io', 'containers', 'info', id], { encoding: 'utf8' });
      if (r.status !== 0 && /not found/i.test(r.stderr)) return [];
      if (r.status !== 0) throw new Error(`ctr containers info ${id}: ${r.stderr}`);
      const info = JSON.parse(r.stdout) as { Spec?: { mounts?: { source?: string; type?: string }[] } };
      return (info.Spec?.mounts ?? []).filter((m) => m.type === 'bind').map((m) => String(m.source));
    },
  };
  return bed;
}

/**
 * The containers and volumes this world's podrun made in Podman's store (the machine's, shared
 * with other files' services): sandboxes last, since Podman refuses to remove one others joined.
 */
async function removePodmanInstance(podman: PodmanService, instance: string): Promise<void> {
  const mine = JSON.stringify({ label: [`${LABEL.instance}=${instance}`] });
  const list = await podman.docker.listContainers({ all: true, filters: mine }).catch(() => []);
  const remove = (ids: string[]): Promise<unknown> =>
    Promise.all(
      ids.map((id) =>
        podman.docker
          .getContainer(id)
          .remove({ force: true, v: true })
          .catch(() => undefined),
      ),
    );
  const sandbox = (c: (typeof list)[number]): boolean => c.Labels[LABEL.containerType] === 'sandbox';
  await remove(list.filter((c) => !sandbox(c)).map((c) => c.Id));
  await remove(list.filter(sandbox).map((c) => c.Id));
  const volumes = (await podman.docker.listVolumes({ filters: mine }).catch(() => ({ Volumes: [] }))).Volumes ?? [];
  await Promise.all(
    volumes.map((v) =>
      podman.docker
        .getVolume(v.Name)
        .remove()
        .catch(() => undefined),
    ),
  );
}
