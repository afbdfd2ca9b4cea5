import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Http2Server, type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Code, GrpcConnection, GrpcError, grpcTimeout } from '../../src/runtime/cri/grpc-h2.js';
import { MessageReader } from '../../src/runtime/cri/grpc-messages.js';

// podrun's gRPC on Node's HTTP/2 (src/runtime/cri/grpc-h2.ts) against an HTTP/2 peer of the test's
// own on a unix socket, one that answers as a runtime would and one that misbehaves on purpose:
// what a CRI endpoint sends is whatever the process behind the socket chooses to send.

const dirs: string[] = [];
const servers: Http2Server[] = [];
const conns: GrpcConnection[] = [];
afterEach(() => {
  for (const c of conns.splice(0)) c.close();
  for (const s of servers.splice(0)) s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

type Handler = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, body: Promise<Buffer>) => void;

interface Peer {
  socket: string;
  server: Http2Server;
  sessions: number;
  /** Ends the peer as a process that dies: its connections dropped, nothing said. */
  kill(): Promise<void>;
}

async function peer(handler: Handler, socket?: string): Promise<Peer> {
  let sock = socket;
  if (!sock) {
    const dir = mkdtempSync(join(tmpdir(), 'podrun-grpc-'));
    dirs.push(dir);
    sock = join(dir, 'grpc.sock');
  }
  const server = createServer();
  const live: ServerHttp2Session[] = [];
  const out: Peer = {
    socket: sock,
    server,
    sessions: 0,
    kill: () =>
      new Promise<void>((ok) => {
        server.close(() => ok());
        for (const x of live) x.destroy();
      }),
  };
  server.on('session', (x) => {
    out.sessions++;
    live.push(x);
  });
  server.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('error', () => undefined);
    const body = new Promise<Buffer>((resolve) => {
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => resolve(Buffer.concat(chunks)));
    });
    handler(stream, headers, body);
  });
  await new Promise<void>((ok) => server.listen(sock, ok));
  servers.push(server);
  return out;
}

function framed(...messages: Buffer[]): Buffer {
  return Buffer.concat(
    messages.map((m) => {
      const head = Buffer.alloc(5);
      head.writeUInt32BE(m.length, 1);
      return Buffer.concat([head, m]);
    }),
  );
}

/** Answers each call with its own body (unframed) back, and an OK status in trailers. */
const echo: Handler = (stream, _h, body) => {
  void body.then((b) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(framed(b.subarray(5)));
  });
};

function client(socket: string, o: { maxMessageBytes?: number; maxStreamId?: number } = {}): GrpcConnection {
  const c = new GrpcConnection(socket, { maxMessageBytes: o.maxMessageBytes ?? 1024 * 1024, ...(o.maxStreamId ? { maxStreamId: o.maxStreamId } : {}) });
  conns.push(c);
  return c;
}

const text = (b: Buffer): string => b.toString();

async function failure(p: Promise<unknown>): Promise<GrpcError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(GrpcError);
  return e as GrpcError;
}

