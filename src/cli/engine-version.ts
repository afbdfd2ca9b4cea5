import { connect } from 'node:net';

/** The most of an answer read: /version is about 1 KiB; an endpoint that streams more is not an engine. */
const MAX_ANSWER = 64 * 1024;

/**
 * The engine's version from one plain GET /version: `podrun version` should not pay for loading
 * the whole engine client to print two strings, nor Node's HTTP client (its first request costs
 * more than the engine takes to answer). HTTP/1.0, so the engine closes the connection after its
 * one answer and sends it whole, without chunks.
 */
export function engineVersion(endpoint: string, timeoutMs = 5000): Promise<{ version: string; apiVersion: string }> {
  const target = endpoint.startsWith('unix://') ? { path: endpoint.slice('unix://'.length) } : endpoint.startsWith('/') ? { path: endpoint } : (() => {
    const u = new URL(endpoint.replace(/^tcp:/, 'http:'));
    return { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || 2375) };
  })();
  return new Promise((resolve, reject) => {
    const socket = connect(target);
    const parts: Buffer[] = [];
    let size = 0;
    const fail = (err: Error): void => {
      socket.destroy();
      reject(err);
    };
    socket.setTimeout(timeoutMs, () => fail(new Error(`no answer from ${endpoint} within ${timeoutMs / 1000}s`)));
    socket.on('error', (err: NodeJS.ErrnoException) => fail(new Error(err.code ?? err.message)));
    socket.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_ANSWER) return fail(new Error(`unexpected answer from ${endpoint}/version (over ${MAX_ANSWER / 1024} KiB)`));
      parts.push(c);
    });
    socket.on('end', () => {
      socket.destroy();
      try {
        resolve(versionOf(Buffer.concat(parts)));
      } catch {
        reject(new Error(`unexpected answer from ${endpoint}/version`));
      }
    });
    socket.write('GET /version HTTP/1.0\r\nHost: docker\r\nAccept: application/json\r\n\r\n');
  });
}

/** The two strings from an HTTP answer to GET /version; throws on anything else. */
export function versionOf(raw: Buffer): { version: string; apiVersion: string } {
  // One byte a character, so that chunk sizes count bytes; the body is decoded as UTF-8 at the end.
  const answer = raw.toString('latin1');
  const split = answer.indexOf('\r\n\r\n');
  if (split < 0) throw new Error('no header end');
  const [status = '', ...headers] = answer.slice(0, split).split('\r\n');
  if (!/^HTTP\/1\.[01] 200 /.test(status)) throw new Error(`status ${status}`);
  let body = answer.slice(split + 4);
  // An HTTP/1.0 answer has no chunks; a proxy in between might still send them.
  if (headers.some((h) => /^transfer-encoding:\s*chunked/i.test(h))) body = unchunk(body);
  const v = JSON.parse(Buffer.from(body, 'latin1').toString('utf8')) as { Version?: unknown; ApiVersion?: unknown };
  const str = (x: unknown): string => (typeof x === 'string' ? x : '?');
  return { version: str(v.Version), apiVersion: str(v.ApiVersion) };
}

function unchunk(body: string): string {
  let out = '';
  let at = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', at);
    if (eol < 0) throw new Error('bad chunk');
    const n = parseInt(body.slice(at, eol), 16);
    if (!Number.isFinite(n)) throw new Error('bad chunk size');
    if (n === 0) return out;
    out += body.slice(eol + 2, eol + 2 + n);
    at = eol + 2 + n + 2;
  }
}
