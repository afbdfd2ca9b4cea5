import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentSuite, pastRelist } from './agent-helpers.js';
import { containerIds, freePort, TEST_IMAGE, unique, until } from './helpers.js';

// What a misbehaving writer or container sends the agent (issue 20).
const suite = new AgentSuite('hostile');
const { world, ns } = suite;

describe('a manifest rewritten faster than it settles', () => {
  it('500 rewrites in 10 s between two versions, ending on the one in force, replace nothing', { timeout: 90_000 }, async () => {
    const dir = join(world.dir, unique('flap'));
    mkdirSync(dir);
    const name = unique('flap');
    const file = join(dir, 'pod.yaml');
    const version = (v: string): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: a, image: ${TEST_IMAGE}, command: [sleep, '3600'], env: [{name: V, value: '${v}'}]}]
`;
    writeFileSync(file, version('one'));
    const agent = suite.run(['--manifest-dir', dir]);
    const first = await until('the pod to run', async () => (await containerIds(ns, name)).a);
    for (let i = 0; i < 250; i++) {
      writeFileSync(file, version('two'));
      await new Promise((r) => setTimeout(r, 20));
      writeFileSync(file, version('one'));
      await new Promise((r) => setTimeout(r, 20));
    }
    await pastRelist(agent);
    // Version two never stayed 300 ms: it was never applied.
    expect((await containerIds(ns, name)).a).toBe(first);
    expect(agent.logs()).not.toMatch(/starting container a \(.*spec changed/);
    // A version that stays is applied once.
    writeFileSync(file, version('three'));
    await until('the settled version to run', async () => ((await containerIds(ns, name)).a !== first ? true : undefined));
  });
});

describe('a local client that holds connections open', () => {
  it('400 half-sent requests cost the agent at most 256 fds, for seconds, and /healthz answers after', { timeout: 60_000 }, async () => {
    const port = await freePort();
    const agent = suite.run(['--http-port', String(port)]);
    await agent.started();
    const fds = (): number => readdirSync(`/proc/${agent.proc.pid}/fd`).length;
    const before = fds();
    const sockets: Socket[] = [];
    let closed = 0;
    for (let i = 0; i < 400; i++) {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      s.on('close', () => closed++);
      // Slowloris: the headers begin and never end.
      s.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      sockets.push(s);
    }
    // The agent has taken every one of them: each is an fd it holds or a socket it closed (past its
    // 256 it closes at once; every connection it holds costs an fd until its 10 s headers timeout).
    await until('the agent to take every connection', async () => (closed + Math.max(0, fds() - before) >= sockets.length ? true : undefined), 30_000);
    expect(fds() - before).toBeLessThanOrEqual(256 + 8);
    // The agent answers them 408 at its headers timeout and lets go of them, whatever the client does.
    await until('the agent to let go of the held connections', async () => (fds() - before <= 8 ? true : undefined), 30_000).catch((err: Error) => {
      throw new Error(`${err.message} (${fds() - before} fds over the start, ${closed} closed by the client's side)`);
    });
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(res.status).toBe(200);
    for (const s of sockets) s.destroy();
  });
});
