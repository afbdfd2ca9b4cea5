import { networkInterfaces } from 'node:os';
import { Agent, WebSocket } from 'undici';
import type { ExecAttachOptions, ExecStreams } from '../runtime-types.js';
import { ExecStreamError } from './exec-stream-error.js';

export { ExecStreamError };

// `podrun exec` on a CRI runtime: the session the runtime serves on its streaming server at the
// URL its `Exec` answered, spoken as kubectl speaks it to the kubelet's streaming package
// (pkg/kubelet/cri/streaming/remotecommand, which containerd and CRI-O carry): a WebSocket whose
// subprotocol is `v5.channel.k8s.io` or `v4.channel.k8s.io`, each binary message one channel's
// bytes after a first byte naming the channel. The URL and everything the server sends are
// treated as hostile: the runtime is trusted, but what it relays comes from the container.

/** The channels of the subprotocol (the first byte of each message). */
export const CHANNEL = { stdin: 0, stdout: 1, stderr: 2, status: 3, resize: 4, close: 255 } as const;

/** v5 adds a CLOSE message (255, then the channel): the only way to pass stdin's end to the command. */
export const EXEC_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];

/** The status channel carries one metav1.Status: a few hundred bytes. More is refused. */
export const MAX_STATUS_BYTES = 64 * 1024;

/** One message from the server: output of at most this much (the server writes 32 KiB at a time). */
const MAX_MESSAGE_BYTES = 1024 * 1024;

/** Output the caller has not taken yet: past this the session ends (a WebSocket cannot be paused). */
const MAX_PENDING_OUTPUT = 64 * 1024 * 1024;

/** stdin waits while this much of it is queued on the socket. */
const MAX_QUEUED_STDIN = 1024 * 1024;

/** Whether an address is this host's: loopback, or one of its interfaces'. */
function ownAddress(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === '::1' || h === 'localhost') return true;
  return Object.values(networkInterfaces()).some((list) => list?.some((a) => a.address.toLowerCase() === h));
}

/**
 * The streaming URL as a WebSocket URL, once checked: http(s) on this host (a runtime reached on
 * a unix socket runs here, so its streaming server does too), no credentials. Anything else is
 * refused rather than followed: the URL came over the wire.
 */
