import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execHandler, grpcStatusOf, httpGetHandler, resolvePort, runHook, tcpHandler, type HandlerContext } from '../../src/probe/handlers.js';

let port = 0;
let endlessClosed = false;
/** A raw server that dribbles its status line and headers a byte at a time, forever. */
const dribbler = createNetServer((sock) => {
  const text = 'HTTP/1.1 200 OK\r\nX-Slow: ' + 'y'.repeat(100000);
  let i = 0;
  const t = setInterval(() => (i < text.length ? sock.write(text[i++]!) : undefined), 20);
  sock.on('close', () => clearInterval(t));
  sock.on('error', () => clearInterval(t));
});
let dribblePort = 0;
const seen: Record<string, string | undefined>[] = [];
const server = createServer((req, res) => {
  seen.push({ url: req.url, ua: req.headers['user-agent'], x: req.headers['x-probe'] as string | undefined });
  if (req.url === '/ok') return res.writeHead(200).end('ok');
  if (req.url === '/moved') return res.writeHead(302, { location: '/ok' }).end();
  if (req.url === '/away') return res.writeHead(302, { location: 'http://other.invalid/' }).end();
  if (req.url === '/slow') return void setTimeout(() => res.writeHead(200).end(), 2000);
  if (req.url === '/endless-fast') {
    // A server that never stops sending: the probe must read 10 KiB and hang up.
    res.writeHead(200);
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const pump = (): void => {
      while (!res.destroyed && res.write(chunk));
      if (!res.destroyed) res.once('drain', pump);
    };
    res.on('close', () => (endlessClosed = true));
    return pump();
  }
  if (req.url === '/endless-slow') {
    res.writeHead(200);
    const t = setInterval(() => res.write('x'), 20);
    res.on('close', () => clearInterval(t));
    return;
  }
  res.writeHead(500).end('boom');
});

beforeAll(async () => {
  await new Promise<void>((r) => dribbler.listen(0, '127.0.0.1', () => r()));
  const d = dribbler.address();
  dribblePort = typeof d === 'object' && d ? d.port : 0;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const a = server.address();
  port = typeof a === 'object' && a ? a.port : 0;
});
afterAll(() => {
  dribbler.close();
  server.closeAllConnections();
  server.close();
});

const ctx = (over: Partial<HandlerContext> = {}): HandlerContext => ({
  containerId: 'x',
  container: { name: 'c', image: 'i', ports: [{ name: 'http', containerPort: port }] },
  defaultHost: '127.0.0.1',
  timeoutMs: 500,
  exec: async () => ({ exitCode: 0, output: '' }),
  ...over,
});

const openDribbles = (): Promise<number> => new Promise((res) => dribbler.getConnections((_, n) => res(n)));
/** What is polled for comes in milliseconds; the room is for a loaded machine, never a figure asserted. */
const POLL = { timeout: 10_000, interval: 20 };

