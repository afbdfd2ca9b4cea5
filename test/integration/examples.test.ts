import { afterAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { LABEL } from '../../src/runtime/labels.js';
import { containerIds, copySampleManifests, docker, followEvents, freePort, unique, until, World } from './helpers.js';

const EXAMPLES = fileURLToPath(new URL('../../manifests/', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/podrun', import.meta.url));

const world = new World();
afterAll(() => world.cleanup());

/**
 * The examples as shipped, but on ports that are free now: the README demo may be running the
 * very same files on 18080/18081 beside the suite, and must be left alone.
 */
async function examplesOnFreePorts(): Promise<{ dir: string; web: number; etcd: number }> {
  const web = await freePort();
  const etcd = await freePort();
  const dir = join(world.dir, 'examples');
  mkdirSync(dir);
  for (const name of readdirSync(EXAMPLES)) {
    const text = readFileSync(join(EXAMPLES, name), 'utf8').replaceAll('18080', String(web)).replaceAll('18081', String(etcd));
    writeFileSync(join(dir, name), text);
  }
  return { dir, web, etcd };
}

async function get(url: string): Promise<string> {
  const res = await request(url, { headersTimeout: 2000, bodyTimeout: 2000 });
  if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}`);
  return res.body.text();
}

describe('the examples in manifests/', () => {
  it('validate, apply, serve, show in get pods, and delete', async () => {
    const { dir, web, etcd } = await examplesOnFreePorts();
    const v = await world.cli('validate', dir);
    expect(v.code, v.err).toBe(0);
    expect(v.out).toBe('valid: 2 pods in 2 files');

    // The same images the README demo uses (scripts/setup provides them offline).
    const r = await world.cli('apply', dir);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('pod/demo/web created');
    expect(r.out).toContain('pod/kube-system/etcd-lite created');
    expect(r.out).toContain('2 pods ready');

    const page = await until("the web example to serve its sidecar's page", async () => {
      const body = await get(`http://127.0.0.1:${web}/`);
      return body.includes('Hello from web') ? body : undefined;
    });
    expect(page).toMatch(/^<h1>Hello from web on \S+, /);
    expect((await get(`http://127.0.0.1:${etcd}/healthz`)).trim()).toBe('ok');
    const cp = await containerIds('kube-system', 'etcd-lite', world.instance);
    expect((await docker.getContainer(cp.POD!).inspect()).HostConfig.NetworkMode).toBe('host');

    const g = await world.cli('get', 'pods', '-A');
    expect(g.code).toBe(0);
    expect(g.out).toMatch(/^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/m);
    expect(g.out).toMatch(/^demo\s+web\s+2\/2\s+Running\s+0\s+\d+s$/m);
    expect(g.out).toMatch(/^kube-system\s+etcd-lite\s+1\/1\s+Running\s+0\s+\d+s$/m);

    const json = await world.cli('get', 'pods', '-n', 'demo', '-o', 'json');
    const list = JSON.parse(json.out) as { kind: string; items: { metadata: { name: string }; status: { phase: string; podIP: string } }[] };
    expect(list.kind).toBe('List');
    expect(list.items.map((p) => [p.metadata.name, p.status.phase])).toEqual([['web', 'Running']]);
    expect(list.items[0]!.status.podIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);

    const d = await world.cli('delete', '-f', dir);
    expect(d.code, d.err).toBe(0);
    expect(d.out.split('\n').sort()).toEqual(['pod/demo/web deleted', 'pod/kube-system/etcd-lite deleted']);
    expect((await world.cli('get', 'pods', '-A')).out).not.toMatch(/etcd-lite|\bweb\b/);
  });

  it("end on SIGTERM when deleted with the default grace period, never by the grace period's SIGKILL", async () => {
    // The samples made this test's own (namespaces, ports, hostPath), grace period as shipped.
    const demo = unique('ex-demo');
    const system = unique('ex-sys');
    const dir = join(world.dir, 'sigterm');
    mkdirSync(dir);
    const texts = copySampleManifests(dir, { demo, system, web: await freePort(), etcd: await freePort(), data: join(world.dir, 'podrun-examples') });
    for (const t of texts) expect(t, 'a sample sets a grace period of its own').not.toContain('terminationGracePeriodSeconds');
    const a = await world.cli('apply', dir);
    expect(a.code, a.err).toBe(0);

    // Followed live: the engine's record of each death (its exit code) and of each signal sent.
    const ev = await followEvents([`${LABEL.instance}=${world.instance}`, `${LABEL.containerType}=app`]);
    try {
      const d = await world.cli('delete', '-f', dir);
      expect(d.code, d.err).toBe(0);
      const ended = await until('a death for each sample container', async () => {
        const deaths = ev.events.filter((e) => e.action === 'die' && [demo, system].includes(e.attributes[LABEL.podNamespace] ?? ''));
        return deaths.length >= 3 ? deaths : undefined;
      });
      const signals = (pod: string, c: string): string[] =>
        ev.events
          .filter((e) => e.action === 'kill' && e.attributes[LABEL.podName] === pod && e.attributes[LABEL.containerName] === c)
          .map((e) => e.attributes.signal ?? '');
      // 0 (a trap that exits) or 143 (ended by SIGTERM) both mean the stop signal ended it; 137 is the SIGKILL.
      const how = Object.fromEntries(
        ended.map((e) => {
          const [pod, c] = [e.attributes[LABEL.podName] ?? '', e.attributes[LABEL.containerName] ?? ''];
          const code = e.attributes.exitCode ?? '';
          return [`${pod}/${c}`, `${['0', '143'].includes(code) ? 'ended on its stop signal' : `exit ${code}`}, signals ${signals(pod, c).join(',')}`];
        }),
      );
      expect(how).toEqual({
        'web/httpd': 'ended on its stop signal, signals 15',
        'web/content': 'ended on its stop signal, signals 15',
        'etcd-lite/server': 'ended on its stop signal, signals 15',
      });
    } finally {
      ev.stop();
    }
  }, 120_000);
});

describe('the podrun binary', () => {
  it('gives one clear line and exit code 3 when the engine is not there', () => {
    const r = spawnSync(BIN, ['--docker-host', 'unix:///nonexistent/docker.sock', 'get', 'pods'], { encoding: 'utf8' });
    expect(r.status).toBe(3);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toEqual([
      "podrun: cannot reach the Docker engine at unix:///nonexistent/docker.sock: ENOENT (connect ENOENT /nonexistent/docker.sock); the address is --docker-host's; no socket is there: is the Docker engine running (systemctl start docker)? if it listens elsewhere, give that address with --docker-host or DOCKER_HOST",
    ]);
  });

  it('exits 2 on a usage error and 1 on an invalid manifest', () => {
    expect(spawnSync(BIN, ['apply'], { encoding: 'utf8' }).status).toBe(2);
    const r = spawnSync(BIN, ['validate', '/nonexistent/pod.yaml'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe('/nonexistent/pod.yaml: cannot read: no such file or directory');
  });
});
