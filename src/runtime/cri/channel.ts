// The gRPC channel under CriClient (client.ts): one unix socket, unary calls with a deadline, and each
// failure turned into the typed error that says what is wrong (errors.ts), the endpoint probed when
// the answer alone cannot tell (nothing there, not gRPC, containerd with its CRI plugin off).

import { connect } from 'node:net';
import { Code as status, GrpcConnection, GrpcError } from './grpc-h2.js';
import {
  CriDeadlineError,
  CriError,
  CriExecTimeoutError,
  CriNotFoundError,
  CriNotRuntimeError,
  CriNotSupportedError,
  CriPluginDisabledError,
  CriRequestError,
  CriUnreachableError,
} from './errors.js';
import * as M from './messages.js';
import { WireError } from './wire.js';

/** containerd's own version service: what tells "containerd without CRI" from any other gRPC server. */
const CONTAINERD_VERSION = '/containerd.services.version.v1.Version/Version';
const ContainerdVersionResponse = M.codec<Record<string, never>, { version: string; revision: string }>(M.ContainerdVersionResponse);

/** ExecSync output is capped at 16 MiB per stream by the runtime (CVE-2022-1708); leave room for both. */
const MAX_MESSAGE_BYTES = 40 * 1024 * 1024;

/** The socket path of a CRI endpoint; anything but a unix socket is refused, as the kubelet does on Linux. */
export function socketPathOf(endpoint: string): string {
  const path = endpoint.startsWith('unix://') ? endpoint.slice('unix://'.length) : endpoint;
  if (!path.startsWith('/')) throw new CriUnreachableError(endpoint, 'the endpoint must be a unix socket: unix:///absolute/path');
  return path;
}

/** `PODRUN_GRPC_TRACE=1`: each CRI call's start, its frames' send and its status on stderr. */
const trace = process.env.PODRUN_GRPC_TRACE === '1' ? (line: string): void => void process.stderr.write(`grpc-trace: ${line}\n`) : undefined;

export class Channel {
  readonly socket: string;
  readonly connection: GrpcConnection;

  constructor(readonly endpoint: string) {
    this.socket = socketPathOf(endpoint);
    // A runtime that restarts is reached again by the next call (the agent relists every second).
    this.connection = new GrpcConnection(this.socket, { maxMessageBytes: MAX_MESSAGE_BYTES, ...(trace ? { trace } : {}) });
  }

  async unary<In, Out>(path: string, c: M.Codec<In, unknown>, out: M.Codec<unknown, Out>, arg: In, timeoutMs: number): Promise<Out> {
    const deadline = Date.now() + timeoutMs;
    try {
      return await this.connection.unary(path, c.serialize(arg), out.deserialize, timeoutMs);
    } catch (e) {
      if (!(e instanceof GrpcError)) throw e;
      // DeadlineExceeded before our own deadline came from the runtime: the command's timeout in ExecSync.
      throw await this.translate(e, path, timeoutMs, Date.now() >= deadline - 50);
    }
  }

  /** A server-streaming call's answers; a failure is the typed error, as a unary call's. */
  async *serverStream<In, Out>(path: string, c: M.Codec<In, unknown>, out: M.Codec<unknown, Out>, arg: In, signal?: AbortSignal): AsyncGenerator<Out> {
    try {
      yield* this.connection.serverStream(path, c.serialize(arg), out.deserialize, signal);
    } catch (e) {
      if (e instanceof GrpcError) throw await this.translate(e, path, 0);
      throw e;
    }
  }

  /** A gRPC failure as the typed error that says what is wrong and what to do. */
  async translate(err: GrpcError, path: string, timeoutMs: number, ourDeadline = true): Promise<CriError> {
    const m = method(path);
    const details = err.details || err.message;
    // An HTTP/2 peer that is not gRPC (a web server, a proxy): it answers an HTTP status, or a body
    // read as a frame of absurd length (Version's real answer is a few bytes).
    if (err.httpStatus !== undefined || (m === 'Version' && err.code === status.RESOURCE_EXHAUSTED))
      return new CriNotRuntimeError(this.endpoint, `it answers HTTP/2 but not gRPC (${details})`, err.code);
    switch (err.code) {
      case status.DEADLINE_EXCEEDED:
        if (ourDeadline) return new CriDeadlineError(this.endpoint, m, timeoutMs);
        if (m === 'ExecSync') return new CriExecTimeoutError(this.endpoint, details);
        return new CriRequestError(this.endpoint, m, details, err.code);
      case status.NOT_FOUND:
        return new CriNotFoundError(this.endpoint, m, details);
      case status.UNIMPLEMENTED:
        if (/unknown service runtime\.v1\./.test(details)) return this.notARuntime(details);
        return new CriNotSupportedError(this.endpoint, m, details);
      case status.UNAVAILABLE:
        return this.unavailable(details);
      case status.INTERNAL:
      case status.UNKNOWN:
        if (err.cause instanceof WireError)
          return new CriRequestError(this.endpoint, m, `the runtime's answer does not decode as runtime.v1: ${details}`, err.code);
        return new CriRequestError(this.endpoint, m, details, err.code);
      default:
        return new CriRequestError(this.endpoint, m, details, err.code);
    }
  }

  /** Unavailable: either nothing listens (unreachable) or the peer does not speak HTTP/2 gRPC. */
  private async unavailable(details: string): Promise<CriError> {
    try {
      const st = await (await import('node:fs/promises')).lstat(this.socket);
      if (!st.isSocket()) return new CriUnreachableError(this.endpoint, `${this.socket} is not a socket`, 'ENOTSOCK');
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      return new CriUnreachableError(this.endpoint, code === 'ENOENT' ? `no such socket: ${this.socket} (is the runtime running?)` : String(e), code);
    }
    const probe = await new Promise<string | undefined>((resolve) => {
      const s = connect(this.socket);
      s.once('connect', () => {
        s.destroy();
        resolve(undefined);
      });
      s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
    if (probe !== undefined)
      return new CriUnreachableError(
        this.endpoint,
        probe === 'ECONNREFUSED' ? `nothing listens on ${this.socket} (is the runtime running?)` : `${probe} connecting to ${this.socket}`,
        probe,
      );
    return new CriNotRuntimeError(this.endpoint, `it accepts connections but does not answer gRPC (${details})`, status.UNAVAILABLE);
  }

  /** The endpoint speaks gRPC without runtime.v1: containerd with its CRI plugin off, or something else. */
  private async notARuntime(details: string): Promise<CriError> {
    const v = await this.connection.unary(CONTAINERD_VERSION, Buffer.alloc(0), ContainerdVersionResponse.deserialize, 5000).catch(() => undefined);
    if (v) return new CriPluginDisabledError(this.endpoint, v.version || 'unknown version');
    return new CriNotRuntimeError(this.endpoint, `it serves gRPC without the runtime.v1 services (${details})`, status.UNIMPLEMENTED);
  }

  /** The connection up and the calls made so far on their way (GrpcConnection.sent), or `timeoutMs` past. */
  sent(timeoutMs: number): Promise<void> {
    return this.connection.sent(timeoutMs);
  }

  close(): void {
    this.connection.close();
  }
}

function method(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}