export function streamingUrl(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ExecStreamError(`the runtime's exec URL is not a URL: ${JSON.stringify(raw.slice(0, 200))}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ExecStreamError(`the runtime's exec URL is ${u.protocol}, not http(s): refused`);
  if (u.username || u.password) throw new ExecStreamError("the runtime's exec URL carries credentials: refused");
  if (!ownAddress(u.hostname))
    throw new ExecStreamError(
      `the runtime's exec URL is on ${u.hostname}, not this host: refused (podrun reaches a runtime's streaming server only where the runtime runs)`,
    );
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  return u;
}

/** A metav1.Status as the v4 status channel carries it. */
interface Status {
  status?: unknown;
  message?: unknown;
  reason?: unknown;
  details?: { causes?: { reason?: unknown; message?: unknown }[] };
}

/**
 * The command's exit code from the status the session ended with (v4: Success, or Failure with
 * reason NonZeroExitCode and a cause ExitCode). A Failure of another kind (the runtime could not
 * run the command) is an error with the runtime's message.
 */
export function exitCodeOf(raw: Buffer | undefined): number {
  if (!raw?.length) throw new ExecStreamError("the runtime's streaming server ended the session without the command's exit status");
  let s: Status;
  try {
    s = JSON.parse(raw.toString('utf8')) as Status;
  } catch {
    throw new ExecStreamError(`the runtime's streaming server sent a status that is not JSON: ${JSON.stringify(raw.subarray(0, 200).toString('utf8'))}`);
  }
  if (s?.status === 'Success') return 0;
  const cause = Array.isArray(s?.details?.causes) ? s.details.causes.find((c) => c?.reason === 'ExitCode') : undefined;
  const code = typeof cause?.message === 'string' && /^\d{1,3}$/.test(cause.message) ? Number(cause.message) : NaN;
  if (s?.reason === 'NonZeroExitCode' && code >= 0 && code <= 255) return code;
  const message = typeof s?.message === 'string' ? s.message.slice(0, 1000) : 'no message';
  throw new ExecStreamError(`the runtime could not run the command: ${message}`);
}

/**
 * How a session ended: a breach of the protocol first; else the status (a connection that broke
 * after it came ended the session as sessions end); else the break, or the missing status.
 */
export async function sessionEnd(failure: ExecStreamError | undefined, broken: ExecStreamError | undefined, status: Buffer[]): Promise<number> {
  if (failure) throw failure;
  if (broken && !status.length) throw broken;
  return exitCodeOf(status.length ? Buffer.concat(status) : undefined);
}

/** Bounds of one session (a test makes them small). */
export interface StreamLimits {
  maxStatusBytes?: number;
  maxPendingOutput?: number;
}

/**
 * One exec session on the runtime's streaming server, attached to the caller's streams (a TTY
 * resized with the terminal when asked). Resolves with the command's exit code; rejects with
 * ExecStreamError when the server refuses, breaks the protocol, or hangs up without a status.
 */
export async function streamExec(
  url: string,
  o: Pick<ExecAttachOptions, 'tty' | 'stdin' | 'size' | 'onResize'>,
  streams: ExecStreams,
  limits: StreamLimits = {},
): Promise<number> {
  const target = streamingUrl(url);
  const maxStatus = limits.maxStatusBytes ?? MAX_STATUS_BYTES;
  const maxPending = limits.maxPendingOutput ?? MAX_PENDING_OUTPUT;
  // A dispatcher of the session's own: the message bound is the server's to respect, and no
  // connection outlives the session.
  const dispatcher = new Agent({ webSocket: { maxPayloadSize: MAX_MESSAGE_BYTES } } as ConstructorParameters<typeof Agent>[0]);
  const ws = new WebSocket(target, { protocols: EXEC_PROTOCOLS, dispatcher });
  ws.binaryType = 'arraybuffer';
  return new Promise<number>((resolve, reject) => {
    const status: Buffer[] = [];
    let statusBytes = 0;
    let failure: ExecStreamError | undefined;
    let stopResizing: (() => void) | undefined;
    let stdinPoll: NodeJS.Timeout | undefined;
    let settled = false;
    let opened = false;
    let broken: ExecStreamError | undefined;
    const fail = (err: ExecStreamError): void => {
      failure ??= err;
      ws.close();
    };
    const send = (channel: number, data: Uint8Array): void => {
      if (ws.readyState !== WebSocket.OPEN) return;
      const frame = Buffer.allocUnsafe(data.length + 1);
      frame[0] = channel;
      frame.set(data, 1);
      ws.send(frame);
    };
    const resize = (): void => {
      const size = o.size?.();
      if (size) send(CHANNEL.resize, Buffer.from(JSON.stringify({ Width: size.columns, Height: size.rows })));
    };
    const onData = (chunk: Buffer | string): void => {
      send(CHANNEL.stdin, typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
      // The socket's queue is the only backpressure a WebSocket gives: stdin waits for it.
      if (ws.bufferedAmount > MAX_QUEUED_STDIN && !stdinPoll) {
        streams.stdin.pause();
        stdinPoll = setInterval(() => {
          if (ws.bufferedAmount > MAX_QUEUED_STDIN && ws.readyState === WebSocket.OPEN) return;
          clearInterval(stdinPoll);
          stdinPoll = undefined;
          streams.stdin.resume();
        }, 10);
      }
    };
    const onEnd = (): void => {
      // v4 has no message for it (SPDY has: exec-spdy.ts, taken for input without a terminal).
      if (ws.protocol === 'v5.channel.k8s.io') send(CHANNEL.close, Buffer.from([CHANNEL.stdin]));
    };
    const detach = (): void => {
      stopResizing?.();
      clearInterval(stdinPoll);
      if (o.stdin) {
        streams.stdin.removeListener('data', onData);
        streams.stdin.removeListener('end', onEnd);
      }
    };
    ws.addEventListener('open', () => {
      opened = true;
      if (!EXEC_PROTOCOLS.includes(ws.protocol)) {
        fail(new ExecStreamError(`the runtime's streaming server speaks ${JSON.stringify(ws.protocol)}; podrun speaks ${EXEC_PROTOCOLS.join(', ')}`));
        return;
      }
      if (o.tty) {
        stopResizing = o.onResize?.(resize);
        resize();
      }
      if (o.stdin) {
        streams.stdin.on('data', onData);
        streams.stdin.on('end', onEnd);
        streams.stdin.resume();
      }
    });
    ws.addEventListener('message', (ev) => {
      if (failure) return;
      if (!(ev.data instanceof ArrayBuffer)) return fail(new ExecStreamError("the runtime's streaming server sent a text message on a binary protocol"));
      const msg = Buffer.from(ev.data);
      if (!msg.length) return;
      const data = msg.subarray(1);
      switch (msg[0]) {
        case CHANNEL.stdout:
        case CHANNEL.stderr: {
          const out = msg[0] === CHANNEL.stdout ? streams.stdout : streams.stderr;
          if (data.length) out.write(data);
          const pending = (out as Partial<NodeJS.WritableStream & { writableLength: number }>).writableLength ?? 0;
          if (pending > maxPending) fail(new ExecStreamError(`the command's output is more than ${maxPending} bytes ahead of its reader: session ended`));
          return;
        }
        case CHANNEL.status:
          statusBytes += data.length;
          if (statusBytes > maxStatus)
            return fail(new ExecStreamError(`the runtime's streaming server sent a status of more than ${maxStatus} bytes: refused`));
          status.push(data);
          return;
        default:
          // Channels the server has no business writing to (stdin, resize, ones no version
          // names): ignored, as the kubelet's own client ignores frames for unknown streams.
          return;
      }
    });
    ws.addEventListener('error', (ev) => {
      const e = ev as { error?: unknown; message?: unknown };
      const why = e.error instanceof Error ? e.error.message : typeof e.message === 'string' && e.message ? e.message : 'the connection failed';
      broken ??= new ExecStreamError(
        opened
          ? `the runtime's streaming server ended the session without the command's exit status (${why})`
          : `the runtime's streaming server refused the session: ${why}`,
      );
    });
    ws.addEventListener('close', () => {
      if (settled) return;
      settled = true;
      detach();
      void dispatcher.close().catch(() => undefined);
      sessionEnd(failure, broken, status).then(resolve, reject);
    });
  });
}
