import { readFileSync } from 'node:fs';
import type { Dispatcher } from 'undici';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { MAX_MANIFEST_BYTES, size as sizeOf } from '../manifest/limits.js';
import { formatDuration, timerDelay } from '../base/duration.js';

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
  /** The response's Date: what a Last-Modified is judged by (validators.ts). */
  date?: string;
  /** Every URL asked, in order: the first is the one given, the last the one that answered. */
  urls: string[];
}

/** How long a connection may take, within the whole fetch's timeout (undici's own default). */
export const CONNECT_TIMEOUT_MS = 10_000;

type Phase = 'connect' | 'headers' | 'body';
/** Where one request is, so a timeout can say what it ended; carried in the dispatch options. */
interface Trace {
  phase: Phase;
  origin: string;
}
type TracedOptions = Dispatcher.DispatchOptions & { podrunTrace?: Trace };

/**
 * Marks each hop's progress in its trace: connecting until the request is written on a socket,
 * then waiting for headers, then reading the body. Placed under the redirect interceptor, so a
 * redirect starts the next hop's connect.
 */
function traced(dispatch: Dispatcher['dispatch']): Dispatcher['dispatch'] {
  return (opts: TracedOptions, handler) => {
    const trace = opts.podrunTrace;
    if (!trace) return dispatch(opts, handler);
    trace.phase = 'connect';
    trace.origin = String(opts.origin ?? '');
    return dispatch(opts, {
      onRequestStart: (c, ctx: unknown) => {
        trace.phase = 'headers';
        handler.onRequestStart?.(c, ctx);
      },
      onRequestUpgrade: (c, status, headers, socket) => handler.onRequestUpgrade?.(c, status, headers, socket),
      onResponseStart: (c, status, headers, message) => {
        trace.phase = 'body';
        handler.onResponseStart?.(c, status, headers, message);
      },
      onResponseData: (c, chunk) => handler.onResponseData?.(c, chunk),
      onResponseEnd: (c, trailers) => handler.onResponseEnd?.(c, trailers),
      onResponseError: (c, err) => handler.onResponseError?.(c, err),
    });
  };
}

const dispatchers = new Map<string, Dispatcher>();

// The HTTP client is a megabyte of source, kept in memory as long as the process lives once loaded:
// an agent with no URL source never loads it.
type Undici = typeof import('undici');
let undici: Promise<Undici> | undefined;
// A CommonJS package: its exports object is the default export (a bundle gives nothing else).
const loadUndici = (): Promise<Undici> => (undici ??= import('undici').then((m) => (m as { default?: Undici }).default ?? m));

function connectTimeout(o: HttpOptions): number {
  return Math.min(timerDelay(o.timeoutMs ?? 10_000), CONNECT_TIMEOUT_MS);
}

function dispatcherFor({ Agent, interceptors }: Undici, o: HttpOptions): Dispatcher {
  // A connection in progress outlives an aborted request (undici waits for its connect timeout):
  // no longer than the whole fetch may take, then.
  const connectMs = connectTimeout(o);
  const key = `${o.caFile ?? ''}|${o.maxRedirections ?? 5}|${connectMs}`;
  let d = dispatchers.get(key);
  if (!d) {
    const agent = new Agent({ connect: { timeout: connectMs, ...(o.caFile ? { ca: readFileSync(o.caFile) } : {}) } });
    d = agent.compose(traced, interceptors.redirect({ maxRedirections: o.maxRedirections ?? 5 }));
    dispatchers.set(key, d);
  }
  return d;
}

/**
 * GETs a manifest URL with a timeout and a body cap; non-2xx (but 304) is an error. The timeout
 * (`timeoutMs`, 10 s as the kubelet's client) bounds the whole fetch, redirects included; a
 * connection also has CONNECT_TIMEOUT_MS. A timeout names itself, its value and what it ended.
 */
export async function httpGet(url: string, o: HttpOptions = {}, conditional: { etag?: string; lastModified?: string } = {}): Promise<HttpResult> {
  const timeoutMs = o.timeoutMs ?? 10_000;
  const trace: Trace = { phase: 'connect', origin: new URL(url).origin };
  const got = { bytes: 0 };
  const controller = new AbortController();
  let expired = false;
  let timer: NodeJS.Timeout | undefined;
  // The deadline holds whatever undici does with the abort (a connect in progress ignores it).
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      expired = true;
      controller.abort(new Error('timeout'));
      reject(new Error('timeout'));
    }, timerDelay(timeoutMs));
    timer.unref();
  });
  const fetching = fetchOnce(url, o, conditional, { trace, got, signal: controller.signal });
  fetching.catch(() => undefined); // when the deadline won, its rejection comes later
  try {
    return await Promise.race([fetching, deadline]);
  } catch (err) {
    throw timeoutError(err, expired, trace, timeoutMs, connectTimeout(o), got.bytes) ?? err;
  } finally {
    clearTimeout(timer);
  }
}

