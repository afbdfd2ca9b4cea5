import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execHandler, grpcStatusOf, httpGetHandler, resolvePort, tcpHandler, type HandlerContext } from '../../src/probe/handlers.js';

let port = 0;
const seen: Record<string, string | undefined>[] = [];
const server = createServer((req, res) => {
  seen.push({ url: req.url, ua: req.headers['user-agent'], x: req.headers['x-probe'] as string | undefined });
  if (req.url === '/ok') return res.writeHead(200).end('ok');
  if (req.url === '/moved') return res.writeHead(302, { location: '/ok' }).end();
  if (req.url === '/away') return res.writeHead(302, { location: 'http://other.invalid/' }).end();
  if (req.url === '/slow') return void setTimeout(() => res.writeHead(200).end(), 2000);
  res.writeHead(500).end('boom');
});

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const a = server.address();
  port = typeof a === 'object' && a ? a.port : 0;
});
afterAll(() => {
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

describe('probe handlers', () => {
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
    expect(await execHandler({ command: ['nope'] }, run(126, 'OCI runtime exec failed: exec failed: unable to start container process: exec: "nope": executable file not found in $PATH: unknown'))).toMatchObject({ ok: false });
    await expect(execHandler({ command: ['true'] }, run(126, 'OCI runtime exec failed: exec failed: cannot exec in a stopped container: unknown'))).rejects.toThrow('cannot run the command');
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
