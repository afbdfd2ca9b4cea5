import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { agentPost, agentSocketPath, type ApplyAnswer, type ApplyAsk } from '../../src/server/client.js';
import { startServer, type AgentView } from '../../src/server/server.js';

// The verbs that change pods are asked on the agent's socket only: `POST /pods/apply` (with
// /pods/delete and /images/pull). The socket is a boundary: a body too large or of the wrong form
// is refused before the agent is asked, its fault named; the TCP port never serves them.

const TOKEN = 'a-token-of-some-length-0123456789';

/** The agent's side, answering as a test says and counting what it was asked. */
function fakeView(answer: (ask: ApplyAsk) => Promise<ApplyAnswer>): AgentView & { asked: ApplyAsk[] } {
  const asked: ApplyAsk[] = [];
  const none = (): Promise<never> => Promise.reject(new Error('not asked in this test'));
  return {
    asked,
    healthy: () => true,
    unhealthy: () => undefined,
    podList: none,
    events: () => [],
    metrics: none,
    containerMetrics: none,
    node: none,
    statsSummary: none,
    collect: none,
    collectImages: none,
    deletePods: none,
    pullImages: none,
    applyPods: (ask) => {
      asked.push(ask);
      return answer(ask);
    },
  };
}

const PLAN: ApplyAnswer = { plans: [{ key: 'default/web', verdict: 'created', actions: { containersToKill: [], containersToStart: [] } }] };

const pod = (name: string): Record<string, unknown> => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: { containers: [{ name: 'c', image: 'busybox' }] },
});

const ASK: ApplyAsk = { applySet: '0123456789abcdef', pods: [{ source: 'file:/m/web.yaml', pod: pod('web') as never }], prune: false, dryRun: false };

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
    srv.on('error', reject);
  });
}

/** One request, its body sent in chunks of `chunk` bytes (no content-length when `chunked`). */
function send(
  to: { socketPath: string } | { port: number },
  path: string,
  o: { method?: string; body?: string; token?: string; chunked?: boolean } = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { 'content-type': 'application/json' };
    if ('port' in to) headers.host = `127.0.0.1:${to.port}`;
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    if (o.body !== undefined && !o.chunked) headers['content-length'] = Buffer.byteLength(o.body);
    const req = request({ ...('port' in to ? { host: '127.0.0.1', port: to.port } : to), path, method: o.method ?? 'POST', headers }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    if (o.body !== undefined && o.chunked) {
      for (let i = 0; i < o.body.length; i += 1 << 20) req.write(o.body.slice(i, i + (1 << 20)));
      req.end();
    } else req.end(o.body);
  });
}

