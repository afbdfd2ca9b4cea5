import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { AgentSuite } from './agent-helpers.js';
import { containerIds, freePort, logsOf, podContainers, TEST_IMAGE, unique, until } from './helpers.js';

const run = promisify(execFile);
const suite = new AgentSuite('auth');
const { world, ns } = suite;

/**
 * Every path the server routes by, read from its source (string literals and the /metrics/(…)
 * alternation), so an endpoint added later is checked here too; then spellings that normalize to
 * them, and paths it does not serve.
 */
function pathsToTry(): string[] {
  const src = readFileSync(fileURLToPath(new URL('../../src/server/server.ts', import.meta.url)), 'utf8');
  const literals = [...src.matchAll(/'(\/[a-z][a-z/]*)'/g)].map((m) => m[1]!);
  const alternations = [...src.matchAll(/\\\/(\w+)\\\/\(([\w|]+)\)/g)].flatMap((m) => m[2]!.split('|').map((x) => `/${m[1]}/${x}`));
  const served = [...new Set([...literals, ...alternations])];
  expect(served).toEqual(expect.arrayContaining(['/pods', '/events', '/gc', '/node', '/healthz', '/metrics/probes']));
  const tricks = [
    '/',
    '/pods/',
    '/pods?watch=1',
    '/PODS',
    '/./pods',
    '/x/../pods',
    '/%2e%2e/pods',
    '/healthz/../pods',
    '/metrics/../events',
    '//pods',
    '/pods%00',
    '/gc?images=false',
    '/events?uid=x',
  ];
  const unknown = ['/configz', '/spec/', '/logs/', '/run/ns/pod/c', '/exec/ns/pod/c', '/debug/pprof/', '/containerLogs/ns/pod/c', '/nope'];
  return [...served, ...tricks, ...unknown];
}

