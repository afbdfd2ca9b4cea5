import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer as createHttpServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import Docker from 'dockerode';
import { PAUSE_IMAGE, TEST_IMAGE, until } from './helpers.js';
import { unmountUnder } from './suite-run.js';

function ip(...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0 && !/File exists/.test(r.stderr)) throw new Error(`ip ${args.join(' ')}: ${r.stderr.trim()}`);
}

/**
 * A second, private Docker engine for tests that stop and start the engine, so the shared engine
 * the other test files use is never disturbed. It gets a bridge of its own: with `--bridge=none`
 * dockerd deletes the shared engine's docker0.
 */
export class PrivateEngine {
  readonly dir = mkdtempSync(join(tmpdir(), 'podrun-engine-'));
  readonly socket = join(this.dir, 'docker.sock');
  readonly bridge = `podrun${randomBytes(3).toString('hex')}`;
  private proc: ChildProcess | undefined;
  private bridgeMade = false;

  get host(): string {
    return `unix://${this.socket}`;
  }

  get docker(): Docker {
    return new Docker({ socketPath: this.socket });
  }

  async start(): Promise<void> {
    if (!this.bridgeMade) {
      ip('link', 'add', this.bridge, 'type', 'bridge');
      ip('addr', 'add', `10.213.${randomBytes(1)[0]}.1/24`, 'dev', this.bridge);
      ip('link', 'set', this.bridge, 'up');
      this.bridgeMade = true;
      // Named in the run's directory, so a sweep after a killed run deletes it (suite-run.ts).
      writeFileSync(join(this.dir, 'bridge-name'), this.bridge);
    }
    this.proc = spawn(
      'dockerd',
      [
        '-H',
        this.host,
        '--data-root',
        join(this.dir, 'data'),
        '--exec-root',
        join(this.dir, 'exec'),
        '--pidfile',
        join(this.dir, 'docker.pid'),
        `--bridge=${this.bridge}`,
        '--iptables=false',
        '--ip-masq=false',
      ],
      { stdio: 'ignore' },
    );
    await until('the private engine to answer', async () => ((await this.docker.ping().catch(() => undefined)) ? true : undefined), 30_000);
  }

  /** Copies the test images over from the shared engine (nothing can be pulled here). */
  loadTestImages(): void {
    const save = spawnSync('sh', ['-c', `docker save ${TEST_IMAGE} ${PAUSE_IMAGE} | docker -H ${this.host} load`], { encoding: 'utf8' });
    if (save.status !== 0) throw new Error(`loading images into the private engine failed: ${save.stderr}`);
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.on('exit', r));
    p.kill('SIGTERM');
    await exited;
  }

  async destroy(): Promise<void> {
    try {
      const list = await this.docker.listContainers({ all: true });
      await Promise.all(
        list.map((c) =>
          this.docker
            .getContainer(c.Id)
            .remove({ force: true })
            .catch(() => undefined),
        ),
      );
    } catch {
      // engine already down
    }
    await this.stop();
    if (this.bridgeMade) spawnSync('ip', ['link', 'del', this.bridge]);
    // Overlay mounts of the stopped engine can linger a moment; unmount them before removing.
    unmountUnder(this.dir);
    rmSync(this.dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  }
}

export type FaultMode = { kind: 'pass' } | { kind: 'fail'; status: number } | { kind: 'slow'; delayMs: number } | { kind: 'hang'; match: RegExp };

/**
 * A Docker API proxy on a unix socket of its own, in front of the shared engine, that can answer
 * every request with an error or delay it: an engine that is sick rather than gone. Streams pass
 * through; hijacked connections (exec, attach) are piped raw.
 */
export class FaultyEngine {
  readonly dir = mkdtempSync(join(tmpdir(), 'podrun-faulty-'));
  readonly socket = join(this.dir, 'docker.sock');
  mode: FaultMode = { kind: 'pass' };
  /** Requests seen while the mode was not `pass`. */
  faultedRequests = 0;
  /** Every request passed through, as `METHOD /path` without the query. */
  readonly requests: string[] = [];
  private readonly server = createHttpServer((req, res) => this.handle(req, res));
  private readonly open = new Set<Socket>();

