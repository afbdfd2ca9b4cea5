import { connect, type Socket } from 'node:net';
import type { ExecStreams } from '../runtime-types.js';
import { ExecStreamError, MAX_STATUS_BYTES, sessionEnd, streamingUrl, type StreamLimits } from './exec-stream.js';

// `podrun exec -i` without a TTY on a runtime whose WebSocket is v4 (containerd 1.6): the same
// session over SPDY/3.1, as kubectl reaches the runtime, because only SPDY can tell the command
// its input ended (a stream's FIN). One SPDY stream per channel (error, stdin, stdout, stderr),
// named by a `streamtype` header; the status arrives on the error stream (v4: a metav1.Status).
// Only the frames this needs are spoken; the server's header blocks are never decompressed (the
// replies' headers say nothing podrun uses), and podrun's own are sent as stored (uncompressed)
// deflate blocks in one zlib stream, which a zlib reader takes with or without SPDY's dictionary.

const VERSION = 3;
const TYPE = { synStream: 1, synReply: 2, rstStream: 3, settings: 4, ping: 6, goaway: 7, headers: 8, windowUpdate: 9 } as const;
const FLAG_FIN = 1;
/** A frame's length field is 24 bits; a server frame past this is refused (its writes are 32 KiB). */
const MAX_FRAME = 1024 * 1024;
/** The response head of the upgrade, at most. */
const MAX_HEAD = 16 * 1024;
/** stdin goes out in frames of this much. */
const STDIN_FRAME = 32 * 1024;

