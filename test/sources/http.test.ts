import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpGet } from '../../src/sources/http.js';
import { UrlSource } from '../../src/sources/url-source.js';
import { FULL_GET_EVERY } from '../../src/sources/validators.js';
import type { Logger } from '../../src/log/logger.js';

/** Listens, never accepts, and fills its backlog: a further connect hangs (prints the port). */
const FULL_BACKLOG = `
import socket, time
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(0)
held = []
for _ in range(3):
    c = socket.socket(); c.setblocking(False)
    try: c.connect(s.getsockname())
    except BlockingIOError: pass
    held.append(c)
print(s.getsockname()[1], flush=True)
time.sleep(60)
`;

const POD = 'apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c, image: busybox}]\n';
let base = '';
let handler: (req: IncomingMessage, res: ServerResponse) => void = (_q, r) => r.end();
const server = createServer((req, res) => handler(req, res));
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => server.close());

describe('fetching a manifest URL', () => {
  it('offers and decodes gzip, deflate and br, and names an encoding it cannot decode', async () => {
    let seen = '';
    for (const [enc, encode] of [
      ['gzip', gzipSync],
      ['deflate', deflateSync],
      ['br', brotliCompressSync],
    ] as const) {
      handler = (req, res) => {
        seen = String(req.headers['accept-encoding']);
        res.writeHead(200, { 'content-encoding': enc }).end(encode(Buffer.from(POD)));
      };
      expect((await httpGet(`${base}/p`)).body.toString()).toBe(POD);
    }
    expect(seen).toBe('gzip, deflate, br');
    handler = (_q, res) => res.writeHead(200, { 'content-encoding': 'zstd' }).end('xx');
    await expect(httpGet(`${base}/p`)).rejects.toThrow('unsupported Content-Encoding "zstd" (podrun accepts gzip, deflate, br)');
  });

  it('caps a body once decompressed, not only on the wire', async () => {
    handler = (_q, res) => res.writeHead(200, { 'content-encoding': 'gzip' }).end(gzipSync(Buffer.alloc(11 * 1024 * 1024, 32)));
    await expect(httpGet(`${base}/p`)).rejects.toThrow('body is larger than 10 MiB once decompressed (gzip)');
  });

  it('says a redirect loop or an endless chain is one, with where it last went', async () => {
    handler = (req, res) => res.writeHead(302, { location: req.url === '/a' ? '/b' : '/a' }).end();
    await expect(httpGet(`${base}/a`)).rejects.toThrow(/Redirect loop detected/);
    handler = (req, res) => res.writeHead(302, { location: `/r${Number(req.url?.slice(2) || 0) + 1}` }).end();
    await expect(httpGet(`${base}/r0`)).rejects.toThrow('HTTP 302: too many redirects (more than 5; a redirect loop?), last to /r6');
  });

  it('a timeout longer than a timer can hold waits (it once aborted every request after 1 ms)', async () => {
    handler = (_req, res) => void setTimeout(() => res.writeHead(200).end(POD), 50);
    expect((await httpGet(`${base}/p`, { timeoutMs: 30 * 24 * 3600_000 })).body.toString()).toBe(POD);
  });

  it('refuses a 304 to a request that was not conditional', async () => {
    handler = (_q, res) => res.writeHead(304).end();
    await expect(httpGet(`${base}/p`)).rejects.toThrow('HTTP 304 Not Modified to a request that was not conditional');
    expect((await httpGet(`${base}/p`, {}, { etag: '"x"' })).status).toBe(304);
  });
});

describe('a URL source', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'podrun-url-'));
  afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

  it('reports fetch failures and invalid bodies where the status file reads them, and recovers', async () => {
    let changes = 0;
    handler = (_q, res) => res.writeHead(503).end();
    const src = new UrlSource(`${base}/pods`, { stateDir, periodMs: 3_600_000, retryMs: 3_600_000 });
    await src.start(() => changes++);
    expect(src.errors().map((e) => e.message)).toEqual(['cannot fetch: HTTP 503']);
    expect(changes).toBe(1);
    handler = (_q, res) => res.end(Buffer.from([0x6b, 0x3a, 0x20, 0xff, 0x0a]));
    await src.poll();
    expect(src.errors().map((e) => `${e.line}:${e.column} ${e.message}`)).toEqual(['1:4 invalid UTF-8 (byte 0xff); manifests must be UTF-8 text']);
    handler = (_q, res) => res.end(POD);
    await src.poll();
    expect(src.errors()).toEqual([]);
    expect(src.snapshot()[0]?.pods.map((p) => p.key)).toEqual(['default/web']);
    await src.stop();
  });
});

describe('a URL source polled by its timer', () => {
  it("a poll that throws (here the agent's callback) is logged and retried, not an unhandled rejection", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'podrun-url-'));
    const lines: string[] = [];
    const log: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: (m) => lines.push(m) };
    let throwing = false;
    handler = (_q, res) => res.writeHead(503).end();
    const src = new UrlSource(`${base}/flaky`, { stateDir, periodMs: 3_600_000, retryMs: 20, log });
    await src.start(() => {
      if (throwing) throw new Error('callback broke');
    });
    throwing = true;
    await expect.poll(() => lines.length, { timeout: 5_000 }).toBeGreaterThan(0);
    expect(lines[0]).toMatch(/poll failed: callback broke \(keeping the last good set\)$/);
    throwing = false;
    handler = (_q, res) => res.end(POD);
    await expect.poll(() => src.snapshot()[0]?.pods.length, { timeout: 5_000 }).toBe(1);
    await src.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });
});

