import { chmodSync, chownSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { load as parse } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { AgentSuite, pastRelist, type AgentProcess } from './agent-helpers.js';
import { freePort, podContainers, TEST_IMAGE, unique, until } from './helpers.js';

const suite = new AgentSuite('sec');
const { world, ns } = suite;
let agent: AgentProcess | undefined;

function pod(name: string, extra = ''): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
    env: [{name: SECRET_ENV, value: hunter2}]
${extra}`;
}

/** Every file below a directory, recursively (sockets and dirs left out). */
function filesBelow(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? filesBelow(p) : e.isFile() ? [p] : [];
  });
}

function raw(port: number, method: string, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('secrets and doors', () => {
  it('never shows URL credentials: not in logs, status, labels, describe, get -o yaml or the cache; state is private', async () => {
    const name = unique('cred');
    let seenAuth = '';
    const server = createServer((req, res) => {
      seenAuth = req.headers.authorization ?? '';
      if (seenAuth !== `Basic ${Buffer.from('user:s3cretpw').toString('base64')}`) return void res.writeHead(401).end();
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [parse(pod(name))] }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      agent = suite.run(['--manifest-url', `http://user:s3cretpw@127.0.0.1:${port}/pods.json?token=tok3n`]);
      await agent.started();
      await until('the pod to run', async () => ((await podContainers(ns, name)).filter((c) => c.State === 'running').length === 2 ? true : undefined));
      const shown = [
        agent.logs(),
        ...filesBelow(world.stateDir).map((f) => readFileSync(f, 'utf8')),
        JSON.stringify((await podContainers(ns, name)).map((c) => c.Labels)),
        (await world.cli('describe', 'pod', '-n', ns, name)).out,
        (await world.cli('get', 'pods', '-n', ns, '-o', 'yaml')).out,
      ].join('\n');
      expect(shown).toContain(`url:http://user:***@127.0.0.1:${port}/pods.json?token=***`);
      expect(shown).not.toContain('s3cretpw');
      expect(shown).not.toContain('tok3n');
      // Private: the state dir is 0700, its files (the URL cache holds the pods' env values) 0600.
      expect(statSync(world.stateDir).mode & 0o777).toBe(0o700);
      const cache = filesBelow(join(world.stateDir, 'url-cache'));
      expect(cache.length).toBe(1);
      expect(readFileSync(cache[0]!, 'utf8')).toContain('hunter2');
      for (const f of [...cache, join(world.stateDir, 'agent-status.json')]) expect(statSync(f).mode & 0o777, f).toBe(0o600);
    } finally {
      server.close();
    }
  });

  it('keeps the TCP port read-only without the token and answers only requests addressed to loopback', async () => {
    const port = await freePort();
    agent = suite.run(['--http-port', String(port)]);
    await agent.started();
    expect(await raw(port, 'GET', '/healthz', `127.0.0.1:${port}`)).toBe(200);
    expect(await raw(port, 'GET', '/metrics', `localhost:${port}`)).toBe(200);
    // A page on evil.example that rebinds its name to 127.0.0.1 sends its own Host.
    expect(await raw(port, 'GET', '/pods', `evil.example:${port}`)).toBe(403);
    expect(await raw(port, 'POST', '/metrics', `127.0.0.1:${port}`)).toBe(405);
    expect(await raw(port, 'POST', '/gc', `127.0.0.1:${port}`)).toBe(401);
    expect(await raw(port, 'POST', '/gc', `evil.example:${port}`)).toBe(403);
  });

  it('reads nothing from a directory or file that others can write, and names the path and the fix', async () => {
    const dir = join(world.dir, unique('open'));
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    const name = unique('planted');
    // What a local user could drop there: a privileged pod with the engine's socket.
    const file = join(dir, 'planted.yaml');
    writeFileSync(file, pod(name, '  volumes: [{name: sock, hostPath: {path: /var/run/docker.sock}}]\n'));
    chownSync(file, 65534, 65534);
    agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    await agent.waitForLog(`${dir}:1:1 directory is writable by everyone (mode 0777); refusing it (fix: chmod go-w ${dir})`);
    chmodSync(dir, 0o755);
    await agent.waitForLog(`${file}:1:1 file belongs to uid 65534, not root or the agent's user; refusing it (fix: chown root ${file})`);
    // Past a rescan and relists: still refused, nothing made.
    await pastRelist(agent);
    expect(await podContainers(ns, name)).toEqual([]);
    chownSync(file, 0, 0);
    chmodSync(file, 0o664);
    await agent.waitForLog(`${file}:1:1 file is writable by its group (mode 0664); refusing it (fix: chmod go-w ${file})`);
    expect(await podContainers(ns, name)).toEqual([]);
    chmodSync(file, 0o644);
    await until('the pod to run once the file is safe', async () => ((await podContainers(ns, name)).some((c) => c.State === 'running') ? true : undefined));
  });

  it('refuses pods that break the node policy, with the rule they broke, and runs the rest', async () => {
    const dir = join(world.dir, unique('policy'));
    mkdirSync(dir);
    const [ok, priv, hostpath, hostnet] = ['ok', 'priv', 'hostpath', 'hostnet'].map((n) => unique(n)) as [string, string, string, string];
    writeFileSync(join(dir, 'ok.yaml'), pod(ok, '  volumes: [{name: d, hostPath: {path: /srv/podrun-allowed/data, type: DirectoryOrCreate}}]\n'));
    writeFileSync(join(dir, 'priv.yaml'), pod(priv).replace("command: [sleep, '3600']", "command: [sleep, '3600']\n    securityContext: {privileged: true}"));
    writeFileSync(join(dir, 'hostpath.yaml'), pod(hostpath, '  volumes: [{name: root, hostPath: {path: /}}]\n'));
    writeFileSync(join(dir, 'hostnet.yaml'), pod(hostnet).replace('spec:\n', 'spec:\n  hostNetwork: true\n'));
    agent = suite.run([
      '--allow-privileged',
      'false',
      '--allow-host-namespaces',
      'false',
      '--allowed-host-paths',
      '/srv/podrun-allowed,/opt/x',
      '--manifest-dir',
      dir,
    ]);
    await agent.started();
    await until('the compliant pod to run', async () => ((await podContainers(ns, ok)).filter((c) => c.State === 'running').length === 2 ? true : undefined));
    await agent.waitForLog(
      `${join(dir, 'priv.yaml')}:10:35 spec.containers[0].securityContext.privileged: privileged containers are not allowed on this node (--allow-privileged=false)`,
    );
    await agent.waitForLog(
      `${join(dir, 'hostpath.yaml')}:11:43 spec.volumes[0].hostPath.path: "/" is not under an allowed host path (--allowed-host-paths=/srv/podrun-allowed,/opt/x)`,
    );
    await agent.waitForLog(`${join(dir, 'hostnet.yaml')}:5:16 spec.hostNetwork: host namespaces are not allowed on this node (--allow-host-namespaces=false)`);
    for (const n of [priv, hostpath, hostnet]) expect(await podContainers(ns, n)).toEqual([]);
    // validate knows the same rules.
    const v = await world.cli('--allow-privileged', 'false', 'validate', join(dir, 'priv.yaml'));
    expect(v.code).toBe(1);
    expect(v.err).toContain('privileged containers are not allowed on this node');
  });
});