const closers: (() => Promise<void>)[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function serve(view: AgentView): Promise<{ stateDir: string; socket: { socketPath: string }; port: number }> {
  const stateDir = mkdtempSync(join(tmpdir(), 'podrun-server-'));
  dirs.push(stateDir);
  const port = await freePort();
  closers.push(await startServer(view, { stateDir, port, token: TOKEN }));
  return { stateDir, socket: { socketPath: agentSocketPath(stateDir) }, port };
}

describe('POST /pods/apply on the socket', () => {
  it('hands the agent the set as asked and answers its plan; a set it refuses is 422 with its reasons', async () => {
    let refuse = false;
    const view = fakeView(async () => (refuse ? { refused: ['/m/web.yaml (pods[0] as sent):1:2 spec: invalid'] } : PLAN));
    const { stateDir } = await serve(view);
    const r = await agentPost<ApplyAnswer>(stateDir, '/pods/apply', ASK, 5000);
    expect(r.status).toBe(200);
    expect(r.body).toEqual(PLAN);
    expect(view.asked).toEqual([ASK]);
    refuse = true;
    const refused = await agentPost<ApplyAnswer>(stateDir, '/pods/apply', ASK, 5000);
    expect(refused.status).toBe(422);
    expect(JSON.parse(refused.text)).toEqual({ refused: ['/m/web.yaml (pods[0] as sent):1:2 spec: invalid'] });
  });

  it('an agent that fails (a full disk) answers 500 with its message', async () => {
    const { stateDir } = await serve(fakeView(() => Promise.reject(new Error('cannot record the applied set in /s/applied: ENOSPC'))));
    const r = await agentPost<ApplyAnswer>(stateDir, '/pods/apply', ASK, 5000);
    expect(r).toEqual({ status: 500, text: 'cannot record the applied set in /s/applied: ENOSPC\n' });
  });

  it('refuses a body of the wrong form with 400, naming the field, and never asks the agent', async () => {
    const view = fakeView(async () => PLAN);
    const { socket } = await serve(view);
    const bad: [unknown, string][] = [
      [[], 'expected a JSON object {"applySet", "pods", "prune", "dryRun"}'],
      [{ ...ASK, applySet: '../../etc/cron.d/x' }, "applySet: expected the set's id, 16 hex digits"],
      [{ ...ASK, applySet: 'ABCDEF0123456789' }, "applySet: expected the set's id, 16 hex digits"],
      [{ ...ASK, prune: 'yes' }, 'prune: expected true or false'],
      [{ applySet: ASK.applySet, pods: [], prune: false }, 'dryRun: expected true or false'],
      [{ ...ASK, pods: {} }, 'pods: expected a list of {"source", "pod"}'],
      [{ ...ASK, extra: 1 }, '"extra": unknown field'],
      [{ ...ASK, pods: [ASK.pods[0], { pod: pod('db') }] }, 'pods[1].source: expected where the pod was applied from'],
      [{ ...ASK, pods: [{ source: 'file:/a\nfile:/b', pod: pod('db') }] }, 'pods[0].source: expected where the pod was applied from'],
      [{ ...ASK, pods: [{ source: 'stdin', pod: 'kind: Pod' }] }, 'pods[0].pod: expected a Pod object'],
      [{ ...ASK, pods: [{ source: 'stdin', pod: { ...pod('db'), kind: 'PodList' } }] }, 'pods[0].pod.kind: expected "Pod"'],
      [{ ...ASK, pods: [{ source: 'stdin', pod: pod('db'), uid: 'x' }] }, 'pods[0]."uid": unknown field'],
    ];
    for (const [body, message] of bad) {
      const r = await send(socket, '/pods/apply', { body: JSON.stringify(body) });
      expect({ status: r.status, text: r.text }, JSON.stringify(body)).toEqual({ status: 400, text: expect.stringContaining(`bad request: ${message}`) });
    }
    expect(await send(socket, '/pods/apply', { body: '{"applySet": ' })).toEqual({ status: 400, text: 'bad request: the body is not JSON\n' });
    expect((await send(socket, '/pods/apply', { method: 'GET' })).status).toBe(405);
    expect(view.asked).toEqual([]);
  });

  it('refuses a body over 10 MiB with 413, told or found while read, and the client hears it', async () => {
    const view = fakeView(async () => PLAN);
    const { stateDir, socket } = await serve(view);
    const big = { ...ASK, pods: [{ source: 'stdin', pod: { ...pod('big'), metadata: { name: 'big', annotations: { a: 'x'.repeat(10 << 20) } } } }] };
    // As the CLI sends it: its length said first.
    const told = await agentPost<ApplyAnswer>(stateDir, '/pods/apply', big, 5000);
    expect({ status: told.status, text: told.text }).toEqual({ status: 413, text: 'bad request: request body over 10 MiB\n' });
    // Chunked, no length said: found while it is read.
    const found = await send(socket, '/pods/apply', { body: JSON.stringify(big), chunked: true });
    expect(found).toEqual({ status: 413, text: 'bad request: request body over 10 MiB\n' });
    // A body just under the bound is read whole.
    const under = {
      ...ASK,
      pods: [{ source: 'stdin', pod: { ...pod('under'), metadata: { name: 'under', annotations: { a: 'x'.repeat((10 << 20) - 1000) } } } }],
    };
    expect((await agentPost<ApplyAnswer>(stateDir, '/pods/apply', under, 5000)).status).toBe(200);
    expect(view.asked.map((a) => a.pods[0]?.source)).toEqual(['stdin']);
    // The other socket-only paths keep their own, smaller bound.
    const del = await agentPost(stateDir, '/pods/delete', { pods: [{ uid: 'u', key: 'x'.repeat(2 << 20) }] }, 5000);
    expect({ status: del.status, text: del.text }).toEqual({ status: 413, text: 'bad request: request body over 1 MiB\n' });
  });

  it('is never served on the TCP port: 401 without the token, 403 with it, and the agent is never asked', async () => {
    const view = fakeView(async () => PLAN);
    const { port } = await serve(view);
    const body = JSON.stringify(ASK);
    const without = await send({ port }, '/pods/apply', { body });
    expect(without.status).toBe(401);
    const withToken = await send({ port }, '/pods/apply', { body, token: TOKEN });
    expect(withToken).toEqual({ status: 403, text: "forbidden: only on the agent's socket\n" });
    expect(view.asked).toEqual([]);
  });
});
