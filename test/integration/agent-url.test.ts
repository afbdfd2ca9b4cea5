import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LABEL } from '../../src/runtime/labels.js';
import { agentMetric, AgentSuite, pastRelist, type AgentProcess } from './agent-helpers.js';
import { containerIds, docker, freePort, podContainers, serveLocal, TEST_IMAGE, unique, until } from './helpers.js';

const suite = new AgentSuite('agenturl');
const { ns } = suite;
let agent: AgentProcess | undefined;

type Mode = 'ok' | 'error' | 'garbage' | 'slow' | 'empty';

/** A manifest server on 127.0.0.1 that answers conditional requests and can misbehave on cue. */
class ManifestServer {
  body = '';
  mode: Mode = 'ok';
  requests = 0;
  notModified = 0;
  authorized = 0;
  private served: Awaited<ReturnType<typeof serveLocal>> | undefined;

  get port(): number {
    return this.served?.port ?? 0;
  }

  async start(port = 0): Promise<void> {
    this.served = await serveLocal((req, res) => {
      this.requests++;
      if (req.headers['x-token'] === 'secret') this.authorized++;
      const etag = `"${createHash('sha256').update(this.body).digest('hex').slice(0, 16)}"`;
      switch (this.mode) {
        case 'error':
          res.writeHead(500).end('boom');
          return;
        case 'garbage':
          res.writeHead(200, { 'content-type': 'application/yaml' }).end('{{{ not: yaml: at all');
          return;
        case 'empty':
          res.writeHead(200).end('');
          return;
        case 'slow':
          setTimeout(() => res.writeHead(200, { etag }).end(this.body), 3000);
          return;
        default:
          if (req.headers['if-none-match'] === etag) {
            this.notModified++;
            res.writeHead(304, { etag }).end();
            return;
          }
          res.writeHead(200, { etag, 'content-type': 'application/yaml' }).end(this.body);
      }
    }, port);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/pods.yaml`;
  }

  async close(): Promise<void> {
    await this.served?.close();
  }
}

function podList(names: string[], env = 'one'): string {
  const items = names.map(
    (n) => `- apiVersion: v1
  kind: Pod
  metadata: {name: ${n}, namespace: ${ns}}
  spec:
    terminationGracePeriodSeconds: 1
    containers:
    - {name: a, image: ${TEST_IMAGE}, command: [sleep, '3600']}
    - {name: b, image: ${TEST_IMAGE}, command: [sleep, '3600'], env: [{name: V, value: ${env}}]}`,
  );
  return `apiVersion: v1\nkind: PodList\nitems:\n${items.join('\n')}\n`;
}

async function running(name: string): Promise<Record<string, string>> {
  return until(`pod ${name} to run`, async () => {
    const up = (await podContainers(ns, name)).filter((c) => c.State === 'running').map((c) => c.Labels[LABEL.containerName]);
    return ['POD', 'a', 'b'].every((n) => up.includes(n)) ? containerIds(ns, name) : undefined;
  });
}

describe('the agent with a polled URL', () => {
  it('applies what is served, answers 304s without work, and keeps pods through every failure', async () => {
    const server = new ManifestServer();
    await server.start();
    const name = unique('url');
    server.body = podList([name]);
    agent = suite.run(['--manifest-url', server.url, '--manifest-url-header', 'X-Token: secret', '--url-timeout', '1s']);
    await agent.started();
    const first = await running(name);

    // Unchanged polls are conditional and answered 304.
    await until('conditional polls', async () => (server.notModified >= 2 ? true : undefined));
    expect(server.authorized).toBe(server.requests);

    server.body = podList([name], 'two');
    const second = await until('the served change to apply', async () => {
      const ids = await containerIds(ns, name);
      return ids.b !== first.b ? ids : undefined;
    });
    expect(second.a).toBe(first.a);

    for (const mode of ['error', 'garbage', 'slow', 'empty'] as Mode[]) {
      server.mode = mode;
      const seen = server.requests;
      await until(`polls while ${mode}`, async () => (server.requests >= seen + 2 ? true : undefined), 20_000);
      expect([mode, await containerIds(ns, name)]).toEqual([mode, second]);
    }
    expect(agent.logs()).toContain('HTTP 500 (keeping the last good set)');
    expect(agent.logs()).toContain('empty body');
    // The slow answer (headers after 3 s) is ended by the 1 s --url-timeout, named with what it ended.
    expect(agent.logs()).toContain(
      `cannot fetch: total timeout (1s for the whole fetch) ran out while waiting for the response headers from http://127.0.0.1:${server.port} (keeping the last good set)`,
    );

    server.mode = 'ok';
    await server.close();
    await pastRelist(agent); // the server down past a relist: still untouched
    expect(await containerIds(ns, name)).toEqual(second);