  constructor(private readonly upstream = '/var/run/docker.sock') {
    this.server.on('connection', (s: Socket) => {
      this.open.add(s);
      s.on('close', () => this.open.delete(s));
    });
    this.server.on('upgrade', (req: IncomingMessage, client: Socket, head: Buffer) => {
      const up = connect(this.upstream, () => {
        up.write(
          `${req.method} ${req.url} HTTP/1.1\r\n${Object.entries(req.headers)
            .map(([k, v]) => `${k}: ${String(v)}`)
            .join('\r\n')}\r\n\r\n`,
        );
        if (head.length) up.write(head);
        up.pipe(client).pipe(up);
      });
      up.on('error', () => client.destroy());
      client.on('error', () => up.destroy());
    });
  }

  get host(): string {
    return `unix://${this.socket}`;
  }

  async start(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(this.socket, r));
  }

  /** Ends every open connection (the event stream included), as a sick engine's restart would. */
  dropConnections(): void {
    for (const s of this.open) s.destroy();
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    let mode = this.mode;
    // A hang holds only the matching requests, unanswered, as an engine stuck on one container does.
    if (mode.kind === 'hang') {
      if (mode.match.test(`${req.method ?? ''} ${req.url ?? ''}`)) {
        this.faultedRequests++;
        return;
      }
      mode = { kind: 'pass' };
    }
    this.requests.push(`${req.method ?? ''} ${(req.url ?? '').split('?')[0] ?? ''}`);
    if (mode.kind !== 'pass') this.faultedRequests++;
    if (mode.kind === 'fail') {
      req.resume();
      res.writeHead(mode.status, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'injected fault' }));
      return;
    }
    const forward = (): void => {
      const up = httpRequest({ socketPath: this.upstream, method: req.method, path: req.url, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        // Streams (events) answer headers long before a body: pass them on at once.
        res.flushHeaders();
        r.pipe(res);
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    };
    if (mode.kind === 'slow') setTimeout(forward, mode.delayMs);
    else forward();
  }

  async stop(): Promise<void> {
    this.dropConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Podman's Docker-compatible API (`podman system service`) on a socket of its own, for the tests
 * that run podrun on Podman. Podman keeps its own images: the test images are loaded into it.
 * Debian's podman 4.3 on this VM needs higher default ulimits than its built-in ones to start
 * containers, given in a containers.conf of the test's own (CONTAINERS_CONF), not the machine's.
 */
export class PodmanService {
  readonly dir = mkdtempSync(join(tmpdir(), 'podrun-podman-'));
  readonly socket = join(this.dir, 'podman.sock');
  readonly conf = join(this.dir, 'containers.conf');
  private proc: ChildProcess | undefined;

  get host(): string {
    return `unix://${this.socket}`;
  }

  get docker(): Docker {
    return new Docker({ socketPath: this.socket });
  }

  get env(): Record<string, string> {
    return { CONTAINERS_CONF: this.conf };
  }

  static installed(): boolean {
    return spawnSync('sh', ['-c', 'command -v podman'], { stdio: 'ignore' }).status === 0;
  }

  async start(): Promise<void> {
    writeFileSync(this.conf, '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n');
    const load = spawnSync(
      'sh',
      [
        '-c',
        `podman image exists localhost/${TEST_IMAGE} && podman image exists localhost/${PAUSE_IMAGE} || docker save ${TEST_IMAGE} ${PAUSE_IMAGE} | podman load`,
      ],
      { encoding: 'utf8', env: { ...process.env, ...this.env } },
    );
    if (load.status !== 0) throw new Error(`loading the test images into podman failed: ${load.stderr}`);
    // Its own directory as the working one: conmon 2.1.6 writes an `oom` file into the one it
    // inherits when a container is OOM-killed (found in a worktree after the OOM test).
    this.proc = spawn('podman', ['system', 'service', '--time=0', this.host], { stdio: 'ignore', cwd: this.dir, env: { ...process.env, ...this.env } });
    await until('the podman service to answer', async () => ((await this.docker.ping().catch(() => undefined)) ? true : undefined), 30_000);
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (p && p.exitCode === null) {
      const exited = new Promise((r) => p.on('exit', r));
      p.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
