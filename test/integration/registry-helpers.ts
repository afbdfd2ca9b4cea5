import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { docker, freePort, until } from './helpers.js';

export interface RegistryOptions {
  /** Basic auth (htpasswd, bcrypt) for every request. */
  auth?: { username: string; password: string };
  /** Serve HTTPS with a certificate signed by a CA this helper makes. */
  tls?: boolean;
}

/**
 * A real registry (Debian's docker-registry, the CNCF distribution server) on a loopback port of
 * its own, for one test file: its storage, config and certificates live in a temp dir it removes.
 */
export class LocalRegistry {
  private proc?: ChildProcess;
  private readonly dir = mkdtempSync(join(tmpdir(), 'podrun-registry-'));
  private readonly pushed = new Set<string>();
  /** host:port, the image references' prefix. */
  host = '';
  ca?: string;
  private log = '';

  constructor(private readonly o: RegistryOptions = {}) {}

  async start(port?: number): Promise<this> {
    const p = port ?? (await freePort());
    this.host = `127.0.0.1:${p}`;
    const lines = [
      'version: 0.1',
      'log:',
      '  level: warn',
      '  accesslog:',
      '    disabled: true',
      'storage:',
      `  filesystem:`,
      `    rootdirectory: ${join(this.dir, 'data')}`,
      '  delete:',
      '    enabled: true',
      'http:',
      `  addr: ${this.host}`,
    ];
    if (this.o.tls) {
      this.makeCertificates();
      lines.push('  tls:', `    certificate: ${join(this.dir, 'server.crt')}`, `    key: ${join(this.dir, 'server.key')}`);
    }
    if (this.o.auth) {
      const h = spawnSync('htpasswd', ['-Bbn', this.o.auth.username, this.o.auth.password], { encoding: 'utf8' });
      if (h.status !== 0) throw new Error(`htpasswd: ${h.stderr}`);
      writeFileSync(join(this.dir, 'htpasswd'), h.stdout);
      lines.push('auth:', '  htpasswd:', '    realm: podrun-test', `    path: ${join(this.dir, 'htpasswd')}`);
    }
    writeFileSync(join(this.dir, 'config.yml'), `${lines.join('\n')}\n`);
    this.proc = spawn('docker-registry', ['serve', join(this.dir, 'config.yml')], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc.stdout?.on('data', (d: Buffer) => (this.log = (this.log + d.toString()).slice(-4000)));
    this.proc.stderr?.on('data', (d: Buffer) => (this.log = (this.log + d.toString()).slice(-4000)));
    await until(`registry on ${this.host} to answer (${this.log})`, async () => ((await this.status('/v2/')) !== undefined ? true : undefined), 15_000);
    return this;
  }

  /** The HTTP status of GET path (401 when auth is on), undefined while it does not answer. */
  status(path: string): Promise<number | undefined> {
    return new Promise((resolve) => {
      const opts = { host: '127.0.0.1', port: Number(this.host.split(':')[1]), path, timeout: 1000, ...(this.ca ? { ca: this.ca } : {}) };
      const req = (this.o.tls ? httpsRequest : httpRequest)(opts, (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on('error', () => resolve(undefined));
      req.on('timeout', () => req.destroy());
      req.end();
    });
  }

  /** Stops the server (the registry is "down"); start() with the same port brings it back with its images. */
  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      p.kill('SIGKILL');
    });
  }

  get port(): number {
    return Number(this.host.split(':')[1]);
  }

  /**
   * Pushes a local image as `<host>/<repo>` and removes that tag locally again, so that only a pull
   * can bring it back. Returns the reference.
   */
  async push(local: string, repo: string): Promise<string> {
    const ref = `${this.host}/${repo}`;
    const [name, tag] = splitRef(ref);
    await docker.getImage(local).tag({ repo: name, tag });
    // The engine wants an auth header on every push, empty or not.
    const auth = this.o.auth
      ? { username: this.o.auth.username, password: this.o.auth.password, serveraddress: this.host }
      : { username: '', password: '', serveraddress: this.host };
    const stream = await docker.getImage(ref).push({ authconfig: auth });
    await finished(stream, `push ${ref}`);
    this.pushed.add(ref);
    await untag(ref);
    return ref;
  }