describe('what a fetch says about where it went and how it ended', () => {
  it('names the timeout that ended a fetch, what it was doing, and its value', async () => {
    handler = () => undefined; // never answers
    await expect(httpGet(`${base}/h`, { timeoutMs: 300 })).rejects.toThrow(
      `total timeout (300ms for the whole fetch) ran out while waiting for the response headers from ${base}`,
    );
    handler = (_q, res) => {
      res.writeHead(200);
      res.write('kind: ');
    };
    await expect(httpGet(`${base}/b`, { timeoutMs: 300 })).rejects.toThrow(
      `total timeout (300ms for the whole fetch) ran out while reading the body from ${base}, 6 bytes of the body read`,
    );
    // A listener whose backlog is full: the SYN is dropped and the connection never completes.
    const py = spawn('python3', ['-c', FULL_BACKLOG], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const port = await new Promise<string>((r) => py.stdout.once('data', (d: Buffer) => r(d.toString().trim())));
      await expect(httpGet(`http://127.0.0.1:${port}/c`, { timeoutMs: 300 })).rejects.toThrow(
        `total timeout (300ms for the whole fetch) ran out while connecting to http://127.0.0.1:${port}`,
      );
    } finally {
      py.kill();
    }
  });

  it('says once when the URL is answered from another origin, and when it no longer is', async () => {
    const other = createServer((_q, res) => res.end(POD));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const otherBase = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    const lines: string[] = [];
    const log: Logger = {
      debug: () => undefined,
      info: (m) => lines.push(`info ${m}`),
      warn: (m) => lines.push(`warn ${m}`),
      error: (m) => lines.push(`error ${m}`),
    };
    const stateDir = mkdtempSync(join(tmpdir(), 'podrun-url-'));
    const src = new UrlSource(`${base}/moved`, { stateDir, periodMs: 3_600_000, log });
    try {
      handler = (_q, res) => res.writeHead(302, { location: `${otherBase}/pods` }).end();
      await src.start(() => undefined);
      await src.poll();
      handler = (_q, res) => res.end(POD);
      await src.poll();
      expect(lines.filter((l) => l.includes('origin'))).toEqual([
        `info url:${base}/moved: redirected to another origin: ${otherBase}`,
        `info url:${base}/moved: answered from its own origin again (no longer redirected)`,
      ]);
    } finally {
      await src.stop();
      other.close();
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});

describe('a URL source redirected from https to plain http', () => {
  it('warns: the set can be read and changed on the way', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'podrun-tls-'));
    const made = spawnSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        'key.pem',
        '-out',
        'cert.pem',
      ],
      { cwd: dir, encoding: 'utf8' },
    );
    expect(made.stderr).not.toContain('error');
    const tls = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (_q, res) =>
      res.writeHead(301, { location: `${base}/plain` }).end(),
    );
    await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
    const lines: string[] = [];
    const log: Logger = {
      debug: () => undefined,
      info: (m) => lines.push(`info ${m}`),
      warn: (m) => lines.push(`warn ${m}`),
      error: (m) => lines.push(`error ${m}`),
    };
    handler = (_q, res) => res.end(POD);
    const src = new UrlSource(`https://127.0.0.1:${(tls.address() as AddressInfo).port}/pods`, {
      stateDir: dir,
      periodMs: 3_600_000,
      caFile: join(dir, 'cert.pem'),
      log,
    });
    try {
      await src.start(() => undefined);
      expect(src.errors()).toEqual([]);
      expect(lines.filter((l) => l.includes('origin'))).toEqual([
        `warn ${src.name}: redirected to another origin: ${base} (from https to plain http: the set can be read and changed on the way)`,
      ]);
    } finally {
      await src.stop();
      tls.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a URL source whose validators lie', () => {
  // A server that answers every conditional request 304, as python's http.server does to a file
  // replaced by one with the same or an older mtime; its Last-Modified is an hour old (trusted).
  let served = '';
  const lying = (req: IncomingMessage, res: ServerResponse): void => {
    const validators = { 'last-modified': new Date(Date.now() - 3_600_000).toUTCString(), date: new Date().toUTCString() };
    if (req.headers['if-modified-since'] || req.headers['if-none-match']) res.writeHead(304, validators).end();
    else res.writeHead(200, validators).end(served);
  };
  const pod = (image: string): string => POD.replace('busybox', image);
  const imageOf = (src: UrlSource): string | undefined => src.snapshot()[0]?.pods[0]?.pod.spec.containers[0]?.image;

  it(`takes a change at the latest on the ${FULL_GET_EVERY}th poll, a plain GET compared with the set in force`, async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'podrun-url-'));
    handler = lying;
    served = pod('one');
    const src = new UrlSource(`${base}/lying`, { stateDir, periodMs: 3_600_000 });
    try {
      await src.start(() => undefined);
      expect(imageOf(src)).toBe('one');
      served = pod('two');
      for (let n = 1; n < FULL_GET_EVERY; n++) await src.poll();
      expect(imageOf(src)).toBe('one'); // 304s, as asked
      await src.poll();
      expect(imageOf(src)).toBe('two');
    } finally {
      await src.stop();
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it('compares what is served with the cached set at the first poll after a restart', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'podrun-url-'));
    handler = lying;
    served = pod('one');
    const first = new UrlSource(`${base}/lying`, { stateDir, periodMs: 3_600_000 });
    await first.start(() => undefined);
    await first.stop();
    served = pod('two');
    const again = new UrlSource(`${base}/lying`, { stateDir, periodMs: 3_600_000 });
    try {
      await again.start(() => undefined);
      expect(imageOf(again)).toBe('two');
    } finally {
      await again.stop();
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