describe('gRPC on HTTP/2 (the CRI transport)', () => {
  it('makes a unary call as gRPC does: POST to the path, the message length-prefixed, the deadline in grpc-timeout', async () => {
    let seen: IncomingHttpHeaders = {};
    const p = await peer((s, h, b) => {
      seen = h;
      echo(s, h, b);
    });
    const c = client(p.socket);
    expect(await c.unary('/runtime.v1.RuntimeService/Version', Buffer.from('hello'), text, 5000)).toBe('hello');
    expect(seen[':method']).toBe('POST');
    expect(seen[':path']).toBe('/runtime.v1.RuntimeService/Version');
    expect(seen['content-type']).toBe('application/grpc');
    expect(seen.te).toBe('trailers');
    expect(seen['grpc-timeout']).toBe('5000m');
    // Many calls at once share one connection.
    const many = await Promise.all(Array.from({ length: 20 }, (_, i) => c.unary('/x/Y', Buffer.from(String(i)), text, 5000)));
    expect(many).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
    expect(p.sessions).toBe(1);
  });

  it('writes a deadline gRPC accepts: at most 8 digits', () => {
    expect(grpcTimeout(120_000)).toBe('120000m');
    expect(grpcTimeout(0.2)).toBe('1m');
    expect(grpcTimeout(15 * 24 * 3600_000)).toBe('1296000S');
    expect(grpcTimeout(1e12)).toBe('99999999S');
  });

  it("reads the peer's status and its percent-encoded message, from trailers and from a trailers-only answer", async () => {
    const p = await peer((s, h) => {
      if (h[':path'] === '/a/TrailersOnly') {
        s.respond(
          { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '5', 'grpc-message': 'container %22x%22 not found' },
          { endStream: true },
        );
        return;
      }
      s.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '12', 'grpc-message': 'unknown service runtime.v1.RuntimeService %E2%9C%97 %zz' }));
      s.end();
    });
    const c = client(p.socket);
    const a = await failure(c.unary('/a/TrailersOnly', Buffer.alloc(0), text, 5000));
    expect([a.code, a.details, a.httpStatus]).toEqual([Code.NOT_FOUND, 'container "x" not found', undefined]);
    const b = await failure(c.unary('/a/Trailers', Buffer.alloc(0), text, 5000));
    expect([b.code, b.details]).toEqual([Code.UNIMPLEMENTED, 'unknown service runtime.v1.RuntimeService %E2%9C%97 %zz']);
  });

  it('says an HTTP/2 peer is not gRPC by its HTTP status or content type, as a value', async () => {
    const p = await peer((s, h) => {
      if (h[':path'] === '/a/NotFound') s.respond({ ':status': 404, 'content-type': 'text/html' }, { endStream: true });
      else {
        s.respond({ ':status': 200, 'content-type': 'text/html' });
        s.end('<html>hello</html>');
      }
    });
    const c = client(p.socket);
    const a = await failure(c.unary('/a/NotFound', Buffer.alloc(0), text, 5000));
    expect([a.code, a.httpStatus]).toEqual([Code.UNIMPLEMENTED, 404]);
    const b = await failure(c.unary('/a/Html', Buffer.alloc(0), text, 5000));
    expect([b.code, b.httpStatus]).toEqual([Code.UNKNOWN, 200]);
  });

  it('refuses a length prefix over the cap without waiting for the body, and a compressed message', async () => {
    let closed = 0;
    const p = await peer((s, h) => {
      s.on('close', () => closed++);
      s.respond({ ':status': 200, 'content-type': 'application/grpc' });
      const head = Buffer.alloc(5);
      if (h[':path'] === '/a/Huge') head.writeUInt32BE(0xffffff00, 1);
      else {
        head[0] = 1;
        head.writeUInt32BE(2, 1);
      }
      // Never ends: only the prefix can end the call.
      s.write(Buffer.concat([head, Buffer.from('ab')]));
    });
    const c = client(p.socket, { maxMessageBytes: 1024 });
    const a = await failure(c.unary('/a/Huge', Buffer.alloc(0), text, 5000));
    expect(a.code).toBe(Code.RESOURCE_EXHAUSTED);
    expect(a.details).toMatch(/4294967040 vs\. 1024/);
    const b = await failure(c.unary('/a/Compressed', Buffer.alloc(0), text, 5000));
    expect(b.code).toBe(Code.INTERNAL);
    // Both streams were cancelled, not left open on the peer.
    await expect.poll(() => closed).toBe(2);
  });

  it('ends a call at its deadline and cancels the stream', async () => {
    let cancelled = false;
    const p = await peer((s) => s.on('close', () => (cancelled = true)));
    const c = client(p.socket);
    const t0 = Date.now();
    const e = await failure(c.unary('/a/Never', Buffer.alloc(0), text, 300));
    expect(e.code).toBe(Code.DEADLINE_EXCEEDED);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    await expect.poll(() => cancelled).toBe(true);
  });

  it('holds the process open while a call runs on the connection, and not while it is idle', async () => {
    const p = await peer((s, h, b) => void setTimeout(() => echo(s, h, b), 200));
    const c = client(p.socket);
    // Node lists only the handles that keep the process alive: the peer's own two, and the client's.
    const pipes = (): number => process.getActiveResourcesInfo().filter((r) => r === 'PipeWrap').length;
    const call = c.unary('/a/B', Buffer.from('x'), text, 5000);
    await new Promise((r) => setTimeout(r, 100));
    const during = pipes();
    expect(await call).toBe('x');
    await new Promise((r) => setTimeout(r, 20));
    expect(during - pipes()).toBe(1);
  });

  it('a decode failure is INTERNAL with the decoder error as its cause; a second message in a unary answer fails it', async () => {
    const p = await peer((s, h) => {
      s.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '0' }));
      s.end(h[':path'] === '/a/Two' ? framed(Buffer.from('1'), Buffer.from('2')) : framed(Buffer.from('bad')));
    });
    const c = client(p.socket);
    const boom = new Error('wire type 7');
    const a = await failure(
      c.unary(
        '/a/Bad',
        Buffer.alloc(0),
        () => {
          throw boom;
        },
        5000,
      ),
    );
    expect([a.code, a.cause]).toEqual([Code.INTERNAL, boom]);
    const b = await failure(c.unary('/a/Two', Buffer.alloc(0), text, 5000));
    expect(b.code).toBe(Code.UNIMPLEMENTED);
  });

  it('a stream that ends without a status, or inside a message, is a failure, not an empty answer', async () => {
    const p = await peer((s, h) => {
      if (h[':path'] === '/a/Cut') {
        // Half a message, then an OK status.
        s.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '0' }));
        s.end(framed(Buffer.from('whole')).subarray(0, 7));
        return;
      }
      s.respond({ ':status': 200, 'content-type': 'application/grpc' });
      s.end(framed(Buffer.from('x')));
    });
    const c = client(p.socket);
    expect((await failure(c.unary('/a/NoStatus', Buffer.alloc(0), text, 5000))).code).toBe(Code.INTERNAL);
    expect((await failure(c.unary('/a/Cut', Buffer.alloc(0), text, 5000))).code).toBe(Code.INTERNAL);
  });

  it('nothing listening is UNAVAILABLE; a runtime that comes back is reached by the next call', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'podrun-grpc-'));
    dirs.push(dir);
    const sock = join(dir, 'grpc.sock');
    const c = client(sock);
    const a = await failure(c.unary('/a/B', Buffer.alloc(0), text, 5000));
    expect(a.code).toBe(Code.UNAVAILABLE);
    expect((a.cause as NodeJS.ErrnoException).code).toBe('ENOENT');
    const first = await peer(echo, sock);
    expect(await c.unary('/a/B', Buffer.from('one'), text, 5000)).toBe('one');
    // The runtime restarts: its connections go, and a new one listens on the same path.
    await first.kill();
    rmSync(sock, { force: true });
    await peer(echo, sock);
    expect(await c.unary('/a/B', Buffer.from('two'), text, 5000)).toBe('two');
  });

  it('moves to a new connection before HTTP/2 stream ids run out, and finishes the calls on the old one', async () => {
    const p = await peer(echo);
    const c = client(p.socket, { maxStreamId: 7 });
    // Stream ids 1, 3, 5: then a new session.
    for (let i = 0; i < 6; i++) expect(await c.unary('/a/B', Buffer.from(String(i)), text, 5000)).toBe(String(i));
    expect(p.sessions).toBe(2);
  });

  it("streams a server's messages as they come, split anywhere, and stops on abort", async () => {
    let closed = false;
    const p = await peer((s, h) => {
      s.on('close', () => (closed = true));
      s.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      const all = framed(Buffer.from('a'), Buffer.from('bb'), Buffer.from('ccc'));
      // One byte at a time: a prefix split across chunks.
      for (const byte of all) s.write(Buffer.from([byte]));
      if (h[':path'] === '/a/Fails') {
        s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '12', 'grpc-message': 'not here' }));
        s.end();
      }
      // Otherwise it stays open, as an event stream does.
    });
    const c = client(p.socket);
    const ac = new AbortController();
    const got: string[] = [];
    for await (const m of c.serverStream('/a/Events', Buffer.alloc(0), text, ac.signal)) {
      got.push(m);
      if (got.length === 3) ac.abort();
    }
    expect(got).toEqual(['a', 'bb', 'ccc']);
    await expect.poll(() => closed).toBe(true);

    const more: string[] = [];
    const e = await failure(
      (async () => {
        for await (const m of c.serverStream('/a/Fails', Buffer.alloc(0), text)) more.push(m);
      })(),
    );
    expect(more).toEqual(['a', 'bb', 'ccc']);
    expect([e.code, e.details]).toEqual([Code.UNIMPLEMENTED, 'not here']);
  });

  it('reads a large answer that comes in 16 KB frames, each byte copied out once', async () => {
    const big = Buffer.alloc(8 * 1024 * 1024 + 3, 7);
    big.write('end', big.length - 3);
    const p = await peer((s) => {
      s.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '0' }));
      s.end(framed(big));
    });
    const c = client(p.socket, { maxMessageBytes: 16 * 1024 * 1024 });
    const got = await c.unary('/a/BigList', Buffer.alloc(0), (b) => Buffer.from(b), 20_000);
    expect(got.length).toBe(big.length);
    expect(got.equals(big)).toBe(true);

    // The reader alone, fed as HTTP/2 delivers: what it allocates for one message is that message.
    const whole = framed(big);
    const allocated = { bytes: 0 };
    const alloc = vi.spyOn(Buffer, 'allocUnsafe');
    const concat = vi.spyOn(Buffer, 'concat');
    try {
      alloc.mockImplementation((n: number) => {
        allocated.bytes += n;
        return Buffer.allocUnsafeSlow(n);
      });
      concat.mockImplementation((list: readonly Uint8Array[], total?: number) => {
        const n = total ?? list.reduce((a, b) => a + b.length, 0);
        allocated.bytes += n;
        const out = Buffer.allocUnsafeSlow(n);
        let at = 0;
        for (const b of list) {
          out.set(b.subarray(0, n - at), at);
          at += Math.min(b.length, n - at);
        }
        return out;
      });
      const r = new MessageReader(16 * 1024 * 1024);
      const out: Buffer[] = [];
      for (let at = 0; at < whole.length; at += 16384) {
        r.push(whole.subarray(at, at + 16384));
        const m = r.next();
        if (m instanceof Buffer) out.push(m);
      }
      expect(out.length).toBe(1);
      expect(out[0]!.equals(big)).toBe(true);
      expect(allocated.bytes).toBeLessThanOrEqual(big.length + 5);
    } finally {
      alloc.mockRestore();
      concat.mockRestore();
    }
  });

  it('hands out a message that lies inside one chunk as a view of it, and a prefix split across chunks whole', () => {
    const r = new MessageReader(1024);
    const chunk = framed(Buffer.from('inside'), Buffer.from('across'));
    r.push(chunk.subarray(0, 13));
    r.push(chunk.subarray(13, 15));
    r.push(chunk.subarray(15));
    const m = r.next();
    expect(m).toBeInstanceOf(Buffer);
    expect(String(m)).toBe('inside');
    // The same memory: the chunk's ArrayBuffer at the message's offset in it (small buffers share a pool).
    const view = m as Buffer;
    expect([view.buffer, view.byteOffset]).toEqual([chunk.buffer, chunk.byteOffset + 5]);
    expect(String(r.next())).toBe('across');
    // Nothing past the end: no message, and nothing begun.
    expect(r.next()).toBeUndefined();
    expect(r.partial).toBe(false);
  });
});