  /** Removes what this registry's tests left locally (pulled tags), stops it and deletes its files. */
  async close(): Promise<void> {
    for (const ref of this.pushed) await untag(ref);
    await this.stop();
    if (this.o.tls) rmSync(certsDir(this.host), { recursive: true, force: true });
    rmSync(this.dir, { recursive: true, force: true });
  }

  private makeCertificates(): void {
    const d = this.dir;
    const ssl = (args: string[]) => {
      const r = spawnSync('openssl', args, { cwd: d, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
    };
    ssl([
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '2',
      '-subj',
      '/CN=podrun test CA',
    ]);
    ssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1']);
    writeFileSync(join(d, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
    ssl([
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'server.crt',
      '-days',
      '2',
      '-extfile',
      'ext.cnf',
    ]);
    this.ca = readFileSync(join(d, 'ca.crt'), 'utf8');
    // The engine trusts a registry's CA from certs.d/<host:port>/ (this port is the test's own).
    mkdirSync(certsDir(this.host), { recursive: true });
    writeFileSync(join(certsDir(this.host), 'ca.crt'), this.ca);
  }
}

function certsDir(host: string): string {
  return join('/etc/docker/certs.d', host);
}

function splitRef(ref: string): [string, string] {
  const colon = ref.lastIndexOf(':');
  return colon > ref.lastIndexOf('/') ? [ref.slice(0, colon), ref.slice(colon + 1)] : [ref, 'latest'];
}

/** Removes a local tag if present (never the image under other tags: no force). */
export async function untag(ref: string): Promise<void> {
  await docker
    .getImage(ref)
    .remove({ noprune: false })
    .catch(() => undefined);
}

export async function hasImage(ref: string): Promise<boolean> {
  return docker
    .getImage(ref)
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

/** A docker config dir under `parent` (a test's own dir) with the given auths, as `docker login` writes them. */
export function dockerConfig(parent: string, auths: Record<string, { username: string; password: string }>, extra: Record<string, unknown> = {}): string {
  const dir = mkdtempSync(join(parent, 'dockercfg-'));
  const entries = Object.fromEntries(Object.entries(auths).map(([k, v]) => [k, { auth: Buffer.from(`${v.username}:${v.password}`).toString('base64') }]));
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ auths: entries, ...extra }, null, 2));
  return dir;
}

/**
 * Builds a local image of `layers` layers over the test busybox, each `mbPerLayer` MB of random
 * bytes (so nothing compresses away), for pulls whose progress and cost can be seen.
 */
export async function buildLayeredImage(tag: string, layers: number, mbPerLayer: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'podrun-layers-'));
  try {
    const lines = ['FROM podrun-test/busybox:1'];
    for (let i = 0; i < layers; i++) {
      const r = spawnSync('head', ['-c', String(mbPerLayer * 1024 * 1024), '/dev/urandom'], { maxBuffer: mbPerLayer * 1024 * 1024 + 1 });
      writeFileSync(join(dir, `layer${i}`), r.stdout);
      lines.push(`COPY layer${i} /data/layer${i}`);
    }
    writeFileSync(join(dir, 'Dockerfile'), `${lines.join('\n')}\n`);
    const stream = await docker.buildImage(
      { context: dir, src: ['Dockerfile', ...Array.from({ length: layers }, (_, i) => `layer${i}`)] },
      { t: tag, rm: true, forcerm: true },
    );
    await finished(stream, `build ${tag}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Waits out a streamed engine answer (push, build), failing with the first error it carried. */
function finished(stream: NodeJS.ReadableStream, what: string): Promise<void> {
  return new Promise<void>((resolve, reject) =>
    docker.modem.followProgress(stream, (err: Error | null, out: { error?: string }[]) => {
      const failed = err?.message ?? out.find((e) => e.error)?.error;
      return failed ? reject(new Error(`${what}: ${failed}`)) : resolve();
    }),
  );
}