/** Which timeout ended a fetch, with its value; undefined when none did. */
function timeoutError(err: unknown, expired: boolean, trace: Trace, timeoutMs: number, connectMs: number, bytes: number): Error | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  const read = bytes ? `, ${bytes} bytes of the body read` : '';
  if (expired) {
    const doing =
      trace.phase === 'connect'
        ? `connecting to ${trace.origin}`
        : trace.phase === 'headers'
          ? `waiting for the response headers from ${trace.origin}`
          : `reading the body from ${trace.origin}${read}`;
    return new Error(`total timeout (${formatDuration(timeoutMs)} for the whole fetch) ran out while ${doing}`);
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return new Error(`connect timeout (${formatDuration(connectMs)}): no connection to ${trace.origin}`);
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return new Error(`headers timeout (${formatDuration(timeoutMs)}): ${trace.origin} sent no response headers`);
  if (code === 'UND_ERR_BODY_TIMEOUT') return new Error(`body timeout (${formatDuration(timeoutMs)} without data) from ${trace.origin}${read}`);
  return undefined;
}

async function fetchOnce(
  url: string,
  o: HttpOptions,
  conditional: { etag?: string; lastModified?: string },
  t: { trace: Trace; got: { bytes: number }; signal: AbortSignal },
): Promise<HttpResult> {
  const timeout = timerDelay(o.timeoutMs ?? 10_000);
  const headers: Record<string, string> = { 'user-agent': 'podrun', ...(o.headers ?? {}) };
  // Credentials in the URL become basic auth (as curl does); the request line never carries them.
  const target = new URL(url);
  if (target.username || target.password) {
    const hasAuth = Object.keys(headers).some((k) => k.toLowerCase() === 'authorization');
    if (!hasAuth)
      headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`).toString('base64')}`;
    target.username = '';
    target.password = '';
  }
  if (conditional.etag) headers['if-none-match'] = conditional.etag;
  if (conditional.lastModified) headers['if-modified-since'] = conditional.lastModified;
  // Only what can be decoded here is offered; anything else the server sends is refused by name.
  headers['accept-encoding'] = 'gzip, deflate, br';
  const client = await loadUndici();
  // The trace rides in the options, which the redirect interceptor copies into every hop.
  const options = { headers, dispatcher: dispatcherFor(client, o), headersTimeout: timeout, bodyTimeout: timeout, signal: t.signal, podrunTrace: t.trace };
  const res = await client.request(target, options);
  const header = (name: string): string | undefined => {
    const v = res.headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const history = (res.context as { history?: URL[] } | undefined)?.history;
  const urls = history?.length ? history.map((u) => u.href) : [target.href];
  if (res.statusCode === 304) {
    await res.body.dump();
    // A 304 answers a conditional request; to a plain one it says nothing usable.
    if (!conditional.etag && !conditional.lastModified)
      throw new Error('HTTP 304 Not Modified to a request that was not conditional (no ETag or Last-Modified was ever sent)');
    return { status: 304, body: Buffer.alloc(0), urls };
  }
  if (res.statusCode >= 300 && res.statusCode < 400) {
    await res.body.dump();
    // The redirect interceptor hands back the last redirect when it gives up.
    const location = header('location');
    throw new Error(
      location
        ? `HTTP ${res.statusCode}: too many redirects (more than ${o.maxRedirections ?? 5}; a redirect loop?), last to ${location}`
        : `HTTP ${res.statusCode} redirect without a Location header`,
    );
  }
  if (res.statusCode < 200 || res.statusCode > 299) {
    await res.body.dump();
    throw new Error(`HTTP ${res.statusCode}`);
  }
  const chunks: Buffer[] = [];
  for await (const chunk of res.body) {
    t.got.bytes += (chunk as Buffer).length;
    if (t.got.bytes > MAX_MANIFEST_BYTES) {
      res.body.destroy();
      throw new Error(`body is larger than ${sizeOf(MAX_MANIFEST_BYTES)}`);
    }
    chunks.push(chunk as Buffer);
  }
  const etag = header('etag');
  const lastModified = header('last-modified');
  const date = header('date');
  return {
    status: res.statusCode,
    body: decompress(Buffer.concat(chunks), header('content-encoding')),
    urls,
    ...(etag ? { etag } : {}),
    ...(lastModified ? { lastModified } : {}),
    ...(date ? { date } : {}),
  };
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
    throw new Error(
      e.code === 'ERR_BUFFER_TOO_LARGE'
        ? `body is larger than ${sizeOf(MAX_MANIFEST_BYTES)} once decompressed (${enc})`
        : `cannot decode the ${enc} body: ${e.message}`,
    );
  }
  throw new Error(`unsupported Content-Encoding "${enc}" (podrun accepts gzip, deflate, br)`);
}
