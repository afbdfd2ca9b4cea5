import type { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import type { Container, ExecAction, GRPCAction, HTTPGetAction, IntOrString, TCPSocketAction } from '../manifest/types.js';
import type { ExecResult } from '../runtime/runtime-types.js';

// The probe and hook handlers, run by podrun itself from the host: nothing is needed inside the
// image but what an exec handler names. Results follow pkg/probe: success, failure, or an error.

export type ProbeResult = { ok: true; message?: string } | { ok: false; message: string };

/** Runs a command in a container and gives its exit code; podrun's runtime implements it. */
export type ExecRunner = (containerId: string, command: string[], timeoutMs: number, signal?: AbortSignal) => Promise<ExecResult>;

export interface HandlerContext {
  containerId: string;
  container: Container;
  /** Where httpGet/tcpSocket/grpc go when the handler names no host. */
  defaultHost: string;
  timeoutMs: number;
  exec: ExecRunner;
  /** Ends a hook early (its pod is being deleted): it is let go, and what it holds released. */
  signal?: AbortSignal;
}

export const PROBE_USER_AGENT = 'kube-probe/1.31 (podrun)';

export function resolvePort(port: IntOrString, c: Container): number | undefined {
  if (typeof port === 'number') return port;
  if (/^[0-9]+$/.test(port)) return Number(port);
  return c.ports?.find((p) => p.name === port)?.containerPort;
}

export async function execHandler(a: ExecAction, ctx: HandlerContext): Promise<ProbeResult> {
  const r = await ctx.exec(ctx.containerId, a.command, ctx.timeoutMs, ctx.signal);
  if (r === 'timeout') return { ok: false, message: `command timed out after ${ctx.timeoutMs / 1000}s` };
  // The container stopped before the command could run: that says nothing of its health (the
  // kubelet throws such a result away).
  if ('notRun' in r) throw new Error(`cannot run the command: ${r.detail.slice(0, 200)}`);
  if (r.exitCode === 0) return { ok: true };
  const out = r.output.trim();
  return { ok: false, message: `command exited with ${r.exitCode}${out ? `: ${out.slice(0, 200)}` : ''}` };
}

/** The kubelet reads at most this much of a probe's body (pkg/probe/http: maxRespBodyLength). */
export const MAX_PROBE_BODY = 10 * 1024;

interface ProbeResponse {
  status: number;
  location?: string;
}

/**
 * One GET, bounded as the kubelet's client is (http.Client{Timeout}): the deadline covers the
 * connect, the headers and the body, however slowly a server dribbles them; the body is read up
 * to 10 KiB, then the connection is closed, so an endless body costs one bounded read.
 */
function oneRequest(url: URL, headers: Record<string, string>, timeoutMs: number, signal?: AbortSignal): Promise<ProbeResponse> {
  // Node's HTTP, TLS and HTTP/2 stacks load when a probe first needs them: `podrun apply` reaches
  // this module through its wait, and most pods have no HTTP probe at all.
  const send = process.getBuiltinModule(url.protocol === 'https:' ? 'node:https' : 'node:http').request;
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (r: ProbeResponse | Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      if (r instanceof Error) reject(r);
      else resolve(r);
    };
    const req = send(url, { method: 'GET', headers, agent: false, rejectUnauthorized: false, ...(signal ? { signal } : {}) }, (res: IncomingMessage) => {
      let size = 0;
      const done = (): void => finish({ status: res.statusCode ?? 0, ...(res.headers.location ? { location: res.headers.location } : {}) });
      res.on('data', (c: Buffer) => {
        size += c.length;
        // The rest is not read: the kubelet's truncation is not a failure, the status decides.
        if (size >= MAX_PROBE_BODY) done();
      });
      res.on('end', done);
      res.on('error', (err) => finish(err));
      res.on('aborted', () => finish(new Error('the server closed the connection mid-body')));
    });
    const timer = setTimeout(() => finish(new Error(`context deadline exceeded (Client.Timeout exceeded after ${timeoutMs / 1000}s)`)), timeoutMs);
    req.on('error', (err) => finish(err));
    req.end();
  });
}

export async function httpGetHandler(a: HTTPGetAction, ctx: HandlerContext): Promise<ProbeResult> {
  const port = resolvePort(a.port, ctx.container);
  if (!port) return { ok: false, message: `port ${String(a.port)} not found` };
  const host = a.host || ctx.defaultHost;
  const scheme = (a.scheme ?? 'HTTP').toLowerCase();
  const path = a.path ?? '/';
  let url = new URL(`${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}${path.startsWith('/') ? path : `/${path}`}`);
  const headers: Record<string, string> = { 'user-agent': PROBE_USER_AGENT, accept: '*/*', connection: 'close' };
  for (const h of a.httpHeaders ?? []) headers[h.name.toLowerCase()] = h.value;
  const deadline = Date.now() + ctx.timeoutMs;
  try {
    // Redirects are followed to the same host only, at most 10, as the kubelet does.
    for (let hop = 0; hop <= 10; hop++) {
      const res = await oneRequest(url, headers, Math.max(1, deadline - Date.now()), ctx.signal);
      const { status, location } = res;
      if (status >= 300 && status < 400 && location) {
        const next = new URL(location, url);
        if (next.hostname !== url.hostname) return { ok: true, message: `redirect to another host (${next.host}) counts as success` };
        url = next;
        continue;
      }
      if (status >= 200 && status < 400) return { ok: true };
      return { ok: false, message: `HTTP probe failed with statuscode: ${status}` };
    }
    return { ok: false, message: 'too many redirects' };
  } catch (err) {
    return { ok: false, message: `Get "${url.href}": ${(err as Error).message}` };
  }
}

