// The part of gRPC a CRI client needs, on Node's own HTTP/2 over a unix socket: unary calls with a
// deadline and one server stream (GetContainerEvents); no TLS, compression, name resolution, load
// balancing or retry policy (only gRPC's transparent retry of a call refused unread). It replaced
// @grpc/grpc-js, whose loading (its resolvers, balancers and channelz, 394 KB) and per-call
// machinery were the largest part of a CRI command's start beyond Node's (docs/benchmarks.md,
// "gRPC on Node's HTTP/2"). The wire: gRPC's PROTOCOL-HTTP2.md, a length-prefixed message on a
// POST, the status in trailers.
//
// Failures carry what podrun decides on as values (the gRPC code, the HTTP status of a peer that
// is not gRPC, the decode error as cause), so nothing above reads them back from text.

import { connect, constants, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { MessageReader } from './grpc-messages.js';

/** gRPC's status codes (the protocol's numbers). */
export const Code = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

export class GrpcError extends Error {
  /** Set when the peer answered HTTP but not gRPC: its HTTP status. */
  readonly httpStatus: number | undefined;
  constructor(
    readonly code: number,
    readonly details: string,
    o: { httpStatus?: number; cause?: unknown } = {},
  ) {
    super(`gRPC status ${code}: ${details}`, o.cause === undefined ? undefined : { cause: o.cause });
    this.name = 'GrpcError';
    this.httpStatus = o.httpStatus;
  }
}

export interface GrpcConnectionOptions {
  /** The largest message taken from the peer; a longer length prefix fails the call unread. */
  maxMessageBytes: number;
  /** Each call's start, frames handed to the socket and status, for tests and debugging. */
  trace?: (line: string) => void;
  /** A session that has used this many stream ids is replaced (HTTP/2 ids end at 2^31). */
  maxStreamId?: number;
}

interface CallHandlers {
  message(m: Buffer): void;
  /** Once, last: undefined when the peer said OK. */
  end(err: GrpcError | undefined): void;
}

export interface RunningCall {
  cancel(): void;
}

/** HTTP's answer from a peer that is not gRPC, as gRPC's clients map it. */
function codeOfHttp(status: number): number {
  switch (status) {
    case 400:
      return Code.INTERNAL;
    case 401:
      return Code.UNAUTHENTICATED;
    case 403:
      return Code.PERMISSION_DENIED;
    case 404:
      return Code.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return Code.UNAVAILABLE;
    default:
      return Code.UNKNOWN;
  }
}

/** A reset stream with no status, as gRPC's clients read it. */
function codeOfReset(rstCode: number): number {
  if (rstCode === constants.NGHTTP2_REFUSED_STREAM) return Code.UNAVAILABLE;
  if (rstCode === constants.NGHTTP2_CANCEL) return Code.CANCELLED;
  if (rstCode === constants.NGHTTP2_ENHANCE_YOUR_CALM) return Code.RESOURCE_EXHAUSTED;
  if (rstCode === constants.NGHTTP2_INADEQUATE_SECURITY) return Code.PERMISSION_DENIED;
  return Code.INTERNAL;
}

/** grpc-message is percent-encoded; a malformed escape is kept as sent. */
function statusMessage(v: string | string[] | undefined): string {
  const s = Array.isArray(v) ? v.join(', ') : (v ?? '');
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The deadline as the grpc-timeout header: at most 8 digits, in the finest unit that fits. */
export function grpcTimeout(ms: number): string {
  const n = Math.max(1, Math.ceil(ms));
  if (n < 1e8) return `${n}m`;
  return `${Math.min(99_999_999, Math.ceil(n / 1000))}S`;
}

/** One HTTP/2 connection to a unix socket, opened on first call and again after it closes. */
export class GrpcConnection {
  private session: ClientHttp2Session | undefined;
  private running = 0;
  private nextCallId = 0;
  private closed = false;

  constructor(
    readonly socket: string,
    private readonly o: GrpcConnectionOptions,
  ) {}

  private open(): ClientHttp2Session {
    const now = this.session;
    const limit = this.o.maxStreamId ?? 2 ** 31 - 1024;
    if (now && !now.closed && !now.destroyed && (now.state.nextStreamID ?? 0) < limit) return now;
    // A used-up session finishes its calls and goes; the next calls take a new one.
    if (now && !now.closed && !now.destroyed) now.close();
    const session = connect('http://localhost', { createConnection: () => netConnect(this.socket), settings: { enablePush: false } });
    // Failures reach each call through its stream; the session's own are only the end of it.
    session.on('error', () => undefined);
    const forget = (): void => {
      if (this.session === session) this.session = undefined;
    };
    session.once('close', forget);
    session.once('goaway', forget);
    session.once('error', forget);
    this.session = session;
    this.hold();
    return session;
  }

  /** The connection keeps the process alive only while a call is running on it. */
  private hold(): void {
    if (this.running > 0) this.session?.ref();
    else this.session?.unref();
  }

  /** Starts a call; its handlers run on later turns, `end` exactly once. */
  call(path: string, body: Buffer, deadlineMs: number | undefined, h: CallHandlers): RunningCall {
    const id = ++this.nextCallId;
    const trace = this.o.trace;
    trace?.(`[${id}] call ${path}`);
    let finished = false;
    let stream: ClientHttp2Stream | undefined;
    let timer: NodeJS.Timeout | undefined;
    const finish = (err: GrpcError | undefined): void => {
      if (finished) return;
      finished = true;
      if (timer) clearTimeout(timer);
      this.running--;
      this.hold();
      trace?.(`[${id}] status ${err ? err.code : Code.OK}`);
      if (stream && !stream.closed) stream.close(constants.NGHTTP2_CANCEL);
      h.end(err);
    };
    this.running++;
    if (this.closed) {
      queueMicrotask(() => finish(new GrpcError(Code.UNAVAILABLE, 'the connection is closed')));
      return { cancel: () => undefined };
    }
    const headers: Record<string, string> = {
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: path,
      'content-type': 'application/grpc',
      te: 'trailers',
      'user-agent': 'podrun',
    };
    if (deadlineMs !== undefined) {
      headers['grpc-timeout'] = grpcTimeout(deadlineMs);
      timer = setTimeout(() => finish(new GrpcError(Code.DEADLINE_EXCEEDED, 'Deadline exceeded')), deadlineMs);
    }
    const frame = Buffer.allocUnsafe(5 + body.length);
    frame[0] = 0;
    frame.writeUInt32BE(body.length, 1);
    body.copy(frame, 5);
    // gRPC's transparent retry: a call the peer refused unread, on a connection it had just closed
    // (a runtime restarted under the agent), is made once more on a new one.
    let retry = true;
    const attempt = (): void => {
      let session: ClientHttp2Session;
      try {
        session = this.open();
        this.hold();
        stream = session.request(headers);
      } catch (e) {
        queueMicrotask(() => finish(new GrpcError(Code.UNAVAILABLE, (e as Error).message, { cause: e })));
        return;
      }
      const s = stream;
      let responded = false;
      let trailers: IncomingHttpHeaders | undefined;
      let failure: (Error & { code?: string }) | undefined;
      const reader = new MessageReader(this.o.maxMessageBytes);
      s.on('response', (hd) => {
        responded = true;
        const status = Number(hd[constants.HTTP2_HEADER_STATUS]);
        const type = String(hd['content-type'] ?? '');
        if (status !== 200) finish(new GrpcError(codeOfHttp(status), `Received HTTP status code ${status}`, { httpStatus: status }));
        else if (!type.startsWith('application/grpc'))
          finish(new GrpcError(Code.UNKNOWN, `the answer is ${type || 'without a content-type'}, not application/grpc`, { httpStatus: status }));
        // A trailers-only answer: the status is in the headers.
        else if (hd['grpc-status'] !== undefined) trailers = hd;
      });
      s.on('data', (chunk: Buffer) => {
        if (finished) return;
        reader.push(chunk);
        while (!finished) {
          const m = reader.next();
          if (m === undefined) return;
          if (m === 'compressed') return finish(new GrpcError(Code.INTERNAL, 'the answer is compressed, and none was asked for'));
          if (typeof m === 'number')
            return finish(new GrpcError(Code.RESOURCE_EXHAUSTED, `Received message larger than max (${m} vs. ${this.o.maxMessageBytes})`));
          h.message(m);
        }
      });
      s.on('trailers', (hd) => (trailers = hd));
      // A connection that failed takes its streams with it; the connection's error says why.
      s.on('error', (e: Error & { code?: string }) => (failure ??= e.code === 'ERR_HTTP2_STREAM_CANCEL' && e.cause instanceof Error ? e.cause : e));
      s.on('close', () => {
        if (finished) return;
        if (trailers) {
          const code = Number(trailers['grpc-status']);
          if (!Number.isInteger(code)) return finish(new GrpcError(Code.UNKNOWN, `the answer's status is not a number: ${String(trailers['grpc-status'])}`));
          if (code === Code.OK && reader.partial) return finish(new GrpcError(Code.INTERNAL, 'the answer ends inside a message'));
          return finish(code === Code.OK ? undefined : new GrpcError(code, statusMessage(trailers['grpc-message'])));
        }
        const rst = s.rstCode ?? constants.NGHTTP2_NO_ERROR;
        const unread = !responded && (rst === constants.NGHTTP2_REFUSED_STREAM || failure?.code === 'ERR_HTTP2_GOAWAY_SESSION');
        if (unread && retry) {
          retry = false;
          if (this.session === session) this.session = undefined;
          trace?.(`[${id}] again`);
          return attempt();
        }
        if (failure) return finish(new GrpcError(Code.UNAVAILABLE, failure.message, { cause: failure }));
        if (rst !== constants.NGHTTP2_NO_ERROR) return finish(new GrpcError(codeOfReset(rst), `the stream was reset (HTTP/2 code ${rst})`));
        finish(new GrpcError(Code.INTERNAL, 'the stream ended without a gRPC status'));
      });
      s.end(frame, () => trace?.(`[${id}] sent`));
    };
    attempt();
    return { cancel: () => finish(new GrpcError(Code.CANCELLED, 'Cancelled on client')) };
  }

  /** One answer. A decode failure is the call's INTERNAL failure, with the decoder's error as cause. */
  unary<Out>(path: string, body: Buffer, decode: (b: Buffer) => Out, deadlineMs: number): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      let got: { v: Out } | undefined;
      let bad: GrpcError | undefined;
      const call = this.call(path, body, deadlineMs, {
        message: (m) => {
          if (got || bad) {
            bad ??= new GrpcError(Code.UNIMPLEMENTED, 'more than one message in the answer to a unary call');
            return call.cancel();
          }
          try {
            got = { v: decode(m) };
          } catch (e) {
            bad = new GrpcError(Code.INTERNAL, `the answer does not decode: ${(e as Error).message}`, { cause: e });
            call.cancel();
          }
        },
        end: (err) => {
          if (bad) reject(bad);
          else if (err) reject(err);
          else if (got) resolve(got.v);
          else reject(new GrpcError(Code.UNIMPLEMENTED, 'no message in the answer to a unary call'));
        },
      });
    });
  }

  /** The answers of a server-streaming call as they come, until the peer ends it or `signal` aborts. */
  async *serverStream<Out>(path: string, body: Buffer, decode: (b: Buffer) => Out, signal?: AbortSignal): AsyncGenerator<Out> {
    const queue: Out[] = [];
    let ended: { err: GrpcError | undefined } | undefined;
    let wake: (() => void) | undefined;
    const call = this.call(path, body, undefined, {
      message: (m) => {
        try {
          queue.push(decode(m));
        } catch (e) {
          ended ??= { err: new GrpcError(Code.INTERNAL, `an answer does not decode: ${(e as Error).message}`, { cause: e }) };
          call.cancel();
        }
        wake?.();
      },
      end: (err) => {
        ended ??= { err };
        wake?.();
      },
    });
    const abort = (): void => call.cancel();
    signal?.addEventListener('abort', abort, { once: true });
    try {
      for (;;) {
        while (queue.length) yield queue.shift()!;
        if (ended) {
          if (ended.err && !signal?.aborted) throw ended.err;
          return;
        }
        await new Promise<void>((r) => (wake = r));
        wake = undefined;
      }
    } finally {
      signal?.removeEventListener('abort', abort);
      call.cancel();
    }
  }

  /**
   * Resolves once the connection is up and the calls made so far have gone out on it (Node's HTTP/2
   * writes a request's frames at the next turn), at once when it has failed or none was asked for,
   * or after `timeoutMs`. Never rejects and holds no timer that keeps the process alive.
   */
  sent(timeoutMs: number): Promise<void> {
    const s = this.session;
    return new Promise<void>((resolve) => {
      if (!s || s.closed || s.destroyed) return resolve();
      setTimeout(resolve, timeoutMs).unref();
      if (!s.connecting) return void setImmediate(resolve);
      s.once('connect', () => setImmediate(resolve));
      s.once('close', resolve);
    });
  }

  close(): void {
    this.closed = true;
    this.session?.close();
    this.session = undefined;
  }
}
