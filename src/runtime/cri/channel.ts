// The gRPC channel under CriClient (client.ts): one unix socket, unary calls with a deadline, and each
// failure turned into the typed error that says what is wrong (errors.ts), the endpoint probed when
// the answer alone cannot tell (nothing there, not gRPC, containerd with its CRI plugin off).

import { connect } from 'node:net';
import { Client, connectivityState, credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
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
const ContainerdVersionResponse = M.codec<Record<string, never>, { version: string; revision: string }>({
  name: 'containerd.VersionResponse',
  fields: { version: { no: 1, kind: 'string' }, revision: { no: 2, kind: 'string' } },
});

/** ExecSync output is capped at 16 MiB per stream by the runtime (CVE-2022-1708); leave room for both. */
const MAX_MESSAGE_BYTES = 40 * 1024 * 1024;

/** The socket path of a CRI endpoint; anything but a unix socket is refused, as the kubelet does on Linux. */
export function socketPathOf(endpoint: string): string {
  const path = endpoint.startsWith('unix://') ? endpoint.slice('unix://'.length) : endpoint;
  if (!path.startsWith('/')) throw new CriUnreachableError(endpoint, 'the endpoint must be a unix socket: unix:///absolute/path');
  return path;
}

type Call<Out> = (cb: (err: ServiceError | null, v?: Out) => void) => void;

export class Channel {
  readonly socket: string;
  readonly client: Client;

  constructor(readonly endpoint: string) {
    this.socket = socketPathOf(endpoint);
    this.client = new Client(`unix://${this.socket}`, credentials.createInsecure(), {
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
      // Reconnect soon after a runtime restart: the agent relists every second.
      'grpc.initial_reconnect_backoff_ms': 200,
      'grpc.max_reconnect_backoff_ms': 2000,
    });
  }

  unary<In, Out>(path: string, c: M.Codec<In, unknown>, out: M.Codec<unknown, Out>, arg: In, timeoutMs: number): Promise<Out> {
    const deadline = Date.now() + timeoutMs;
    const call: Call<Out> = (cb) => this.client.makeUnaryRequest(path, c.serialize, out.deserialize, arg, new Metadata(), { deadline }, (err, v) => cb(err, v));
    return new Promise<Out>((resolve, reject) => {
      call((err, v) => {
        if (err) {
          // DeadlineExceeded before our own deadline came from the runtime: the command's timeout in ExecSync.
          const ours = Date.now() >= deadline - 50;
          void this.translate(err, path, timeoutMs, ours).then(reject, reject);
          return;
        }
        if (v === undefined) reject(new CriRequestError(this.endpoint, method(path), 'empty answer'));
        else resolve(v);
      });
    });
  }

  /** A gRPC failure as the typed error that says what is wrong and what to do. */
  async translate(err: ServiceError, path: string, timeoutMs: number, ourDeadline = true): Promise<CriError> {
    const m = method(path);
    const details = err.details || err.message;
    // An HTTP/2 peer that is not gRPC (a web server, a proxy): it answers an HTTP status, or a body
    // read as a frame of absurd length (Version's real answer is a few bytes).
    if (/Received HTTP status code/.test(details) || (m === 'Version' && err.code === status.RESOURCE_EXHAUSTED))
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
        if (err.cause instanceof WireError || /WireError|wire type|runs past the end|varint/.test(details))
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
    const v = await new Promise<{ version: string } | undefined>((resolve) => {
      this.client.makeUnaryRequest(
        CONTAINERD_VERSION,
        () => Buffer.alloc(0),
        ContainerdVersionResponse.deserialize,
        {},
        new Metadata(),
        { deadline: Date.now() + 5000 },
        (err, r) => resolve(err ? undefined : r),
      );
    });
    if (v) return new CriPluginDisabledError(this.endpoint, v.version || 'unknown version');
    return new CriNotRuntimeError(this.endpoint, `it serves gRPC without the runtime.v1 services (${details})`, status.UNIMPLEMENTED);
  }

  /**
   * Resolves once the connection is up and the calls made so far have gone out on it (gRPC starts
   * a queued call when the connection is ready, and HTTP/2 writes its frames at the next turn), at
   * once when it has failed (the calls fail on their own), or after `timeoutMs`. Never rejects,
   * asks for no connection of its own, and holds no timer that keeps the process alive.
   */
  sent(timeoutMs: number): Promise<void> {
    const channel = this.client.getChannel();
    return new Promise<void>((resolve) => {
      setTimeout(resolve, timeoutMs).unref();
      const check = (): void => {
        const state = channel.getConnectivityState(false);
        if (state === connectivityState.READY) setImmediate(resolve);
        else if (state === connectivityState.TRANSIENT_FAILURE || state === connectivityState.SHUTDOWN) resolve();
        else channel.watchConnectivityState(state, Infinity, check);
      };
      check();
    });
  }

  close(): void {
    this.client.close();
  }
}

function method(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

export function isServiceError(e: unknown): e is ServiceError {
  return typeof e === 'object' && e !== null && 'code' in e && typeof (e as { code: unknown }).code === 'number' && 'details' in e;
}