describe('probe handlers', () => {
  it('httpGet fails at its timeout however slowly the headers dribble in, and closes the connection', async () => {
    // The dribbler's headers take 2,000 s to arrive (past Node's 16 KiB header limit after 5 min):
    // an answer at all is the deadline's, and the message says which deadline. A deadline that
    // each byte put off would never answer, and the test would time out.
    const r = await httpGetHandler({ port: dribblePort, path: '/' }, ctx({ timeoutMs: 400 }));
    expect(r).toEqual({ ok: false, message: expect.stringContaining('Client.Timeout exceeded after 0.4s') });
    await expect.poll(openDribbles, POLL).toBe(0);
  });

  it('httpGet reads at most 10 KiB of an endless body, then hangs up; the status decides, as the kubelet', async () => {
    const r = await httpGetHandler({ port, path: '/endless-fast' }, ctx());
    expect(r).toEqual({ ok: true });
    await expect.poll(() => endlessClosed, POLL).toBe(true);
    // An endless body too slow to reach 10 KiB in time fails at the deadline.
    const slow = await httpGetHandler({ port, path: '/endless-slow' }, ctx({ timeoutMs: 300 }));
    expect(slow).toEqual({ ok: false, message: expect.stringContaining('Client.Timeout exceeded') });
  });

  it('httpGet: 2xx and 3xx pass, others fail, named ports resolve, headers are sent', async () => {
    expect(await httpGetHandler({ port: 'http', path: '/ok', httpHeaders: [{ name: 'X-Probe', value: 'yes' }] }, ctx())).toEqual({ ok: true });
    expect(seen.at(-1)).toMatchObject({ url: '/ok', x: 'yes', ua: 'kube-probe/1.31 (podrun)' });
    expect(await httpGetHandler({ port, path: '/moved' }, ctx())).toEqual({ ok: true });
    expect((await httpGetHandler({ port, path: '/away' }, ctx())).ok).toBe(true); // not followed: another host
    expect(await httpGetHandler({ port, path: '/fail' }, ctx())).toEqual({ ok: false, message: 'HTTP probe failed with statuscode: 500' });
    const slow = await httpGetHandler({ port, path: '/slow' }, ctx());
    expect(slow.ok).toBe(false);
  });

  it('exec: exit 0 passes, another code fails; a container that stopped under the exec is a prober error, not a failure', async () => {
    const run = (exitCode: number, output: string): HandlerContext => ctx({ exec: async () => ({ exitCode, output }) });
    expect(await execHandler({ command: ['true'] }, run(0, ''))).toEqual({ ok: true });
    expect(await execHandler({ command: ['false'] }, run(1, 'no\n'))).toEqual({ ok: false, message: 'command exited with 1: no' });
    expect(
      await execHandler(
        { command: ['nope'] },
        run(126, 'OCI runtime exec failed: exec failed: unable to start container process: exec: "nope": executable file not found in $PATH: unknown'),
      ),
    ).toMatchObject({ ok: false });
    // The engine says so as data (each engine in its own module), whatever its words.
    const stopped = ctx({ exec: async () => ({ notRun: 'container-not-running', detail: 'cannot exec in a stopped container' }) });
    await expect(execHandler({ command: ['true'] }, stopped)).rejects.toThrow('cannot run the command: cannot exec in a stopped container');
    // The same words in a command's own output are the command's failure.
    expect(await execHandler({ command: ['true'] }, run(126, 'cannot exec in a stopped container'))).toMatchObject({ ok: false });
  });

  it('a hook that never returns is let go when its pod is deleted: the exec and the connection are told, the result comes at once', async () => {
    const ac = new AbortController();
    let told: AbortSignal | undefined;
    const hung = ctx({ timeoutMs: 120_000, signal: ac.signal, exec: (_id, _cmd, _t, signal) => ((told = signal), new Promise(() => undefined)) });
    const hooks = [
      runHook({ exec: { command: ['sleep', '3600'] } }, hung),
      runHook({ httpGet: { port: dribblePort, path: '/' } }, hung),
      runHook({ sleep: { seconds: 3600 } }, hung),
    ];
    const results: unknown[] = [];
    for (const h of hooks) void h.then((r) => results.push(r));
    // The httpGet hook is under way (its connection open) before the pod goes.
    await expect.poll(openDribbles, POLL).toBe(1);
    expect(results).toEqual([]);
    ac.abort();
    // At once: settled before the event loop's next turn, with no timer or answer waited for.
    await new Promise((res) => setImmediate(res));
    const cancelled = { ok: false, message: 'cancelled: the pod is being deleted' };
    expect(results).toEqual([cancelled, cancelled, cancelled]);
    expect(told?.aborted).toBe(true);
    await expect.poll(openDribbles, POLL).toBe(0);
    // Already cancelled: nothing is run.
    let ran = false;
    expect(await runHook({ exec: { command: ['true'] } }, ctx({ signal: ac.signal, exec: async () => ((ran = true), { exitCode: 0, output: '' }) }))).toEqual(
      cancelled,
    );
    expect(ran).toBe(false);
  });

  it('tcpSocket: connect is success, refusal is failure', async () => {
    expect(await tcpHandler({ port }, ctx())).toEqual({ ok: true });
    const closed = await tcpHandler({ port: 1 }, ctx());
    expect(closed.ok).toBe(false);
  });

  it('resolves ports and reads gRPC health responses', () => {
    expect(resolvePort('http', ctx().container)).toBe(port);
    expect(resolvePort('8080', ctx().container)).toBe(8080);
    expect(resolvePort('nope', ctx().container)).toBeUndefined();
    expect(grpcStatusOf(Buffer.from([0, 0, 0, 0, 2, 0x08, 1]))).toBe(1);
    expect(grpcStatusOf(Buffer.from([0, 0, 0, 0, 0]))).toBe(0);
  });
});