function get(port: number, path: string, o: { method?: string; token?: string; authorization?: string } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const authorization = o.authorization ?? (o.token ? `Bearer ${o.token}` : undefined);
    const req = request(
      { host: '127.0.0.1', port, path, method: o.method ?? 'GET', headers: { host: `127.0.0.1:${port}`, ...(authorization ? { authorization } : {}) } },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** curl as user nobody, every path in one run; each answer followed by its status. */
async function curlAsNobody(port: number, paths: string[], method: string): Promise<string> {
  const urls = paths.map((p) => `http://127.0.0.1:${port}${p}`);
  const { stdout } = await run('runuser', ['-u', 'nobody', '--', 'curl', '-s', '-g', '--path-as-is', '-X', method, '-w', '\n@@ %{http_code}\n', ...urls], {
    maxBuffer: 64 << 20,
  }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  return stdout;
}

const PUBLIC = ['/healthz', '/metrics', '/metrics/cadvisor', '/metrics/resource', '/metrics/probes', '/stats/summary', '/node'];

describe('the TCP port and pod secrets', () => {
  it('serves no env value of any pod without the token: to root, to nobody, to a host-network pod; /pods with the token', async () => {
    const secret = `pw-${randomBytes(12).toString('hex')}`;
    const port = await freePort();
    const paths = pathsToTry();
    const dir = join(world.dir, unique('m'));
    mkdirSync(dir);
    const [db, snoop] = [unique('db'), unique('snoop')];
    // The secret in an env value, and (by a probe that prints it) in probe output and so in events.
    writeFileSync(
      join(dir, 'db.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${db}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: db
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
    env: [{name: DB_PASSWORD, value: ${secret}}]
    readinessProbe: {exec: {command: [sh, -c, 'echo "$DB_PASSWORD"; exit 1']}, periodSeconds: 1}
`,
    );
    // Another tenant on the host's network: it reads every path, round after round.
    const script = `until wget -q -O /dev/null http://127.0.0.1:${port}/healthz; do sleep 0.5; done
n=0; while true; do n=$((n+1)); for p in ${paths.map((p) => `'${p}'`).join(' ')}; do echo "== $p"; wget -q -O - "http://127.0.0.1:${port}$p" 2>&1; echo; done; echo "ROUND $n"; sleep 1; done`;
    writeFileSync(
      join(dir, 'snoop.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${snoop}, namespace: ${ns}}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: snoop
    image: ${TEST_IMAGE}
    command: [sh, -c, ${JSON.stringify(script)}]
`,
    );
    const agent = suite.run(['--manifest-dir', dir, '--http-port', String(port)]);
    await agent.started();

    // The token file: made by the agent, root's alone, in the 0700 state directory.
    const tokenFile = join(world.stateDir, 'http-token');
    const token = readFileSync(tokenFile, 'utf8').trim();
    expect(agent.logs()).toContain(`/pods, /events and /gc there need the bearer token in ${tokenFile}`);
    expect(token.length).toBeGreaterThanOrEqual(32);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(statSync(tokenFile).uid).toBe(0);
    expect(statSync(world.stateDir).mode & 0o777).toBe(0o700);
    expect(statSync(join(world.stateDir, 'podrun.sock')).mode & 0o777).toBe(0o600);
    await expect(run('runuser', ['-u', 'nobody', '--', 'cat', tokenFile])).rejects.toThrow();
    await expect(
      run('runuser', ['-u', 'nobody', '--', 'curl', '-sf', '--unix-socket', join(world.stateDir, 'podrun.sock'), 'http://x/pods']),
    ).rejects.toThrow();

    // With the token the secret is there to be leaked (the spec, and the probe output in events).
    await until('the probe output in /events', async () => ((await get(port, '/events', { token })).body.includes(secret) ? true : undefined), 30_000);
    const pods = await get(port, '/pods', { token });
    expect(pods.status).toBe(200);
    expect(pods.body).toContain(secret);
    expect((await get(port, '/pods', { authorization: `bearer ${token}` })).status).toBe(200);

    // Without it (or with a wrong one): every path, every method, never the secret.
    for (const path of paths) {
      for (const method of ['GET', 'POST', 'HEAD', 'PUT']) {
        const r = await get(port, path, { method });
        expect(r.body, `${method} ${path}`).not.toContain(secret);
        expect(r.body, `${method} ${path}`).not.toContain('DB_PASSWORD');
        const normalized = new URL(path, 'http://x').pathname;
        if (!PUBLIC.includes(normalized)) expect(r.status, `${method} ${path}`).toBe(401);
        else if (method !== 'GET') expect(r.status, `${method} ${path}`).toBe(405);
      }
    }
    for (const authorization of [
      'Bearer wrong-token-of-some-length',
      `Bearer ${token}x`,
      `Bearer ${token.slice(0, -1)}`,
      `Basic ${Buffer.from(`x:${token}`).toString('base64')}`,
      'Bearer',
      `Bearer  ${token} extra`,
    ]) {
      for (const path of ['/pods', '/events', '/gc', '/healthz']) {
        const r = await get(port, path, { authorization });
        expect(r.status, `${authorization} ${path}`).toBe(401);
        expect(r.body).not.toContain(secret);
      }
    }
    for (const path of PUBLIC) expect((await get(port, path)).status, path).toBe(200);
    // POST /gc runs only with the token.
    expect((await get(port, '/gc?images=false', { method: 'POST' })).status).toBe(401);
    expect((await get(port, '/gc?images=false', { method: 'POST', token })).status).toBe(200);

    // User nobody with curl.
    for (const method of ['GET', 'POST']) {
      const out = await curlAsNobody(port, paths, method);
      expect(out.match(/@@ \d+/g)?.length, method).toBe(paths.length);
      expect(out).toContain('@@ 401');
      expect(out, method).not.toContain(secret);
    }

    // The host-network pod, after it has read every path several times.
    const id = (await until('the snooping container', async () => (await containerIds(ns, snoop)).snoop))!;
    const seen = await until(
      'three rounds of reads from the host-network pod',
      async () => {
        const l = await logsOf(id);
        return l.includes('ROUND 3') ? l : undefined;
      },
      60_000,
    );
    expect(seen).toContain('== /pods');
    expect(seen).toContain('401 Unauthorized');
    expect(seen).toContain('container_cpu_usage_seconds_total');
    expect(seen).not.toContain(secret);
    expect((await podContainers(ns, db)).length).toBeGreaterThan(0);
  }, 180_000);

  it('takes its token from --http-token-file, and refuses to start with a file other users can read', async () => {
    const port = await freePort();
    const file = join(world.dir, unique('token'));
    const token = randomBytes(24).toString('hex');
    writeFileSync(file, `${token}\n`, { mode: 0o644 });
    chmodSync(file, 0o644);
    const refused = suite.run(['--http-port', String(port), '--http-token-file', file]);
    await refused.waitForLog(`the HTTP token file ${file} is open to other users (mode 0644); refusing it (fix: chmod 600 ${file})`);
    expect(await refused.stop()).not.toBe(0);
    chmodSync(file, 0o600);
    const agent = suite.run(['--http-port', String(port), '--http-token-file', file]);
    await agent.started();
    expect((await get(port, '/pods')).status).toBe(401);
    expect((await get(port, '/pods', { token })).status).toBe(200);
  });
});