function controlFrame(type: number, flags: number, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt16BE(0x8000 | VERSION, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt32BE(body.length, 4);
  head[4] = flags;
  return Buffer.concat([head, body]);
}

function dataFrame(streamId: number, flags: number, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(streamId & 0x7fffffff, 0);
  head.writeUInt32BE(data.length, 4);
  head[4] = flags;
  return Buffer.concat([head, data]);
}

/** SPDY's name/value block, as one stored deflate block of the session's zlib stream (the first one opens it). */
function headerBlock(pairs: [string, string][], first: boolean): Buffer {
  const parts: Buffer[] = [];
  const n = Buffer.alloc(4);
  n.writeUInt32BE(pairs.length);
  parts.push(n);
  for (const [k, v] of pairs) {
    for (const s of [k, v]) {
      const b = Buffer.from(s);
      const len = Buffer.alloc(4);
      len.writeUInt32BE(b.length);
      parts.push(len, b);
    }
  }
  const raw = Buffer.concat(parts);
  const stored = Buffer.alloc(5);
  stored[0] = 0; // not final, stored; byte-aligned from the start
  stored.writeUInt16LE(raw.length, 1);
  stored.writeUInt16LE(~raw.length & 0xffff, 3);
  // Then an empty stored block, as a sync flush ends: a reader stops there instead of reading
  // on into the next frame for another block (Go's flate would then fail the next header block).
  return Buffer.concat([first ? Buffer.from([0x78, 0x01]) : Buffer.alloc(0), stored, raw, SYNC_FLUSH]);
}

/** An empty, non-final stored block. */
const SYNC_FLUSH = Buffer.from([0x00, 0x00, 0x00, 0xff, 0xff]);

function synStream(streamId: number, pairs: [string, string][], first: boolean): Buffer {
  const ids = Buffer.alloc(10);
  ids.writeUInt32BE(streamId, 0);
  ids.writeUInt32BE(0, 4);
  return controlFrame(TYPE.synStream, 0, Buffer.concat([ids, headerBlock(pairs, first)]));
}

/**
 * One `podrun exec -i` session over SPDY/3.1 on the runtime's streaming server: stdin to the
 * command, its end passed on; stdout and stderr apart, at the caller's pace. Resolves with the
 * command's exit code; rejects with ExecStreamError as the WebSocket session does.
 */
export async function spdyExec(url: string, streams: ExecStreams, limits: StreamLimits = {}): Promise<number> {
  const target = streamingUrl(url);
  if (target.protocol !== 'ws:') throw new ExecStreamError("the runtime's streaming server is https: podrun speaks SPDY to it only in the clear, on this host");
  const maxStatus = limits.maxStatusBytes ?? MAX_STATUS_BYTES;
  const port = Number(target.port || 80);
  const host = target.hostname.replace(/^\[|\]$/g, '');
  const ID = { error: 1, stdin: 3, stdout: 5, stderr: 7 };
  return new Promise<number>((resolve, reject) => {
    const sock: Socket = connect({ host, port });
    let head = Buffer.alloc(0);
    let upgraded = false;
    let buf = Buffer.alloc(0);
    const status: Buffer[] = [];
    let statusBytes = 0;
    let failure: ExecStreamError | undefined;
    let settled = false;
    const fail = (err: ExecStreamError): void => {
      failure ??= err;
      sock.destroy();
    };
    // One wait for a drain at a time, each way: a listener per frame would pile up.
    let stdinWaits = false;
    let outputWaits = false;
    const onData = (chunk: Buffer): void => {
      let full = false;
      for (let i = 0; i < chunk.length; i += STDIN_FRAME) full = !sock.write(dataFrame(ID.stdin, 0, chunk.subarray(i, i + STDIN_FRAME))) || full;
      if (full && !stdinWaits) {
        stdinWaits = true;
        streams.stdin.pause();
        sock.once('drain', () => {
          stdinWaits = false;
          streams.stdin.resume();
        });
      }
    };
    const onEnd = (): void => void sock.write(dataFrame(ID.stdin, FLAG_FIN, Buffer.alloc(0)));
    const detach = (): void => {
      streams.stdin.removeListener('data', onData);
      streams.stdin.removeListener('end', onEnd);
    };
    const open = (): void => {
      upgraded = true;
      sock.write(
        Buffer.concat([
          synStream(ID.error, [['streamtype', 'error']], true),
          synStream(ID.stdin, [['streamtype', 'stdin']], false),
          synStream(ID.stdout, [['streamtype', 'stdout']], false),
          synStream(ID.stderr, [['streamtype', 'stderr']], false),
        ]),
      );
      streams.stdin.on('data', onData);
      streams.stdin.on('end', onEnd);
      streams.stdin.resume();
    };
    const frames = (): void => {
      while (buf.length >= 8 && !failure) {
        const len = buf.readUInt32BE(4) & 0xffffff;
        if (len > MAX_FRAME) return fail(new ExecStreamError(`the runtime's streaming server sent a frame of ${len} bytes: refused`));
        if (buf.length < 8 + len) return;
        const frame = buf.subarray(0, 8 + len);
        buf = buf.subarray(8 + len);
        const body = frame.subarray(8);
        if ((frame[0] as number) & 0x80) {
          const type = frame.readUInt16BE(2);
          // A PING from the server is answered with itself; a GOAWAY or a reset ends what it ends;
          // replies, settings, headers and window updates say nothing podrun uses.
          if (type === TYPE.ping) sock.write(frame);
          continue;
        }
        const id = frame.readUInt32BE(0) & 0x7fffffff;
        if (!body.length) continue;
        if (id === ID.stdout || id === ID.stderr) {
          const out = id === ID.stdout ? streams.stdout : streams.stderr;
          // The caller's pace: the socket waits while its output does.
          if (!out.write(body) && !outputWaits) {
            outputWaits = true;
            sock.pause();
            out.once('drain', () => {
              outputWaits = false;
              sock.resume();
            });
          }
        } else if (id === ID.error) {
          statusBytes += body.length;
          if (statusBytes > maxStatus)
            return fail(new ExecStreamError(`the runtime's streaming server sent a status of more than ${maxStatus} bytes: refused`));
          status.push(body);
        }
        // Data on any other stream (one podrun did not open) is dropped.
      }
    };
    sock.on('connect', () => {
      sock.write(
        `POST ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n`,
      );
    });
    sock.on('data', (chunk: Buffer) => {
      if (upgraded) {
        buf = Buffer.concat([buf, chunk]);
        return frames();
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > MAX_HEAD) fail(new ExecStreamError("the runtime's streaming server sent an endless response head"));
        return;
      }
      const text = head.subarray(0, end).toString('latin1');
      const statusLine = text.split('\r\n')[0] ?? '';
      if (!/^HTTP\/1\.1 101 /.test(statusLine))
        return fail(new ExecStreamError(`the runtime's streaming server refused the session: ${statusLine.slice(0, 200)}`));
      if (!/^x-stream-protocol-version:\s*v4\.channel\.k8s\.io\s*$/im.test(text))
        return fail(new ExecStreamError("the runtime's streaming server did not agree to v4.channel.k8s.io over SPDY"));
      buf = head.subarray(end + 4);
      open();
      frames();
    });
    // A connection that breaks after the status came (the server closing on unread bytes) ended
    // the session as sessions end: the status stands.
    let broken: ExecStreamError | undefined;
    sock.on('error', (err) => {
      broken ??= new ExecStreamError(
        upgraded
          ? `the runtime's streaming server ended the session without the command's exit status (${err.message})`
          : `the runtime's streaming server refused the session: ${err.message}`,
      );
    });
    sock.on('close', () => {
      if (settled) return;
      settled = true;
      detach();
      sessionEnd(failure, broken, status).then(resolve, reject);
    });
  });
}
