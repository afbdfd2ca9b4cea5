import { readFileSync } from 'node:fs';
import { Agent, interceptors, request, type Dispatcher } from 'undici';
import { MAX_MANIFEST_BYTES } from './manifest-files.js';

export interface HttpOptions {
  headers?: Record<string, string>;
  timeoutMs?: number;
  /** PEM file of extra CAs to trust for https. */
  caFile?: string;
  maxRedirections?: number;
}

export interface HttpResult {
  status: number;
  body: string;
  etag?: string;
  lastModified?: string;
}

const dispatchers = new Map<string, Dispatcher>();

function dispatcherFor(o: HttpOptions): Dispatcher {
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
  const timeout = o.timeoutMs ?? 10_000;
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
  const res = await request(target, {
    headers,
    dispatcher: dispatcherFor(o),
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
    return { status: 304, body: '' };
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
      throw new Error(`body is larger than ${MAX_MANIFEST_BYTES} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  const etag = header('etag');
  const lastModified = header('last-modified');
  return { status: res.statusCode, body: Buffer.concat(chunks).toString('utf8'), ...(etag ? { etag } : {}), ...(lastModified ? { lastModified } : {}) };
}