export function tcpHandler(a: TCPSocketAction, ctx: HandlerContext): Promise<ProbeResult> {
  const port = resolvePort(a.port, ctx.container);
  if (!port) return Promise.resolve({ ok: false, message: `port ${String(a.port)} not found` });
  const host = a.host || ctx.defaultHost;
  return new Promise((resolve) => {
    const s = new Socket();
    const done = (r: ProbeResult): void => {
      s.destroy();
      resolve(r);
    };
    s.setTimeout(ctx.timeoutMs, () => done({ ok: false, message: `dial tcp ${host}:${port}: i/o timeout` }));
    s.once('error', (err) => done({ ok: false, message: `dial tcp ${host}:${port}: ${err.message}` }));
    s.connect(port, host, () => done({ ok: true }));
  });
}

/** A HealthCheckRequest{service} as protobuf, in a gRPC frame. */
function grpcRequestFrame(service: string): Buffer {
  const svc = Buffer.from(service, 'utf8');
  const msg = svc.length ? Buffer.concat([Buffer.from([0x0a, svc.length]), svc]) : Buffer.alloc(0);
  const header = Buffer.alloc(5);
  header.writeUInt8(0, 0);
  header.writeUInt32BE(msg.length, 1);
  return Buffer.concat([header, msg]);
}

/** Reads HealthCheckResponse.status (field 1, varint) from a gRPC frame; 1 = SERVING. */
export function grpcStatusOf(frame: Buffer): number | undefined {
  if (frame.length < 5) return undefined;
  const len = frame.readUInt32BE(1);
  const msg = frame.subarray(5, 5 + len);
  if (msg.length === 0) return 0;
  return msg[0] === 0x08 ? msg[1] : undefined;
}

export function grpcHandler(a: GRPCAction, ctx: HandlerContext): Promise<ProbeResult> {
  const target = `http://${ctx.defaultHost.includes(':') ? `[${ctx.defaultHost}]` : ctx.defaultHost}:${a.port}`;
  return new Promise((resolve) => {
    let settled = false;
    const client = process.getBuiltinModule('node:http2').connect(target);
    const finish = (r: ProbeResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      client.close();
      client.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish({ ok: false, message: `gRPC health check timed out after ${ctx.timeoutMs / 1000}s` }), ctx.timeoutMs);
    client.on('error', (err) => finish({ ok: false, message: `gRPC connect to ${target}: ${err.message}` }));
    const req = client.request({
      ':method': 'POST',
      ':path': '/grpc.health.v1.Health/Check',
      'content-type': 'application/grpc',
      te: 'trailers',
      'user-agent': PROBE_USER_AGENT,
    });
    const chunks: Buffer[] = [];
    let grpcStatus: string | undefined;
    req.on('response', (h) => {
      if (h['grpc-status'] !== undefined) grpcStatus = String(h['grpc-status']);
    });
    req.on('trailers', (t) => {
      if (t['grpc-status'] !== undefined) grpcStatus = String(t['grpc-status']);
    });
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', (err) => finish({ ok: false, message: `gRPC health check: ${err.message}` }));
    req.on('end', () => {
      if (grpcStatus && grpcStatus !== '0') return finish({ ok: false, message: `gRPC health check failed with grpc-status ${grpcStatus}` });
      const status = grpcStatusOf(Buffer.concat(chunks));
      finish(
        status === 1
          ? { ok: true }
          : { ok: false, message: `service unhealthy (responded with "${['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'][status ?? 0] ?? status}")` },
      );
    });
    req.end(grpcRequestFrame(a.service ?? ''));
  });
}

/**
 * Runs a lifecycle hook. The API still accepts a tcpSocket hook (deprecated), but the kubelet's
 * hook runner (pkg/kubelet/lifecycle/handlers.go) has no case for it and fails it: so does podrun.
 */
export async function runHook(h: Parameters<typeof runHandler>[0], ctx: HandlerContext): Promise<ProbeResult> {
  if (h.tcpSocket) return { ok: false, message: 'invalid handler: tcpSocket (hooks run exec, httpGet or sleep)' };
  const signal = ctx.signal;
  if (!signal) return runHandler(h, ctx);
  // A hook that never returns must not hold its pod's deletion: the kubelet cancels the sync's
  // context when a pod is to be terminated, and the hook with it.
  const cancelled: ProbeResult = { ok: false, message: 'cancelled: the pod is being deleted' };
  if (signal.aborted) return cancelled;
  return new Promise((resolve, reject) => {
    const abort = (): void => resolve(cancelled);
    signal.addEventListener('abort', abort, { once: true });
    runHandler(h, ctx).then(
      (r) => {
        signal.removeEventListener('abort', abort);
        resolve(r);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

/** Runs whichever handler the probe or hook has. */
export async function runHandler(
  h: { exec?: ExecAction; httpGet?: HTTPGetAction; tcpSocket?: TCPSocketAction; grpc?: GRPCAction; sleep?: { seconds: number } },
  ctx: HandlerContext,
): Promise<ProbeResult> {
  if (h.exec) return execHandler(h.exec, ctx);
  if (h.httpGet) return httpGetHandler(h.httpGet, ctx);
  if (h.tcpSocket) return tcpHandler(h.tcpSocket, ctx);
  if (h.grpc) return grpcHandler(h.grpc, ctx);
  if (h.sleep) {
    const ms = Math.min(h.sleep.seconds * 1000, ctx.timeoutMs);
    await new Promise<void>((r) => {
      const timer = setTimeout(r, ms);
      ctx.signal?.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          r();
        },
        { once: true },
      );
    });
    return { ok: true };
  }
  return { ok: false, message: 'no handler' };
}
