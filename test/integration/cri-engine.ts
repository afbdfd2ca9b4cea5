import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriClient } from '../../src/runtime/cri/client.js';
import { afterAll, beforeAll } from 'vitest';
import { checkInstalled, CONTAINERD_1_6, containerdConfig, type ContainerdRelease } from './containerd-config.js';
import { PAUSE_IMAGE, TEST_IMAGE, until, World } from './helpers.js';
import { cgroupDirs, CONTAINER_CGROUP, removeEmptyPodrunParents, rmdirRetrying, unmountUnder } from './suite-run.js';

/** The test images as containerd names them once imported (Docker's short names are docker.io's). */
export const CRI_TEST_IMAGE = `docker.io/${TEST_IMAGE}`;
export const CRI_PAUSE_IMAGE = `docker.io/${PAUSE_IMAGE}`;

function sh(cmd: string, args: string[], input?: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr.trim() || r.stdout.trim()}`);
  return r.stdout;
}

/** A /24 in 10.88.0.0/16 that no route of this machine uses (other helpers' containerds included). */
function freeSubnet(): string {
  const routes = sh('ip', ['-4', 'route']);
  for (let i = 0; i < 64; i++) {
    const third = 1 + ((randomBytes(1)[0] as number) % 254);
    if (!routes.includes(`10.88.${third}.`)) return `10.88.${third}`;
  }
  throw new Error('no free 10.88.x.0/24 subnet for the test CNI network');
}

export interface ContainerdOptions {
  /** A containerd with its CRI plugin off, as Docker's packaged config.toml leaves it. */
  criDisabled?: boolean;
  /** Which containerd: bookworm's 1.6 unless told (containerd-config.ts). */
  release?: ContainerdRelease;
}

/**
 * A private containerd (Debian bookworm's 1.6, or unstable's 2.x: containerd-config.ts) with its own root, state, socket,
 * config and CNI network, for CRI tests: nothing of it is shared with the machine's Docker or with
 * other tests, and `destroy()` removes all of it (sandboxes, shims, mounts, bridge, directories).
 *
 *   const ctrd = new PrivateContainerd();
 *   beforeAll(async () => { await ctrd.start(); ctrd.importTestImages(); }, 60_000);
 *   afterAll(() => ctrd.destroy(), 60_000);
 *   // ctrd.endpoint for podrun's --container-runtime-endpoint, ctrd.client for direct CRI calls,
 *   // CRI_TEST_IMAGE / CRI_PAUSE_IMAGE for the images as containerd names them.
 */
export class PrivateContainerd {
  readonly dir = mkdtempSync(join(tmpdir(), 'podrun-ctrd-'));
  readonly socket = join(this.dir, 'containerd.sock');
  readonly logDir = join(this.dir, 'pod-logs');
  readonly bridge = `podcri${randomBytes(3).toString('hex')}`;
  readonly network = `podrun-cri-${randomBytes(3).toString('hex')}`;
  readonly subnet = freeSubnet();
  private proc: ChildProcess | undefined;
  private client_: CriClient | undefined;
  private log = '';

  constructor(private readonly o: ContainerdOptions = {}) {}

  get release(): ContainerdRelease {
    return this.o.release ?? CONTAINERD_1_6;
  }

  /** containerd's pid while it runs. */
  get pid(): number | undefined {
    return this.proc?.pid;
  }

  get endpoint(): string {
    return `unix://${this.socket}`;
  }

  /** A client on this containerd (closed by destroy). */
  get client(): CriClient {
    this.client_ ??= new CriClient({ endpoint: this.endpoint, timeoutMs: 30_000 });
    return this.client_;
  }

  private writeConfig(): string {
    const cniConf = join(this.dir, 'cni');
    mkdirSync(cniConf, { recursive: true });
    mkdirSync(this.logDir, { recursive: true });
    writeFileSync(
      join(cniConf, '10-podrun.conflist'),
      JSON.stringify({
        cniVersion: '1.0.0',
        name: this.network,
        plugins: [
          {
            type: 'bridge',
            bridge: this.bridge,
            isGateway: true,
            // No masquerade: the test's pods talk only to the host and to each other.
            ipMasq: false,
            ipam: { type: 'host-local', ranges: [[{ subnet: `${this.subnet}.0/24` }]], dataDir: join(this.dir, 'ipam') },
          },
          { type: 'loopback' },
        ],
      }),
    );
    const config = containerdConfig(this.release, {
      dir: this.dir,
      socket: this.socket,
      cniConf,
      pauseImage: CRI_PAUSE_IMAGE,
      criDisabled: this.o.criDisabled === true,
    });
    const file = join(this.dir, 'config.toml');
    writeFileSync(file, config);
    return file;
  }

  async start(): Promise<void> {
    const config = this.writeConfig();
    checkInstalled(this.release);
    this.proc = spawn(this.release.binary, ['--config', config, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.proc.stderr?.on('data', (c: Buffer) => {
      this.log = (this.log + c.toString()).slice(-8000);
    });
    const exited = new Promise<never>((_, reject) => this.proc?.once('exit', (code) => reject(new Error(`containerd exited (${code}): ${this.log}`))));
    exited.catch(() => undefined);
    const probe = this.o.criDisabled
      ? async (): Promise<true | undefined> => (spawnSync('ctr', ['-a', this.socket, 'version']).status === 0 ? true : undefined)
      : async (): Promise<true | undefined> => {
          // A client per probe: the shared one is not left in reconnect back-off by the wait.
          const c = new CriClient({ endpoint: this.endpoint, timeoutMs: 5000 });
          try {
            return (await c.version().catch(() => undefined)) ? true : undefined;
          } finally {
            c.close();
          }
        };
    await Promise.race([until('the private containerd to answer', probe, 30_000), exited]);
  }

  /** The test images and the pause image, copied from the shared Docker engine into the k8s.io namespace. */
  importTestImages(): void {
    const r = spawnSync('sh', ['-c', `docker save ${TEST_IMAGE} ${PAUSE_IMAGE} | ctr -a ${this.socket} -n k8s.io images import -`], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`importing the test images failed: ${r.stderr}`);
  }

  /** Lets this containerd pull from a plain-HTTP registry on loopback (`host:port`), as Docker does by default. */
  trustPlainHttpRegistry(host: string): void {
    const d = join(this.dir, 'certs.d', host);
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, 'hosts.toml'), `server = "http://${host}"\n[host."http://${host}"]\n  capabilities = ["pull", "resolve"]\n`);
  }

  /** The last lines containerd wrote (for a test's failure message). */
  get recentLog(): string {
    return this.log;
  }

  /** This containerd's shims (their command line names its socket): pid, and the sandbox id they serve. */
  private shims(): { pid: number; id: string }[] {
    const out: { pid: number; id: string }[] = [];
    for (const p of readdirSync('/proc')) {
      if (!/^\d+$/.test(p)) continue;
      try {
        const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
        if (!argv.includes(this.socket) || Number(p) === this.proc?.pid || !/containerd-shim/.test(readlinkSync(`/proc/${p}/exe`))) continue;
        out.push({ pid: Number(p), id: argv[argv.indexOf('-id') + 1] ?? '' });
      } catch {
        // gone meanwhile
      }
    }
    return out;
  }

  /**
   * The shims' children (each sandbox's pause process and each container's first process), the
   * network namespaces they are in (inode numbers) and their cgroup directories.
   */
  private shimChildren(shimPids: number[]): { pids: number[]; netns: Set<number>; cgroups: Set<string> } {
    const pids: number[] = [];
    const netns = new Set<number>();
    const cgroups = new Set<string>();
    for (const p of readdirSync('/proc')) {
      if (!/^\d+$/.test(p)) continue;
      try {
        const ppid = Number(/^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1]);
        if (!shimPids.includes(ppid)) continue;
        pids.push(Number(p));
        netns.add(statSync(`/proc/${p}/ns/net`).ino);
        for (const c of cgroupDirs(Number(p))) if (CONTAINER_CGROUP.test(c)) cgroups.add(c);
      } catch {
        // gone meanwhile
      }
    }
    return { pids, netns, cgroups };
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    const killed = setTimeout(() => p.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killed);
  }

  async destroy(): Promise<void> {
    // Sandboxes first, through the CRI, so CNI gives back addresses and the netns under /run/netns
    // goes. A client of its own, and a sweep after it for what the runtime could not remove (a test
    // may have broken the runtime or its connection).
    if (!this.o.criDisabled && this.proc && this.proc.exitCode === null) {
      const c = new CriClient({ endpoint: this.endpoint, timeoutMs: 10_000 });
      try {
        for (const s of await c.listPodSandbox()) {
          await c.stopPodSandbox(s.id).catch(() => undefined);
          await c.removePodSandbox(s.id).catch(() => undefined);
        }
      } catch {
        // the runtime is unreachable: the sweep below still runs
      } finally {
        c.close();
      }
    }
    this.client_?.close();
    const shims = this.shims();
    const left = this.shimChildren(shims.map((s) => s.pid));
    await this.stop();
    // A shim and its containers outlive containerd; these are the ones this containerd started
    // (a container's first process is pid 1 of its pid namespace: the rest of it dies with it).
    for (const pid of [...left.pids, ...shims.map((s) => s.pid)]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // exited meanwhile
      }
    }
    for (const dir of left.cgroups) {
      await rmdirRetrying(dir);
      // A pod cgroup of podrun's, and the podrun directories above it, once empty.
      removeEmptyPodrunParents(dir);
    }
    // A sandbox's netns is a bind mount under /run/netns: ours are those a shim's child was in.
    // CNI's cached results name the network or the sandbox id.
    for (const dir of ['/run/netns', '/var/lib/cni/results']) {
      let names: string[] = [];
      try {
        names = readdirSync(dir);
      } catch {
        continue;
      }
      for (const f of names) {
        const path = join(dir, f);
        try {
          const ours =
            dir === '/run/netns'
              ? f.startsWith('cni-') && left.netns.has(statSync(path).ino)
              : f.startsWith(`${this.network}-`) || shims.some((s) => s.id !== '' && f.includes(s.id));
          if (!ours) continue;
          if (dir === '/run/netns') spawnSync('umount', [path]);
          rmSync(path, { force: true });
        } catch {
          // gone meanwhile
        }
      }
    }
    spawnSync('ip', ['link', 'del', this.bridge]);
    unmountUnder(this.dir);
    rmSync(this.dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  }
}

