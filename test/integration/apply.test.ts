import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { LABEL } from '../../src/runtime/labels.js';
import {
  containerIds,
  docker,
  freePort,
  logsOf,
  podContainers,
  podEvents,
  recordPodEvents,
  stopPodEvents,
  TEST_IMAGE,
  unique,
  until,
  World,
} from './helpers.js';

beforeAll(recordPodEvents);
afterAll(stopPodEvents);

const world = new World();
afterAll(() => world.cleanup());

const ns = unique('apply');

async function httpGet(url: string): Promise<string> {
  const res = await request(url, { headersTimeout: 2000, bodyTimeout: 2000 });
  const body = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}`);
  return body;
}

/** A pod with a container that says its greeting, and one beside it that an edit of the greeting leaves alone. */
function greetingPod(name: string, greeting: string): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: stable
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
  - name: edited
    image: ${TEST_IMAGE}
    command: [sh, -c, 'echo $GREETING; exec sleep 3600']
    env: [{name: GREETING, value: ${greeting}}]
`;
}

describe('podrun apply on the real engine', () => {
  it('runs a 2-container pod whose containers talk over localhost', async () => {
    const name = unique('duo');
    const file = world.write(
      `${name}.yaml`,
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: server
    image: ${TEST_IMAGE}
    command: [sh, -c, 'mkdir -p /www && echo hello-from-server > /www/index.html && exec httpd -f -p 127.0.0.1:8080 -h /www']
  - name: client
    image: ${TEST_IMAGE}
    command: [sh, -c, 'until wget -q -O - http://127.0.0.1:8080/; do sleep 0.2; done; exec sleep 3600']
`,
    );
    const r = await world.cli('apply', file);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain(`pod/${ns}/${name} created`);
    const ids = await containerIds(ns, name);
    const clientId = ids.client;
    expect(clientId).toBeDefined();
    await until('client to read the server over localhost', async () => ((await logsOf(clientId!)).includes('hello-from-server') ? true : undefined));
    // Names are readable in `docker ps`, and the sandbox holds the network.
    const client = await docker.getContainer(clientId!).inspect();
    expect(client.Name).toBe(
      `/podrun_${name}_client_${ns}_${client.Config.Labels[LABEL.podUid]!.replace(/-/g, '').slice(0, 8)}_${world.instance.slice(0, 6)}_0`,
    );
    expect(client.HostConfig.NetworkMode).toBe(`container:${ids.POD}`);
  });

  it('publishes a hostPort reachable on 127.0.0.1', async () => {
    const name = unique('port');
    const port = await freePort();
    const file = world.write(
      `${name}.yaml`,
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: ${TEST_IMAGE}
    command: [sh, -c, 'mkdir -p /www && echo "port-ok $(hostname)" > /www/index.html && exec httpd -f -p 80 -h /www']
    ports: [{containerPort: 80, hostPort: ${port}, hostIP: 127.0.0.1}]
`,
    );
    const r = await world.cli('apply', file);
    expect(r.code, r.err).toBe(0);
    const body = await until('the hostPort to answer', () => httpGet(`http://127.0.0.1:${port}/`));
    // The hostname is the pod's name, set on the sandbox and shared by its containers.
    expect(body.trim()).toBe(`port-ok ${name}`);
  });

  it('runs a hostNetwork pod', async () => {
    const name = unique('hostnet');
    const port = await freePort();
    const file = world.write(
      `${name}.yaml`,
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: ${TEST_IMAGE}
    command: [sh, -c, 'mkdir -p /www && echo hostnet-ok > /www/index.html && exec httpd -f -p 127.0.0.1:${port} -h /www']
    ports: [{containerPort: ${port}}]
`,
    );
    const r = await world.cli('apply', file);
    expect(r.code, r.err).toBe(0);
    expect((await until('the host-network server', () => httpGet(`http://127.0.0.1:${port}/`))).trim()).toBe('hostnet-ok');
    const ids = await containerIds(ns, name);
    expect((await docker.getContainer(ids.POD!).inspect()).HostConfig.NetworkMode).toBe('host');
  });

  it('mounts hostPath (with type rules and subPath) and shares emptyDir volumes, disk and memory', async () => {
    const name = unique('vols');
    const hostDir = join(world.dir, 'host-data');
    mkdirSync(hostDir);
    writeFileSync(join(hostDir, 'in.txt'), 'from-host\n');
    const created = join(world.dir, 'made-by-podrun');
    const file = world.write(
      `${name}.yaml`,
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: writer
    image: ${TEST_IMAGE}
    command: [sh, -c, 'cat /host/in.txt > /host/out.txt; echo shared > /scratch/s.txt; echo mem > /mem/m.txt; exec sleep 3600']
    volumeMounts:
    - {name: host, mountPath: /host}
    - {name: scratch, mountPath: /scratch}
    - {name: mem, mountPath: /mem}
  - name: reader
    image: ${TEST_IMAGE}
    command: [sh, -c, 'until [ -f /scratch/s.txt ] && [ -f /mem/m.txt ]; do sleep 0.2; done; cat /scratch/s.txt /mem/m.txt /sub/x 2>&1; touch /ro/x 2>&1 || echo read-only; exec sleep 3600']
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: mem, mountPath: /mem}
    - {name: created, mountPath: /sub, subPath: deeper}
    - {name: host, mountPath: /ro, readOnly: true}
  volumes:
  - name: host
    hostPath: {path: ${hostDir}, type: Directory}
  - name: created
    hostPath: {path: ${created}, type: DirectoryOrCreate}
  - name: scratch
    emptyDir: {}
  - name: mem
    emptyDir: {medium: Memory, sizeLimit: 16Mi}
`,
    );
    const r = await world.cli('apply', file);
    expect(r.code, r.err).toBe(0);
    await until('the writer to copy the host file', async () => (existsSync(join(hostDir, 'out.txt')) ? true : undefined));
    expect(readFileSync(join(hostDir, 'out.txt'), 'utf8')).toBe('from-host\n');
    expect(existsSync(join(created, 'deeper'))).toBe(true);
    const ids = await containerIds(ns, name);
    const logs = await until('the reader to see both emptyDirs', async () => {
      const l = await logsOf(ids.reader!);
      return l.includes('read-only') ? l : undefined;
    });
    expect(logs).toContain('shared\nmem\n');
    expect(logs).toContain('No such file'); // /sub/x: the subPath directory exists but is empty
    const uid = (await podContainers(ns, name))[0]!.Labels[LABEL.podUid]!;
    expect(existsSync(join(world.stateDir, 'pods', uid, 'volumes', 'empty-dir', 'scratch', 's.txt'))).toBe(true);
    const vols = await docker.listVolumes({ filters: JSON.stringify({ label: [`${LABEL.podUid}=${uid}`] }) });
    expect(vols.Volumes.map((v) => v.Options)).toEqual([{ type: 'tmpfs', device: 'tmpfs', o: `size=${16 * 1024 * 1024}` }]);

    // Deleting the pod takes its containers, emptyDir directory and memory volume with it.
    const d = await world.cli('delete', '-n', ns, name);
    expect(d.code, d.err).toBe(0);
    expect(d.out).toBe(`pod/${ns}/${name} deleted`);
    expect(await podContainers(ns, name)).toEqual([]);
    expect(existsSync(join(world.stateDir, 'pods', uid))).toBe(false);
    expect((await docker.listVolumes({ filters: JSON.stringify({ label: [`${LABEL.podUid}=${uid}`] }) })).Volumes).toEqual([]);
    // hostPath data is the host's, and stays.
    expect(existsSync(join(hostDir, 'out.txt'))).toBe(true);
  });

  it('re-applies an unchanged pod with no mutating engine call, and replaces only an edited container', async () => {
    const name = unique('edit');
    const manifest = (greeting: string): string => greetingPod(name, greeting);
    const file = world.write(`${name}.yaml`, manifest('one'));
    expect((await world.cli('apply', file)).code).toBe(0);
    const before = await containerIds(ns, name);
    const uid = (await podContainers(ns, name))[0]!.Labels[LABEL.podUid]!;

    // Events are asked by the whole second: the next one begins after the first apply's last.
    const since = Math.floor(Date.now() / 1000) + 1;
    await until('the next whole second', async () => (Date.now() >= since * 1000 ? true : undefined));
    const again = await world.cli('apply', file);
    expect(again.code).toBe(0);
    expect(again.out).toContain(`pod/${ns}/${name} unchanged`);
    expect(await containerIds(ns, name)).toEqual(before);
    // Not a single create, start, stop, kill or destroy reached the engine for this pod.
    expect(await podEvents(uid, since)).toEqual([]);

    world.write(`${name}.yaml`, manifest('two'));
    const edit = await world.cli('apply', file);
    expect(edit.code, edit.err).toBe(0);
    expect(edit.out).toContain(`pod/${ns}/${name} updated`);
    expect(edit.out).toContain('container edited: replaced (container spec changed)');
    const after = await containerIds(ns, name);
    expect(after.POD).toBe(before.POD);
    expect(after.stable).toBe(before.stable);
    expect(after.edited).not.toBe(before.edited);
    // Running is not yet written: the line comes a moment after the start.
    expect(await until("the edited container's line", async () => (await logsOf(after.edited!)) || undefined)).toBe('two\n');
    const edited = await docker.getContainer(after.edited!).inspect();
    expect(edited.Config.Labels[LABEL.restartCount]).toBe('1');
  });

  it('the built podrun keeps the files it applied: applied again, edited, and put back, each runs as written', async () => {
    const name = unique('known');
    const manifest = (greeting: string): string => greetingPod(name, greeting);
    const file = world.write(`${name}.yaml`, manifest('one'));
    const greeting = async (): Promise<string> => {
      const id = (await containerIds(ns, name)).edited!;
      return until(`${name}'s line`, async () => (await logsOf(id)) || undefined);
    };
    // Which of the bundle's code-cached files a run read (its YAML reader is js-yaml.cjs).
    const preload = world.write(
      `${name}-reads.cjs`,
      "const fs = require('node:fs'); const read = fs.readFileSync; const seen = []; fs.readFileSync = function (p, ...a) { if (typeof p === 'string' && p.endsWith('.cjs')) seen.push(p); return read.call(this, p, ...a); }; process.on('exit', () => fs.writeFileSync(process.env.READS_OUT, seen.join('\\n')));",
    );
    const reads = join(world.dir, `${name}-reads.txt`);
    const traced = { env: { NODE_OPTIONS: `--require ${preload}`, READS_OUT: reads } };
    const first = await world.bin(['apply', '--no-wait', file], traced);
    expect(first.code, first.err).toBe(0);
    expect(readFileSync(reads, 'utf8')).toContain('/js-yaml.cjs');
    // The bundle knows its build: what it loaded is kept in the state dir, by the file's bytes.
    const cache = JSON.parse(readFileSync(join(world.stateDir, 'manifest-cache.json'), 'utf8')) as { entries: Record<string, string> };
    const names = Object.values(cache.entries).flatMap((e) =>
      (JSON.parse(e) as { pods: { pod: { metadata: { name: string } } }[] }).pods.map((p) => p.pod.metadata.name),
    );
    expect(names).toContain(name);
    const again = await world.bin(['apply', '--no-wait', file], traced);
    expect(again.out).toContain(`pod/${ns}/${name} unchanged`);
    // A file it knows is not parsed: the YAML reader is not even loaded.
    expect(readFileSync(reads, 'utf8')).not.toContain('/js-yaml.cjs');
    world.write(`${name}.yaml`, manifest('two'));
    const edited = await world.bin(['apply', '--no-wait', file]);
    expect(edited.out, edited.err).toContain(`pod/${ns}/${name} updated`);
    expect(await greeting()).toBe('two\n');
    world.write(`${name}.yaml`, manifest('one'));
    const back = await world.bin(['apply', '--no-wait', file]);
    expect(back.out, back.err).toContain(`pod/${ns}/${name} updated`);
    expect(await greeting()).toBe('one\n');
  });

  it('changes nothing when any manifest of the set is invalid', async () => {
    const good = unique('good');
    const running = unique('running');
    const runningFile = world.write(
      `${running}.yaml`,
      `apiVersion: v1
kind: Pod
metadata: {name: ${running}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sleep, '3600']}]
`,
    );
    expect((await world.cli('apply', runningFile)).code).toBe(0);
    const before = await containerIds(ns, running);

    const dir = join(world.dir, unique('set'));
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'a-good.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${good}, namespace: ${ns}}
spec:
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sleep, '3600']}]
`,
    );
    // An edit of the running pod that is invalid: it must not touch the running pod either.
    writeFileSync(
      join(dir, 'b-bad.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${running}, namespace: ${ns}}
spec:
  containers:
  - name: c
    image: ${TEST_IMAGE}
    ports: [{containerPort: 99999}]
`,
    );
    const r = await world.cli('apply', dir);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`${join(dir, 'b-bad.yaml')}:8:29 spec.containers[0].ports[0].containerPort: must be <= 65535`);
    expect(r.err).toContain('nothing was applied');
    expect(await podContainers(ns, good)).toEqual([]);
    expect(await containerIds(ns, running)).toEqual(before);
  });

  it('prunes pods an earlier apply of the same paths made, and only those', async () => {
    const dir = join(world.dir, unique('prune'));
    mkdirSync(dir);
    const keep = unique('keep');
    const gone = unique('gone');
    const pod = (n: string): string => `apiVersion: v1
kind: Pod
metadata: {name: ${n}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sleep, '3600']}]
`;
    writeFileSync(join(dir, 'keep.yaml'), pod(keep));
    writeFileSync(join(dir, 'gone.yaml'), pod(gone));
    expect((await world.cli('apply', dir)).code).toBe(0);
    const { unlinkSync } = await import('node:fs');
    unlinkSync(join(dir, 'gone.yaml'));
    const noPrune = await world.cli('apply', dir);
    expect(noPrune.out).not.toContain('deleted');
    expect((await podContainers(ns, gone)).length).toBeGreaterThan(0);
    const r = await world.cli('apply', '--prune', dir);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`pod/${ns}/${gone} deleted`);
    expect(r.out).toContain(`pod/${ns}/${keep} unchanged`);
    expect(await podContainers(ns, gone)).toEqual([]);
  });

  it('counts the restarts the engine makes without an agent, as kubectl would see them', async () => {
    const name = unique('crashy');
    const file = world.write(
      `${name}.yaml`,
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: a, image: ${TEST_IMAGE}, command: [sh, -c, 'sleep 0.2; exit 1']}
`,
    );
    expect((await world.cli('apply', '--no-wait', file)).code).toBe(0);
    const engineCount = async (): Promise<number> => {
      const c = (await podContainers(ns, name)).find((x) => x.Labels[LABEL.containerName] === 'a');
      return c ? (await docker.getContainer(c.Id).inspect()).RestartCount : 0;
    };
    await until('the engine to restart it twice', async () => ((await engineCount()) >= 2 ? true : undefined));
    const pod = JSON.parse((await world.cli('get', 'pods', '-n', ns, name, '-o', 'json')).out) as { status: { containerStatuses: { restartCount: number }[] } };
    expect(pod.status.containerStatuses[0]?.restartCount).toBeGreaterThanOrEqual(2);
    expect((await world.cli('delete', '-n', ns, name, '--grace-period', '0')).code).toBe(0);
  });

  it('says clearly when an image with imagePullPolicy Never is missing', async () => {
    const name = unique('noimg');
    const file = world.write(
      `${name}.yaml`,
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  containers: [{name: c, image: podrun-test/does-not-exist:1, imagePullPolicy: Never}]
`,
    );
    const r = await world.cli('apply', '--timeout', '10s', file);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`pod/${ns}/${name}: image podrun-test/does-not-exist:1 is not present and its imagePullPolicy is Never`);
  });

  it('waits for readiness and, on timeout, says which pod and container is not ready and why', async () => {
    const name = unique('unready');
    const file = world.write(
      `${name}.yaml`,
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: fine
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
  - name: never
    image: ${TEST_IMAGE}
    command: [sleep, '3600']
    readinessProbe: {exec: {command: [test, -f, /tmp/never]}, periodSeconds: 1}
`,
    );
    const started = Date.now();
    const r = await world.cli('apply', '--timeout', '3s', file);
    expect(r.code).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3000);
    expect(r.err).toBe(`podrun: pod/${ns}/${name}: not ready after 3s: phase Running; container never is not ready (readiness probe failing)`);
  });
});
