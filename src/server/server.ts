import type { Logger } from '../log/logger.js';
import { chmodSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { PodEvent } from '../status/events.js';
import { MAX_MANIFEST_BYTES, size } from '../manifest/limits.js';
import { applyAskProblem } from './apply-ask.js';
import { bearerMatches } from './http-token.js';
import { agentSocketPath, type ApplyAnswer, type ApplyAsk, type DeleteAnswer, type DeleteAsk, type PullAnswer, type PullAsk } from './client.js';

/**
 * Limits on the agent's endpoints: a request's headers within 10 s and the whole request within
 * 30 s (checked every second), at most 256 connections per listener. Node's defaults (60 s, 5 min,
 * checked every 30 s, no cap) let a slow or idle client hold fds for minutes.
 */
const MAX_CONNECTIONS = 256;
const SERVER_OPTIONS = { headersTimeout: 10_000, requestTimeout: 30_000, connectionsCheckingInterval: 1_000 } as const;

/** What the HTTP API serves; the agent implements it. */
export interface AgentView {
  healthy(): boolean;
  /** Why /healthz fails (undefined: it does not). */
  unhealthy(): string | undefined;
  podList(): Promise<Record<string, unknown>[]>;
  events(uid?: string): PodEvent[];
  metrics(): Promise<{ contentType: string; text: string }>;
  containerMetrics(kind: 'cadvisor' | 'resource' | 'probes'): Promise<{ contentType: string; text: string }>;
  node(): Promise<Record<string, unknown>>;
  statsSummary(): Promise<unknown>;
  collect(dryRun: boolean): Promise<unknown>;
  collectImages(dryRun: boolean): Promise<unknown>;
  /** `podrun delete`, asked of the agent: answered once every pod is gone. */
  deletePods(ask: DeleteAsk): Promise<DeleteAnswer>;
  /** `podrun pull`, asked of the agent. */
  pullImages(ask: PullAsk): Promise<PullAnswer>;
  /** `podrun apply`, asked of the agent: the set recorded and merged (unless a dry run), answered with the plan. */
  applyPods(ask: ApplyAsk): Promise<ApplyAnswer>;
}

/** What only the socket serves, never the TCP port, token or not: the verbs that change pods. */
const SOCKET_ONLY: ReadonlySet<string> = new Set(['/pods/delete', '/images/pull', '/pods/apply']);

/** A question's body is a list of pods: far under this. */
const MAX_BODY = 1 << 20;

/** An apply's body holds the pods themselves: a set of them is kept to what a file of manifests may be (the record the agent reads back is one). */
const MAX_APPLY_BODY = MAX_MANIFEST_BYTES;

/** A request body as JSON, or why not: too large (the rest is read and dropped, so the answer reaches the client) or not JSON. */
type Body = { ok: true; value: unknown } | { ok: false; status: 400 | 413; message: string };

function readJson(req: IncomingMessage, limit: number): Promise<Body> {
  const tooLarge: Body = { ok: false, status: 413, message: `request body over ${size(limit)}` };
  if (Number(req.headers['content-length'] ?? 0) > limit) {
    req.resume();
    return Promise.resolve(tooLarge);
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on('data', (c: Buffer) => {
      bytes += c.length;
      if (bytes <= limit) chunks.push(c);
      else {
        // Answered now; what follows is read and dropped.
        chunks.length = 0;
        resolve(tooLarge);
      }
    });
    req.on('error', () => resolve({ ok: false, status: 400, message: 'the request was cut off' }));
    req.on('end', () => {
      if (bytes > limit) return resolve(tooLarge);
      try {
        resolve({ ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      } catch {
        resolve({ ok: false, status: 400, message: 'the body is not JSON' });
      }
    });
  });
}

const POLICIES: ReadonlySet<unknown> = new Set(['Always', 'IfNotPresent', 'Never']);

function isPullAsk(v: unknown): v is PullAsk {
  const a = v as Partial<PullAsk> | undefined;
  return typeof a === 'object' && a !== null && Array.isArray(a.images) && a.images.every((i) => typeof i?.image === 'string' && POLICIES.has(i.policy));
}

function isDeleteAsk(v: unknown): v is DeleteAsk {
  const a = v as Partial<DeleteAsk> | undefined;
  return (
    typeof a === 'object' &&
    a !== null &&
    Array.isArray(a.pods) &&
    a.pods.every(
      (p) =>
        typeof p?.uid === 'string' &&
        typeof p.key === 'string' &&
        (p.ids === undefined || (Array.isArray(p.ids) && p.ids.every((id) => typeof id === 'string'))) &&
        (p.sandboxIds === undefined || (Array.isArray(p.sandboxIds) && p.sandboxIds.every((id) => typeof id === 'string'))),
    ) &&
    (a.override === undefined || (Number.isInteger(a.override) && a.override >= 0))
  );
}

export { agentSocketPath };

function loopbackHost(host: string | undefined, port: number): boolean {
  return ['127.0.0.1', 'localhost', '[::1]'].some((h) => host === `${h}:${port}`);
}

/**
 * What the TCP port serves to anyone: what a scraper or a health check needs, and nothing that
 * carries a pod's spec, env, probe output or events. An allowlist, on the same parsed path the
 * handler routes by, so no spelling of a path reaches a handler it was not checked for.
 */
const PUBLIC_PATHS: ReadonlySet<string> = new Set([
  '/healthz',
  '/metrics',
  '/metrics/cadvisor',
  '/metrics/resource',
  '/metrics/probes',
  '/stats/summary',
  '/node',
]);

/** The request's URL; undefined for one URL cannot parse (an absolute form such as `http://[`), which would otherwise throw out of the request handler. */
function parseUrl(req: IncomingMessage): URL | undefined {
  try {
    return new URL(req.url ?? '/', 'http://podrun');
  } catch {
    return undefined;
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === 'string' ? body : `${JSON.stringify(body)}\n`;
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' }).end(text);
}

/**
 * The kubelet's read-only endpoints, kept small: /healthz, /pods (a v1 PodList with status),
 * /events, /stats/summary, /metrics and the container metrics (/metrics/cadvisor, /resource,
 * /probes). Served on a unix socket in the state directory (what the CLI uses) and, when asked,
 * on 127.0.0.1:port.
 */
export async function startServer(
  view: AgentView,
  o: { stateDir: string; port?: number; token?: string; tokenFile?: string; log?: Logger },
): Promise<() => Promise<void>> {
  const handler = (req: IncomingMessage, res: ServerResponse, url: URL): void => {
    if (SOCKET_ONLY.has(url.pathname)) {
      if (req.method !== 'POST') return send(res, 405, 'method not allowed\n');
      // Answered once the pods are gone or the pulls done (grace periods, downloads): no idle timeout meanwhile.
      req.socket.setTimeout(0);
      readJson(req, url.pathname === '/pods/apply' ? MAX_APPLY_BODY : MAX_BODY).then(
        (body) => {
          if (!body.ok) return send(res, body.status, `bad request: ${body.message}\n`);
          const answered = <T>(answer: Promise<T>, status: (body: T) => number = () => 200): void =>
            void answer.then(
              (b) => send(res, status(b), b),
              (err: unknown) => send(res, 500, `${(err as Error).message}\n`),
            );
          const ask = body.value;
          if (url.pathname === '/pods/apply') {
            const problem = applyAskProblem(ask);
            if (problem) return send(res, 400, `bad request: ${problem}\n`);
            // A set the agent will not take (a pod invalid, or refused by its node's policy) is no fault of the request's form.
            return answered(view.applyPods(ask as ApplyAsk), (a) => (a.refused ? 422 : 200));
          }
          if (url.pathname === '/images/pull')
            return isPullAsk(ask) ? answered(view.pullImages(ask)) : send(res, 400, 'bad request: expected {"images": [{"image", "policy"}]}\n');
          return isDeleteAsk(ask) ? answered(view.deletePods(ask)) : send(res, 400, 'bad request: expected {"pods": [{"uid", "key"}], "override"?}\n');
        },
        () => send(res, 400, 'bad request\n'),
      );
      return;
    }
    if (url.pathname === '/gc') {
      // GET shows what would go; POST collects.
      if (req.method !== 'GET' && req.method !== 'POST') return send(res, 405, 'method not allowed\n');
      const dryRun = req.method === 'GET';
      Promise.all([view.collect(dryRun), url.searchParams.get('images') === 'false' ? undefined : view.collectImages(dryRun)]).then(
        ([containers, images]) => send(res, 200, { dryRun, containers, images }),
        (err: unknown) => send(res, 500, `${(err as Error).message}\n`),
      );
      return;
    }
    if (req.method !== 'GET') return send(res, 405, 'method not allowed\n');
    const endpoint = /^\/metrics\/(cadvisor|resource|probes)$/.exec(url.pathname)?.[1] as 'cadvisor' | 'resource' | 'probes' | undefined;
    if (url.pathname === '/metrics' || endpoint) {
      (endpoint ? view.containerMetrics(endpoint) : view.metrics()).then(
        (m) => res.writeHead(200, { 'content-type': m.contentType }).end(m.text),
        (err: unknown) => send(res, 500, `${(err as Error).message}\n`),
      );
      return;
    }
    if (url.pathname === '/healthz') {
      const problem = view.unhealthy();
      return problem === undefined ? send(res, 200, 'ok') : send(res, 503, `${problem}\n`);
    }
    // What the cache holds while the engine is away is history, not status, and readings of it
    // are none (the kubelet's summary fails without its runtime): say why instead.
    if ((url.pathname === '/pods' || url.pathname === '/stats/summary') && !view.healthy())
      return send(res, 503, `${view.unhealthy() ?? 'engine unreachable'}\n`);
    if (url.pathname === '/pods') {
      view.podList().then(
        (items) => send(res, 200, { apiVersion: 'v1', kind: 'PodList', metadata: {}, items }),
        (err: unknown) => send(res, 500, `${(err as Error).message}\n`),
      );
      return;
    }
    if (url.pathname === '/node' || url.pathname === '/stats/summary') {
      (url.pathname === '/node' ? view.node() : view.statsSummary()).then(
        (body) => send(res, 200, body),
        (err: unknown) => send(res, 500, `${(err as Error).message}\n`),
      );
      return;
    }
    if (url.pathname === '/events')
      return send(res, 200, { apiVersion: 'v1', kind: 'EventList', items: view.events(url.searchParams.get('uid') ?? undefined) });
    send(res, 404, 'not found\n');
  };
  const route = (req: IncomingMessage, res: ServerResponse): void => {
    const url = parseUrl(req);
    return url ? handler(req, res, url) : send(res, 400, 'bad request: invalid URL\n');
  };
  const servers: Server[] = [];
  /** A client that opens connections and never finishes them costs the agent a bounded number of fds, for a bounded time. */
  const bounded = (server: Server): Server => {
    server.maxConnections = MAX_CONNECTIONS;
    server.keepAliveTimeout = 5_000;
    // A socket idle this long is destroyed, also one answered 408 whose client never closes its end.
    server.timeout = 15_000;
    return server;
  };
  const socket = agentSocketPath(o.stateDir);
  rmSync(socket, { force: true });
  const unix = bounded(createServer(SERVER_OPTIONS, route));
  // The socket is for root (the state dir is 0700); the TCP port is for any local process and any
  // host-network pod, and a browser page can reach it too (DNS rebinding): only requests that
  // name the loopback address as their Host; without the bearer token, only the public paths,
  // read-only. A browser cannot send an Authorization header to another origin without a CORS
  // preflight this server never grants, so the token also keeps web pages from POST /gc.
  const tcpHandler = (req: IncomingMessage, res: ServerResponse): void => {
    if (!loopbackHost(req.headers.host, o.port ?? 0)) return send(res, 403, 'forbidden: Host must be 127.0.0.1, localhost or [::1] with this port\n');
    const url = parseUrl(req);
    if (!url) return send(res, 400, 'bad request: invalid URL\n');
    // A wrong token is refused even on a public path, so a misconfigured client hears of it.
    const authorized = o.token !== undefined && bearerMatches(req.headers.authorization, o.token);
    if (!authorized && (req.headers.authorization !== undefined || !PUBLIC_PATHS.has(url.pathname))) {
      res.setHeader('www-authenticate', 'Bearer realm="podrun"');
      return send(res, 401, "unauthorized: this path needs Authorization: Bearer <the token in the agent's --http-token-file>\n");
    }
    // Asked without the token, a socket-only path answers as every other guarded one (401, above):
    // the port tells nobody unauthenticated which paths exist. With it, it is refused here.
    if (SOCKET_ONLY.has(url.pathname)) return send(res, 403, "forbidden: only on the agent's socket\n");
    if (!authorized && req.method !== 'GET') return send(res, 405, 'method not allowed: without the token the TCP port is read-only\n');
    handler(req, res, url);
  };
  await new Promise<void>((resolve, reject) => unix.listen(socket, resolve).once('error', reject));
  // Under the 0700 state directory already; 0600 too, so a state directory opened by mistake does not open the API.
  chmodSync(socket, 0o600);
  servers.push(unix);
  if (o.port) {
    const tcp = bounded(createServer(SERVER_OPTIONS, tcpHandler));
    await new Promise<void>((resolve, reject) => tcp.listen(o.port, '127.0.0.1', resolve).once('error', reject));
    servers.push(tcp);
    o.log?.info(
      `serving ${[...PUBLIC_PATHS].join(', ')} on 127.0.0.1:${o.port}; /pods, /events and /gc there need the bearer token in ${o.tokenFile ?? '(none: refused)'}`,
    );
  }
  return async () => {
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
    rmSync(socket, { force: true });
  };
}
