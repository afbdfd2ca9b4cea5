import { connect } from 'node:net';

/**
 * One GET to the engine over a connection of its own, in HTTP/1.0: the engine answers whole, without
 * chunks, and closes. What the CLI's starts read most (the list of podrun's containers and an inspect
 * of each: `get` and `apply` make 21 such calls for 20 pods) costs a fraction of a request through
 * Node's HTTP client, whose module and first requests were the largest part of those commands' CPU
 * after Node's own start. Only reads (src/runtime/docker/engine.ts): anything that changes the
 * engine goes through dockerode.
 */

/** Where the engine listens: its unix socket, or a host and port spoken to without TLS. */
export type PlainTarget = { path: string } | { host: string; port: number };

export interface PlainAnswer {
  status: number;
  /** The status line's words after the code ("Not Found"). */
  reason: string;
  body: Buffer;
  /** Header values by lower-cased name (the first of a name). */
  headers: Record<string, string>;
}

/** The engine's address for plain requests, or undefined for an endpoint that needs TLS. */
export function plainTarget(endpoint: string): PlainTarget | undefined {
  if (endpoint.startsWith('unix://')) return { path: endpoint.slice('unix://'.length) };
  if (endpoint.startsWith('/')) return { path: endpoint };
  const u = new URL(endpoint.replace(/^tcp:/, 'http:'));
  if (u.protocol !== 'http:') return undefined;
  return { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || 2375) };
}

/** A failure to reach the engine, with the socket's code (ENOENT, ECONNREFUSED, ETIMEDOUT), as dockerode reports one. */
function unreachable(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/**
 * GETs `path`. Rejects with the socket's error (its `code` kept), with code ETIMEDOUT when nothing
 * arrives for `timeoutMs`, and when the answer passes `maxBytes` or is not HTTP: an endpoint that
 * streams without end must not take the process's memory.
 */
export function plainGet(target: PlainTarget, path: string, o: { maxBytes: number; timeoutMs: number; name: string }): Promise<PlainAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(target);
    const parts: Buffer[] = [];
    let size = 0;
    const fail = (err: Error): void => {
      socket.destroy();
      reject(err);
    };
    socket.setTimeout(o.timeoutMs, () => fail(unreachable('ETIMEDOUT', `no answer from ${o.name} within ${o.timeoutMs / 1000}s`)));
    socket.on('error', (err: NodeJS.ErrnoException) => fail(unreachable(err.code ?? 'ECONNRESET', err.message)));
    socket.on('data', (c: Buffer) => {
      size += c.length;
      if (size > o.maxBytes) return fail(new Error(`unexpected answer from ${o.name} (over ${o.maxBytes / 1024} KiB)`));
      parts.push(c);
    });
    socket.on('end', () => {
      socket.destroy();
      try {
        resolve(answerOf(Buffer.concat(parts)));
      } catch (err) {
        reject(new Error(`unexpected answer from ${o.name}: ${(err as Error).message}`));
      }
    });
    socket.write(`GET ${path} HTTP/1.0\r\nHost: docker\r\nAccept: application/json\r\n\r\n`);
  });
}

/** The status and body of a whole HTTP answer; throws on anything else. */
export function answerOf(raw: Buffer): PlainAnswer {
  const split = raw.indexOf('\r\n\r\n');
  if (split < 0) throw new Error('no header end');
  const [statusLine = '', ...headers] = raw.subarray(0, split).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(statusLine);
  if (!m) throw new Error(`status ${statusLine.slice(0, 80)}`);
  const body = raw.subarray(split + 4);
  // An HTTP/1.0 answer has no chunks; a proxy in between might still send them.
  const chunked = headers.some((h) => /^transfer-encoding:\s*chunked/i.test(h));
  const named: Record<string, string> = {};
  for (const h of headers) {
    const colon = h.indexOf(':');
    const name = h.slice(0, colon).trim().toLowerCase();
    if (colon > 0 && !(name in named)) named[name] = h.slice(colon + 1).trim();
  }
  return { status: Number(m[1]), reason: m[2] ?? '', body: chunked ? unchunk(body) : body, headers: named };
}

function unchunk(body: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', at);
    if (eol < 0) throw new Error('bad chunk');
    const n = parseInt(body.subarray(at, eol).toString('latin1'), 16);
    if (!Number.isFinite(n) || n < 0 || eol + 2 + n > body.length) throw new Error('bad chunk size');
    if (n === 0) return Buffer.concat(out);
    out.push(body.subarray(eol + 2, eol + 2 + n));
    at = eol + 2 + n + 2;
  }
}