/**
 * The pod cgroups podrun made for this instance (--pod-max-pids), from every hierarchy, once the
 * runtime that put processes in them is gone: a test that failed before deleting its pod leaves them.
 */
export function removePodCgroups(instance: string): void {
  const bases = existsSync('/sys/fs/cgroup/cgroup.controllers') ? ['/sys/fs/cgroup'] : readdirSync('/sys/fs/cgroup').map((h) => join('/sys/fs/cgroup', h));
  for (const base of bases) {
    const mine = join(base, 'podrun', instance);
    let pods: string[] = [];
    try {
      pods = readdirSync(mine, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name);
    } catch {
      continue;
    }
    for (const dir of [...pods.map((p) => join(mine, p)), mine, join(base, 'podrun')]) {
      try {
        rmdirSync(dir);
      } catch {
        // busy, or another instance's pods still in it
      }
    }
  }
}

/**
 * A test file's private containerd with the test images, a World, and `cri(args)`: the built
 * binary on that containerd with no Docker engine reachable (hooks registered here).
 */
export function criTestBed(): {
  ctrd: PrivateContainerd;
  world: World;
  podLogs: string;
  criArgs: () => string[];
  noDocker: Record<string, string>;
  cri: (args: string[]) => ReturnType<World['bin']>;
} {
  const ctrd = new PrivateContainerd();
  const world = new World();
  const podLogs = join(world.dir, 'pod-logs');
  const noDocker = { DOCKER_HOST: 'unix:///nonexistent/docker.sock' };
  const criArgs = (): string[] => ['--container-runtime-endpoint', ctrd.endpoint, '--pod-logs-dir', podLogs];
  beforeAll(async () => {
    await ctrd.start();
    ctrd.importTestImages();
  }, 90_000);
  afterAll(async () => {
    await ctrd.destroy();
    removePodCgroups(world.instance);
    await world.cleanup();
  }, 90_000);
  return { ctrd, world, podLogs, criArgs, noDocker, cri: (args) => world.bin([...criArgs(), ...args], { env: noDocker }) };
}