    // An explicit empty PodList does delete.
    await server.start(server.port);
    server.body = 'apiVersion: v1\nkind: PodList\nitems: []\n';
    await until('the pod to be deleted by an empty PodList', async () => ((await podContainers(ns, name)).length === 0 ? true : undefined));
    await server.close();
  });

  it('boots pods from the cached body when the URL is down at start', async () => {
    const server = new ManifestServer();
    await server.start();
    const name = unique('cache');
    server.body = podList([name]);
    agent = suite.run(['--manifest-url', server.url]);
    await agent.started();
    await running(name);
    await agent.stop();
    agent = undefined;

    // The box reboots without network: containers gone, server unreachable.
    await server.close();
    for (const c of await podContainers(ns, name)) await docker.getContainer(c.Id).remove({ force: true });
    agent = suite.run(['--manifest-url', server.url]);
    await agent.started();
    await running(name);
    expect(agent.logs()).toContain('using the cached copy');
  });
});

/** A static file server as people run them, serving `dir` on a free loopback port. */
async function staticServer(kind: 'python' | 'busybox', dir: string): Promise<{ url: string; close: () => Promise<void> }> {
  const port = await freePort();
  const proc =
    kind === 'python'
      ? spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', dir], { stdio: 'ignore' })
      : spawn('/bin/busybox', ['httpd', '-f', '-p', `127.0.0.1:${port}`, '-h', dir], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}/pods.yaml`;
  await until(`${kind} to serve`, async () => {
    try {
      return (await fetch(url)).ok ? true : undefined;
    } catch {
      return undefined;
    }
  });
  return {
    url,
    close: async () => {
      proc.kill();
      if (proc.exitCode === null && proc.signalCode === null) await once(proc, 'exit');
    },
  };
}

/**
 * Replaces the file with `text` stamped with `mtime`: to the server, exactly what a write within
 * that second leaves (the time is pinned so the test does not race the clock; the rename keeps a
 * half-made file from being served).
 */
function rewrite(file: string, text: string, mtime: Date): void {
  writeFileSync(`${file}.new`, text);
  utimesSync(`${file}.new`, mtime, mtime);
  renameSync(`${file}.new`, file);
}

/** Waits for the agent to take a set with this text. */
async function tookAt(a: AgentProcess, text: string): Promise<void> {
  await a.waitForLog(`took a new set (sha256 ${createHash('sha256').update(text).digest('hex').slice(0, 12)}`);
}

async function runningWith(name: string, value: string): Promise<void> {
  await until(
    `pod ${name} to run with V=${value}`,
    async () => {
      for (const c of await podContainers(ns, name)) {
        if (c.State !== 'running' || c.Labels[LABEL.containerName] !== 'b') continue;
        if ((await docker.getContainer(c.Id).inspect()).Config.Env.includes(`V=${value}`)) return true;
      }
      return undefined;
    },
    60_000,
  );
}

describe('the agent behind a static server whose validators have one-second resolution', () => {
  // The agent polls every 1 s (10 % jitter).
  // Polls, counted by the agent's own metric: the next one after a write takes it (a poll may be
  // under way as the file is written, and one may start before the count is read). An agent that
  // trusted the colliding validators would answer 304 until its one plain GET in fifteen.
  const WITHIN_POLLS = 3;
  const polls = (a: AgentProcess): Promise<number> => agentMetric(a, 'podrun_url_fetches_total');

  for (const kind of ['python', 'busybox'] as const) {
    it(`takes two same-second, same-length rewrites behind ${kind} within two periods, also across a restart`, async () => {
      const dir = join(suite.world.dir, unique('www'));
      mkdirSync(dir);
      const file = join(dir, 'pods.yaml');
      const name = unique(kind === 'python' ? 'py' : 'bb');
      const version = (v: string): string => podList([name], v); // v1, v2, ...: every version the same length
      writeFileSync(file, version('v1'));
      const second = statSync(file).mtime;
      const server = await staticServer(kind, dir);
      try {
        agent = suite.run(['--manifest-url', server.url]);
        await tookAt(agent, version('v1'));
        for (const v of ['v2', 'v3']) {
          const before = await polls(agent);
          rewrite(file, version(v), second);
          await tookAt(agent, version(v));
          expect((await polls(agent)) - before, `polls until ${v} was taken`).toBeLessThanOrEqual(WITHIN_POLLS);
        }
        await runningWith(name, 'v3');

        // v3 in force and cached with its validators; the agent stopped; v4 written within the
        // same second, the same length: the validators the cache holds match v4 too.
        await agent.stop();
        rewrite(file, version('v4'), second);
        agent = suite.run(['--manifest-url', server.url]);
        await tookAt(agent, version('v4'));
        expect(await polls(agent), 'polls until v4 was taken').toBeLessThanOrEqual(WITHIN_POLLS);
        await runningWith(name, 'v4');
      } finally {
        await server.close();
      }
    }, 120_000);
  }
});
