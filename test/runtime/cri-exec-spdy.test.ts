import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { spdyExec } from '../../src/runtime/cri/exec-spdy.js';

// The SPDY session (`podrun exec -i` without a TTY) against a streaming server of the test's own
// that misbehaves on purpose: what it relays comes from a container.

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

function data(streamId: number, payload: string | Buffer, flags = 0): Buffer {
  const b = Buffer.from(payload);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(streamId, 0);
  head.writeUInt32BE(b.length, 4);
  head[4] = flags;
  return Buffer.concat([head, b]);
}

const PING = Buffer.from([0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 2]);

/** The client's data frames (stream id, flags, payload), as far as they arrived after its SYN_STREAMs. */
function clientData(raw: Buffer): { id: number; flags: number; data: string }[] {
  const out: { id: number; flags: number; data: string }[] = [];
  let i = 0;
  while (i + 8 <= raw.length) {
    const len = raw.readUInt32BE(i + 4) & 0xffffff;
    if (!((raw[i] as number) & 0x80)) out.push({ id: raw.readUInt32BE(i), flags: raw[i + 4] as number, data: raw.subarray(i + 8, i + 8 + len).toString() });
    i += 8 + len;
  }
  return out;
}

/** A server answering the upgrade with `head` (101 and v4 by default), then running `script`. */
async function server(
  script: (sock: Socket, received: () => Buffer) => void,
  head = 'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n',
): Promise<string> {
  const s = createServer((sock) => {
    let raw = Buffer.alloc(0);
    let upgraded = false;
    sock.on('error', () => undefined);
    sock.on('data', (c: Buffer) => {
      raw = Buffer.concat([raw, c]);
      if (upgraded) return;
      const end = raw.indexOf('\r\n\r\n');
      if (end < 0) return;
      upgraded = true;
      raw = raw.subarray(end + 4);
      sock.write(head);
      script(sock, () => raw);
    });
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}/exec/token`;
}

function streams(): { stdin: PassThrough; stdout: PassThrough; stderr: PassThrough; text: () => { out: string; err: string } } {
  const [stdin, stdout, stderr] = [new PassThrough(), new PassThrough(), new PassThrough()];
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString()));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  return { stdin, stdout, stderr, text: () => ({ out, err }) };
}

const exit = (code: string): string =>
  JSON.stringify({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: code }] } });

describe('podrun exec -i over SPDY against a misbehaving server', () => {
  it('sends stdin and its end (FIN), answers a ping, drops streams it did not open, exits with the status', async () => {
    let got: { id: number; flags: number; data: string }[] = [];
    let pong = false;
    const url = await server((sock, received) => {
      sock.write(Buffer.concat([PING, data(5, 'out\n'), data(7, 'err\n'), data(9, 'nine'), data(2, 'two')]));
      const wait = setInterval(() => {
        const raw = received();
        pong ||= raw.includes(PING);
        got = clientData(raw);
        if (!got.some((f) => f.id === 3 && f.flags & 1)) return;
        clearInterval(wait);
        sock.end(data(1, exit('9')));
      }, 5);
    });
    const s = streams();
    const run = spdyExec(url, s);
    s.stdin.end('typed');
    expect(await run).toBe(9);
    expect(s.text()).toEqual({ out: 'out\n', err: 'err\n' });
    expect(pong).toBe(true);
    expect(got.filter((f) => f.id === 3)).toEqual([
      { id: 3, flags: 0, data: 'typed' },
      { id: 3, flags: 1, data: '' },
    ]);
  });

  it('refuses an upgrade refused, a protocol not agreed, an endless head', async () => {
    const no = await server(() => undefined, 'HTTP/1.1 400 Bad Request\r\n\r\n');
    await expect(spdyExec(no, streams())).rejects.toThrow(/refused the session: HTTP\/1.1 400 Bad Request/);
    const v1 = await server(() => undefined, 'HTTP/1.1 101 Switching Protocols\r\nX-Stream-Protocol-Version: channel.k8s.io\r\n\r\n');
    await expect(spdyExec(v1, streams())).rejects.toThrow(/did not agree to v4/);
    const endless = await server(() => undefined, `HTTP/1.1 101 Switching Protocols\r\nX-Junk: ${'j'.repeat(20_000)}`);
    await expect(spdyExec(endless, streams())).rejects.toThrow(/endless response head/);
  });

  it('refuses a frame past its bound, a status past its bound, and a hangup without a status', async () => {
    const huge = await server((sock) => {
      const head = Buffer.alloc(8);
      head.writeUInt32BE(5, 0);
      head.writeUInt32BE(0xffffff, 4);
      sock.write(head);
    });
    await expect(spdyExec(huge, streams())).rejects.toThrow(/frame of 16777215 bytes/);
    const chatty = await server((sock) => sock.end(data(1, 'x'.repeat(70 * 1024))));
    await expect(spdyExec(chatty, streams())).rejects.toThrow(/status of more than 65536 bytes/);
    const gone = await server((sock) => sock.end(data(5, 'partial')));
    await expect(spdyExec(gone, streams())).rejects.toThrow(/without the command's exit status/);
  });

  it('keeps the status when the connection is reset after it (a server closing on unread bytes)', async () => {
    const url = await server((sock) => {
      sock.write(data(1, exit('4')));
      setTimeout(() => sock.resetAndDestroy(), 50);
    });
    expect(await spdyExec(url, streams())).toBe(4);
  });

  it('follows the URL only to this host', async () => {
    await expect(spdyExec('http://192.0.2.7:1/exec/x', streams())).rejects.toThrow(/not this host/);
  });
});
