import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpGet } from '../../src/sources/http.js';
import { UrlSource } from '../../src/sources/url-source.js';

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
    for (const [enc, encode] of [['gzip', gzipSync], ['deflate', deflateSync], ['br', brotliCompressSync]] as const) {
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
