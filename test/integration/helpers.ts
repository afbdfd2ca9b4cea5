import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createServer as createHttpServer, type RequestListener } from 'node:http';
import { tmpdir } from 'node:os';
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import Docker from 'dockerode';
import { main } from '../../src/cli/main.js';
import { instanceId, LABEL } from '../../src/runtime/labels.js';
import { removeTree } from '../../src/runtime/safe-mount.js';
import { testRunLabels } from './suite-run.js';

export const docker = new Docker();
export const TEST_IMAGE = 'podrun-test/busybox:1';
export const BIN = fileURLToPath(new URL('../../bin/podrun', import.meta.url));
export const PAUSE_IMAGE = 'podrun-test/pause:1';

export function unique(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

export interface CliResult {
  code: number;
  out: string;
  err: string;
}

/** A scratch world for one test file: its own state dir and manifest dir, cleaned up after. */
export class World {
  readonly dir = mkdtempSync(join(tmpdir(), 'podrun-test-'));
  readonly stateDir = join(this.dir, 'state');
  readonly manifests = join(this.dir, 'manifests');
  /** The `podrun.io/instance` of this world's state dir: what its cleanup may touch, and nothing else. */
  readonly instance = instanceId(this.stateDir);
  /** Run first by cleanup (an engine of the test's own that holds this world's files goes first). */
  readonly beforeCleanup: (() => Promise<void>)[] = [];

  constructor() {
    rmSync(this.manifests, { recursive: true, force: true });
  }

  /** Runs the CLI in-process against the real engine, with the test images. */
  async cli(...args: string[]): Promise<CliResult> {
    const out: string[] = [];
    const err: string[] = [];
    let rawOut = '';
    let rawErr = '';
    const stdout = new PassThrough().on('data', (c: Buffer) => (rawOut += c.toString()));
    const stderr = new PassThrough().on('data', (c: Buffer) => (rawErr += c.toString()));
    // The node IP is loopback: hostNetwork probes and status.hostIP never reach the machine's own addresses.
    const code = await main(['node', 'podrun', '--state-dir', this.stateDir, '--pause-image', PAUSE_IMAGE, '--node-ip', '127.0.0.1', ...args], {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      stdout,
      stderr,
      isTTY: false,
    });
    return { code, out: out.join('\n') + rawOut, err: err.join('\n') + rawErr };
  }

  /** Runs the real binary (bin/podrun, the bundle users run; or `o.bin`, another build's) on this world's state dir, with optional stdin. */
  bin(args: string[], o: { input?: string; env?: Record<string, string>; bin?: string } = {}): Promise<CliResult> {
    return new Promise((resolveRun, reject) => {
      const p = spawn(o.bin ?? BIN, ['--state-dir', this.stateDir, '--pause-image', PAUSE_IMAGE, '--node-ip', '127.0.0.1', ...args], {
        env: { ...process.env, ...o.env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      p.stdout.on('data', (c: Buffer) => (out += c.toString()));
      p.stderr.on('data', (c: Buffer) => (err += c.toString()));
      p.on('error', reject);
      p.on('close', (code) => resolveRun({ code: code ?? -1, out, err }));
      p.stdin.end(o.input ?? '');
    });
  }

  /** The real binary as a long-running process (get -w, logs -f), for the test to read and stop. */
  spawnBin(args: string[]): ChildProcessWithoutNullStreams {
    return spawn(BIN, ['--state-dir', this.stateDir, '--pause-image', PAUSE_IMAGE, '--node-ip', '127.0.0.1', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  }

  /** Writes a manifest file in this world's directory. */
  write(name: string, text: string): string {
    const path = join(this.dir, name);
    writeFileSync(path, text);
    return path;
  }

  /**
   * Removes the containers and volumes this world's podrun instance made, and nothing else: a
   * user's pods (the README demo, say) in the same namespaces stay untouched.
   */
  async cleanup(): Promise<void> {
    for (const fn of this.beforeCleanup) await fn();
    const mine = JSON.stringify({ label: [`${LABEL.instance}=${this.instance}`] });
    const list = await docker.listContainers({ all: true, filters: mine });
    await Promise.all(
      list.map((c) =>
        docker
          .getContainer(c.Id)
          .remove({ force: true, v: true })
          .catch(() => undefined),
      ),
    );
    const volumes = (await docker.listVolumes({ filters: mine })).Volumes ?? [];
    await Promise.all(
      volumes.map((v) =>
        docker
          .getVolume(v.Name)
          .remove()
          .catch(() => undefined),
      ),
    );
    // Pinned mounts (subPath, allow-listed hostPath) are detached first: rm must never walk into a host directory.
    await removeTree(this.dir);
  }
}

/** A pod's containers; with `instance`, only those that podrun instance made. */
export async function podContainers(namespace: string, name: string, instance?: string): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({
    all: true,
    filters: JSON.stringify({
      label: [`${LABEL.podNamespace}=${namespace}`, `${LABEL.podName}=${name}`, ...(instance ? [`${LABEL.instance}=${instance}`] : [])],
    }),
  });
}

/** Container id by spec container name (running or not, newest restart count first). */
export async function containerIds(namespace: string, name: string, instance?: string): Promise<Record<string, string>> {
  const list = await podContainers(namespace, name, instance);
  list.sort((a, b) => Number(b.Labels[LABEL.restartCount]) - Number(a.Labels[LABEL.restartCount]));
  const out: Record<string, string> = {};
  for (const c of list) {
    const n = c.Labels[LABEL.containerName] ?? '';
    out[n] ??= c.Id;
  }
  return out;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

export async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      lastErr = err;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}${lastErr ? `: ${(lastErr as Error).message}` : ''}`);
}

export async function logsOf(id: string): Promise<string> {
  const buf = (await docker.getContainer(id).logs({ stdout: true, stderr: true, follow: false })) as unknown as Buffer;
  // Non-TTY logs are multiplexed: 8-byte frame headers before each chunk.
  const parts: string[] = [];
  let i = 0;
  while (i + 8 <= buf.length) {
    const len = buf.readUInt32BE(i + 4);
    parts.push(buf.subarray(i + 8, i + 8 + len).toString('utf8'));
    i += 8 + len;
  }
  return parts.join('');
}

/** Container event times from the engine's own clock, for reactions measured without the harness's delays. */
export interface EngineEventRecord {
  action: string;
  id: string;
  timeMs: number;
  attributes: Record<string, string>;
}

export async function followEvents(
  labels: string[],
  engine: Docker = docker,
  filters: Record<string, string[]> = { type: ['container'] },
): Promise<{ events: EngineEventRecord[]; stop: () => void }> {
  const stream = (await engine.getEvents({ filters: JSON.stringify({ ...filters, ...(labels.length ? { label: labels } : {}) }) })) as NodeJS.ReadableStream & {
    destroy(): void;
  };
  const events: EngineEventRecord[] = [];
  let buf = '';
  stream.on('data', (c: Buffer) => {
    buf += c.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.trim()) continue;
      const e = JSON.parse(line) as { Action: string; id: string; timeNano: number; Actor: { Attributes: Record<string, string> } };
      events.push({ action: e.Action, id: e.id, timeMs: e.timeNano / 1e6, attributes: e.Actor.Attributes });
    }
  });
  return { events, stop: () => stream.destroy() };
}

let recorder: { events: EngineEventRecord[]; stop: () => void } | undefined;

/**
 * Follows the engine's events about podrun's containers from now on, for `podEvents` (call it in
 * beforeAll). Followed live because the engine keeps only its last 256 events for a since/until
 * query: with other test files churning, a pod's events were gone within seconds.
 */
export async function recordPodEvents(): Promise<void> {
  recorder ??= await followEvents([LABEL.managedBy]);
}

export function stopPodEvents(): void {
  recorder?.stop();
  recorder = undefined;
}

/**
 * Until every event the engine sent before the call has reached `r`: the engine sends its events
 * in order, so once a marker container's own create has arrived, all before it have. The marker
 * has podrun's managed-by label (the recorder follows it) but no instance, so no podrun sees it.
 */
async function eventsCaughtUp(r: { events: EngineEventRecord[] }): Promise<void> {
  const marker = await docker.createContainer({
    Image: TEST_IMAGE,
    Cmd: ['true'],
    Labels: { [LABEL.managedBy]: 'test-events-marker', ...testRunLabels() },
    HostConfig: { NetworkMode: 'none' },
  });
  try {
    await until('the engine events to catch up', async () => (r.events.some((e) => e.id === marker.id) ? true : undefined), 30_000);
  } finally {
    await marker.remove({ force: true }).catch(() => undefined);
  }
}

/** Engine events about a pod's containers since `since` (unix seconds): action, time (ms) and container name. */
export async function podEventRecords(uid: string, since: number): Promise<{ action: string; ms: number; name: string }[]> {
  if (!recorder) throw new Error('podEvents reads what recordPodEvents() followed: call it in beforeAll');
  await eventsCaughtUp(recorder);
  return recorder.events
    .filter((e) => e.attributes[LABEL.podUid] === uid && e.timeMs >= since * 1000)
    .map((e) => ({ action: e.action, ms: e.timeMs, name: e.attributes[LABEL.containerName] ?? '' }));
}

/** Engine events about a pod's containers since `since` (unix seconds): the mutating calls it saw. */
export async function podEvents(uid: string, since: number): Promise<string[]> {
  return (await podEventRecords(uid, since)).map((e) => e.action);
}

/** GET from the agent's unix socket; undefined when no agent answers. */
export async function agentGetText(stateDir: string, path: string): Promise<string | undefined> {
  const { request } = await import('node:http');
  return new Promise((resolve) => {
    const req = request({ socketPath: join(stateDir, 'podrun.sock'), path }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve(body));
    });
    req.on('error', () => resolve(undefined));
    req.end();
  });
}

/** An HTTP server of the test's own on 127.0.0.1 (port 0: any free one); `close` cuts open connections too. */
export async function serveLocal(handler: RequestListener, port = 0): Promise<{ port: number; close: () => Promise<void> }> {
  const server = createHttpServer(handler);
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  const addr = server.address();
  return {
    port: typeof addr === 'object' && addr ? addr.port : 0,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * The repository's sample manifests (README demo) copied into `to`, made a test's own: its
 * namespaces, host ports and hostPath, so it runs beside the demo and other tests.
 */
export function copySampleManifests(to: string, o: { demo: string; system: string; web: number; etcd: number; data: string }): string[] {
  const repo = fileURLToPath(new URL('../..', import.meta.url));
  const texts: string[] = [];
  for (const f of readdirSync(join(repo, 'manifests'))) {
    const text = readFileSync(join(repo, 'manifests', f), 'utf8')
      .replace(/namespace: demo\b/g, `namespace: ${o.demo}`)
      .replace(/namespace: kube-system\b/g, `namespace: ${o.system}`)
      .replace(/\b18080\b/g, String(o.web))
      .replace(/\b18081\b/g, String(o.etcd))
      .replace(/\/var\/lib\/podrun-examples/g, o.data);
    writeFileSync(join(to, f), text);
    texts.push(text);
  }
  return texts;
}

/** A pod of two: `burner` keeps a core busy most of the time, `hog` holds 40 MiB in /dev/shm (the readings tests' subjects). */
export function busyPodYaml(name: string, namespace: string): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${namespace}}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - {name: burner, image: ${TEST_IMAGE}, command: [sh, -c, 'while :; do i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; sleep 0.05; done']}
  - {name: hog, image: ${TEST_IMAGE}, command: [sh, -c, 'head -c 41943040 /dev/zero > /dev/shm/hog; exec sleep 3600']}
`;
}
