import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { exitCodeOf, streamExec, streamingUrl } from '../../src/runtime/cri/exec-stream.js';

// The client side of the runtime's streaming server, against a server of the test's own that
// misbehaves on purpose: what it sends comes from a container, and the URL from the wire.

/** A WebSocket frame from the server (unmasked, one frame). */
function frame(payload: Buffer, opcode = 2): Buffer {
  const n = payload.length;
  const head =
    n < 126
      ? Buffer.from([0x80 | opcode, n])
      : n < 65536
        ? Buffer.from([0x80 | opcode, 126, n >> 8, n & 255])
        : Buffer.concat([Buffer.from([0x80 | opcode, 127, 0, 0, 0, 0]), Buffer.from([(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255])]);
  return Buffer.concat([head, payload]);
}

/** The client's messages (masked frames), as far as they have arrived. */
function clientMessages(raw: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let i = 0;
  while (i + 2 <= raw.length) {
    let len = (raw[i + 1] as number) & 127;
    let at = i + 2;
    if (len === 126) {
      len = raw.readUInt16BE(at);
      at += 2;
    } else if (len === 127) {
      len = Number(raw.readBigUInt64BE(at));
      at += 8;
    }
    if (at + 4 + len > raw.length) break;
    const mask = raw.subarray(at, at + 4);
    const data = Buffer.from(raw.subarray(at + 4, at + 4 + len).map((b, k) => b ^ (mask[k % 4] as number)));
    if (((raw[i] as number) & 15) === 2) out.push(data);
    i = at + 4 + len;
  }
  return out;
}

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A streaming server answering with `protocol`, then running `script` on the connection. */
async function server(
  protocol: string | undefined,
  script: (send: (channel: number, data: string | Buffer) => void, sock: Socket, received: () => Buffer[]) => void,
): Promise<string> {
  const s = createServer();
  servers.push(s);
  s.on('upgrade', (req, sock: Socket) => {
    const accept = createHash('sha1').update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    sock.write(
      [
        'HTTP/1.1 101 Switching Protocols',
        'Upgrade: websocket',
        'Connection: Upgrade',
        `Sec-WebSocket-Accept: ${accept}`,
        ...(protocol ? [`Sec-WebSocket-Protocol: ${protocol}`] : []),
        '',
        '',
      ].join('\r\n'),
    );
    let raw = Buffer.alloc(0);
    sock.on('data', (c: Buffer) => (raw = Buffer.concat([raw, c])));
    sock.on('error', () => undefined);
    script(
      (channel, data) => sock.write(frame(Buffer.concat([Buffer.from([channel]), Buffer.from(data)]))),
      sock,
      () => clientMessages(raw),
    );
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}/exec/token`;
}

function streams(): { stdin: PassThrough; stdout: PassThrough; stderr: PassThrough; text: () => { out: string; err: string } } {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString()));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  return { stdin, stdout, stderr, text: () => ({ out, err }) };
}

const SUCCESS = JSON.stringify({ metadata: {}, status: 'Success' });
const exit = (code: string): string =>
  JSON.stringify({
    status: 'Failure',
    reason: 'NonZeroExitCode',
    message: `command terminated with non-zero exit code: ${code}`,
    details: { causes: [{ reason: 'ExitCode', message: code }] },
  });
const bye = (sock: Socket): void => void sock.end(frame(Buffer.from([3, 232]), 8));

describe('the exec streaming URL', () => {
  it('is followed only to this host, over http(s), without credentials', () => {
    expect(streamingUrl('http://127.0.0.1:4321/exec/abc').href).toBe('ws://127.0.0.1:4321/exec/abc');
    expect(streamingUrl('https://[::1]:4321/exec/abc').protocol).toBe('wss:');
    expect(() => streamingUrl('http://192.0.2.7:4321/exec/abc')).toThrow(/not this host/);
    expect(() => streamingUrl('http://example.com/exec/abc')).toThrow(/not this host/);
    expect(() => streamingUrl('file:///etc/passwd')).toThrow(/not http/);
    expect(() => streamingUrl('http://u:p@127.0.0.1:1/exec')).toThrow(/credentials/);
    expect(() => streamingUrl('not a url')).toThrow(/not a URL/);
  });
});

describe('the exit status (v4: a metav1.Status on channel 3)', () => {
  it("is the command's exit code, or the runtime's refusal as an error", () => {
    expect(exitCodeOf(Buffer.from(SUCCESS))).toBe(0);
    expect(exitCodeOf(Buffer.from(exit('3')))).toBe(3);
    expect(exitCodeOf(Buffer.from(exit('255')))).toBe(255);
    expect(() => exitCodeOf(Buffer.from(exit('256')))).toThrow(/could not run/);
    expect(() => exitCodeOf(Buffer.from(exit('-1')))).toThrow(/could not run/);
    expect(() => exitCodeOf(Buffer.from(JSON.stringify({ status: 'Failure', reason: 'InternalError', message: 'OCI runtime exec failed' })))).toThrow(
      /could not run the command: OCI runtime exec failed/,
    );
    expect(() => exitCodeOf(Buffer.from('{nope'))).toThrow(/not JSON/);
    expect(() => exitCodeOf(undefined)).toThrow(/without the command's exit status/);
  });
});

describe('a session against a misbehaving streaming server', () => {
  it('splits stdout and stderr, ignores channels it has no use for, and exits with the status', async () => {
    const url = await server('v4.channel.k8s.io', (send, sock) => {
      send(1, '');
      send(1, 'out\n');
      send(2, 'err\n');
      send(0, 'to stdin?');
      send(4, '{"Width":1}');
      send(9, 'channel nine');
      send(255, Buffer.from([0]));
      send(3, exit('7'));
      bye(sock);
    });
    const s = streams();
    expect(await streamExec(url, { tty: false, stdin: false }, s)).toBe(7);
    expect(s.text()).toEqual({ out: 'out\n', err: 'err\n' });
  });

  it('refuses a status past its bound, and a server that hangs up without one', async () => {
    const big = await server('v4.channel.k8s.io', (send, sock) => {
      for (let i = 0; i < 20; i++) send(3, 'x'.repeat(1000));
      bye(sock);
    });
    await expect(streamExec(big, { tty: false, stdin: false }, streams(), { maxStatusBytes: 4096 })).rejects.toThrow(/status of more than 4096 bytes/);
    const hangup = await server('v4.channel.k8s.io', (send, sock) => {
      send(1, 'partial');
      sock.destroy();
    });
    await expect(streamExec(hangup, { tty: false, stdin: false }, streams())).rejects.toThrow(/without the command's exit status/);
  });

  it('refuses a server that speaks no protocol podrun asked for, or sends text', async () => {
    const none = await server(undefined, (_send, sock) => bye(sock));
    await expect(streamExec(none, { tty: false, stdin: false }, streams())).rejects.toThrow(/refused the session/);
    const text = await server('v4.channel.k8s.io', (send, sock) => {
      sock.write(frame(Buffer.from('1hello'), 1));
      send(3, SUCCESS);
      bye(sock);
    });
    await expect(streamExec(text, { tty: false, stdin: false }, streams())).rejects.toThrow(/text message/);
  });

  it('sends stdin on channel 0, the terminal size on channel 4, and on v5 the end of stdin', async () => {
    let got: Buffer[] = [];
    const url = await server('v5.channel.k8s.io', (send, sock, received) => {
      send(1, '');
      const wait = setInterval(() => {
        got = received();
        // stdin's end (255, 0) is the last thing the client sends: then the command "exits".
        if (!got.some((m) => m[0] === 255)) return;
        clearInterval(wait);
        send(3, SUCCESS);
        bye(sock);
      }, 5);
    });
    const s = streams();
    const run = streamExec(url, { tty: true, stdin: true, size: () => ({ rows: 33, columns: 101 }) }, s);
    s.stdin.end('typed');
    expect(await run).toBe(0);
    const text = got.map((m) => `${m[0]}:${m.subarray(1).toString('latin1')}`);
    expect(text).toEqual(['4:{"Width":101,"Height":33}', '0:typed', '255:\0']);
  });
});

describe('output the caller does not take', () => {
  it('ends the session once more than the bound is waiting for its reader', async () => {
    const url = await server('v4.channel.k8s.io', (send, sock) => {
      for (let i = 0; i < 64; i++) send(1, 'y'.repeat(1024));
      send(3, SUCCESS);
      bye(sock);
    });
    const s = streams();
    // A reader that never reads: everything written waits in the stream.
    const stuck = new PassThrough({ highWaterMark: 1 });
    await expect(streamExec(url, { tty: false, stdin: false }, { ...s, stdout: stuck }, { maxPendingOutput: 16 * 1024 })).rejects.toThrow(
      /more than 16384 bytes ahead of its reader/,
    );
  });
});
