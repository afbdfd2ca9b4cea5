import { readFileSync } from 'node:fs';
import type { Dispatcher } from 'undici';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { MAX_MANIFEST_BYTES, size as sizeOf } from '../manifest/limits.js';
import { timerDelay } from '../base/duration.js';

export interface HttpOptions {
  headers?: Record<string, string>;
  timeoutMs?: number;
  /** PEM file of extra CAs to trust for https. */
  caFile?: string;
  maxRedirections?: number;
}

export interface HttpResult {
  status: number;
  /** The body as bytes (decompressed): the caller decodes it strictly, as it does files. */
  body: Buffer;
  etag?: string;
  lastModified?: string;
}

const dispatchers = new Map<string, Dispatcher>();

// The HTTP client is a megabyte of source, kept in memory as long as the process lives once loaded:
// an agent with no URL source never loads it.
type Undici = typeof import('undici');
let undici: Promise<Undici> | undefined;
// A CommonJS package: its exports object is the default export (a bundle gives nothing else).
const loadUndici = (): Promise<Undici> => (undici ??= import('undici').then((m) => (m as { default?: Undici }).default ?? m));

function dispatcherFor({ Agent, interceptors }: Undici, o: HttpOptions): Dispatcher {
  const key = `${o.caFile ?? ''}|${o.maxRedirections ?? 5}`;
  let d = dispatchers.get(key);
  if (!d) {
    const agent = new Agent(o.caFile ? { connect: { ca: readFileSync(o.caFile) } } : {});
    d = agent.compose(interceptors.redirect({ maxRedirections: o.maxRedirections ?? 5 }));
    dispatchers.set(key, d);
  }
  return d;
}

/** GETs a manifest URL with a timeout and a body cap; non-2xx (but 304) is an error. */
export async function httpGet(url: string, o: HttpOptions = {}, conditional: { etag?: string; lastModified?: string } = {}): Promise<HttpResult> {
  const timeout = timerDelay(o.timeoutMs ?? 10_000);
  const headers: Record<string, string> = { 'user-agent': 'podrun', ...(o.headers ?? {}) };
  // Credentials in the URL become basic auth (as curl does); the request line never carries them.
  const target = new URL(url);
  if (target.username || target.password) {
    const hasAuth = Object.keys(headers).some((k) => k.toLowerCase() === 'authorization');
    if (!hasAuth) headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`).toString('base64')}`;
    target.username = '';
    target.password = '';
  }
  if (conditional.etag) headers['if-none-match'] = conditional.etag;
  if (conditional.lastModified) headers['if-modified-since'] = conditional.lastModified;
  // Only what can be decoded here is offered; anything else the server sends is refused by name.
  headers['accept-encoding'] = 'gzip, deflate, br';
  const client = await loadUndici();
  const res = await client.request(target, {
    headers,
    dispatcher: dispatcherFor(client, o),
    headersTimeout: timeout,
    bodyTimeout: timeout,
    signal: AbortSignal.timeout(timeout),
  });
  const header = (name: string): string | undefined => {
    const v = res.headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  if (res.statusCode === 304) {
    await res.body.dump();
    // A 304 answers a conditional request; to a plain one it says nothing usable.
    if (!conditional.etag && !conditional.lastModified) throw new Error('HTTP 304 Not Modified to a request that was not conditional (no ETag or Last-Modified was ever sent)');
    return { status: 304, body: Buffer.alloc(0) };
  }
  if (res.statusCode >= 300 && res.statusCode < 400) {
    await res.body.dump();
    // The redirect interceptor hands back the last redirect when it gives up.
    const location = header('location');
    throw new Error(location ? `HTTP ${res.statusCode}: too many redirects (more than ${o.maxRedirections ?? 5}; a redirect loop?), last to ${location}` : `HTTP ${res.statusCode} redirect without a Location header`);
  }
  if (res.statusCode < 200 || res.statusCode > 299) {
    await res.body.dump();
    throw new Error(`HTTP ${res.statusCode}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += (chunk as Buffer).length;
    if (size > MAX_MANIFEST_BYTES) {
      res.body.destroy();
      throw new Error(`body is larger than ${sizeOf(MAX_MANIFEST_BYTES)}`);
    }
    chunks.push(chunk as Buffer);
  }
  const etag = header('etag');
  const lastModified = header('last-modified');
  return { status: res.statusCode, body: decompress(Buffer.concat(chunks), header('content-encoding')), ...(etag ? { etag } : {}), ...(lastModified ? { lastModified } : {}) };
}

/** Undoes a Content-Encoding, with the decompressed size capped as the raw one is. */
function decompress(body: Buffer, encoding: string | undefined): Buffer {
  const enc = (encoding ?? 'identity').trim().toLowerCase();
  const opts = { maxOutputLength: MAX_MANIFEST_BYTES };
  try {
    if (enc === 'identity' || enc === '') return body;
    if (enc === 'gzip' || enc === 'x-gzip') return gunzipSync(body, opts);
    if (enc === 'deflate') return inflateSync(body, opts);
    if (enc === 'br') return brotliDecompressSync(body, opts);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new Error(e.code === 'ERR_BUFFER_TOO_LARGE' ? `body is larger than ${sizeOf(MAX_MANIFEST_BYTES)} once decompressed (${enc})` : `cannot decode the ${enc} body: ${e.message}`);
  }
  throw new Error(`unsupported Content-Encoding "${enc}" (podrun accepts gzip, deflate, br)`);
}
