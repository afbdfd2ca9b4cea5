import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import { AgentSuite } from './agent-helpers.js';
import { docker, freePort, logsOf, podContainers, TEST_IMAGE, unique, until } from './helpers.js';

// Kubelet parity for volumes and the node's address (issue 9, items 4-6).
const suite = new AgentSuite('parity-vn');
const { world, ns } = suite;

describe('volumes as the kubelet makes them', () => {
  it('makes an emptyDir on disk 0777, so a non-root container can write to it', async () => {
    const name = unique('nonroot');
    const r = await world.cli(
      'apply',
      '--timeout',
      '20s',
      world.write(
        `${name}.yaml`,
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 1000, runAsGroup: 1000}
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sh, -c, 'touch /d/ok && exec sleep 3600']
    volumeMounts: [{name: d, mountPath: /d}]
  volumes: [{name: d, emptyDir: {}}]
`,
      ),
    );
    expect(r.code, r.err).toBe(0);
    const uid = (await podContainers(ns, name))[0]!.Labels[LABEL.podUid]!;
    const dir = join(world.stateDir, 'pods', uid, 'volumes', 'empty-dir', 'd');
    expect(statSync(dir).mode & 0o777).toBe(0o777);
    // Running is not yet done: the file comes a moment after the start.
    expect(await until('the container to write', async () => (existsSync(join(dir, 'ok')) ? statSync(join(dir, 'ok')).uid : undefined))).toBe(1000);
  });

  it('keeps a medium: Memory emptyDir as long as the pod, across its only container restarting', async () => {
    const dir = join(world.dir, unique('mem'));
    const name = unique('memvol');
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'pod.yaml'),
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: ${TEST_IMAGE}
    command: [sh, -c, 'if [ -f /m/x ]; then echo "found $(cat /m/x)"; exec sleep 3600; fi; echo kept > /m/x; exit 1']
    volumeMounts: [{name: m, mountPath: /m}]
  volumes: [{name: m, emptyDir: {medium: Memory}}]
`,
    );
    const agent = suite.run(['--manifest-dir', dir]);
    await agent.started();
    const second = await until('the restarted instance to run', async () =>
      (await podContainers(ns, name)).find((c) => c.Labels[LABEL.containerName] === 'c' && c.Labels[LABEL.restartCount] === '1' && c.State === 'running'),
    );
    // The instance may be running a moment before it has written its line.
    expect(await until('the restarted instance to say what it found', async () => (await logsOf(second.Id)).trim() || undefined)).toBe('found kept');
  });
});

describe('the node IP', () => {
  it('probes a hostNetwork pod at --node-ip (its pod IP), and reports it as hostIP and podIP', async () => {
    const name = unique('nodeip');
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
    # Bound to the node IP only, as an apiserver given --advertise-address is.
    command: [sh, -c, 'mkdir -p /tmp/www && echo ok > /tmp/www/index.html && exec httpd -f -p 127.0.0.2:${port} -h /tmp/www']
    env: [{name: MY_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]
    readinessProbe: {httpGet: {port: ${port}}, periodSeconds: 1}
`,
    );
    const r = await world.cli('--node-ip', '127.0.0.2', 'apply', '--timeout', '20s', file);
    expect(r.code, r.err).toBe(0);
    const g = await world.cli('--node-ip', '127.0.0.2', 'get', 'pods', '-n', ns, '-o', 'json');
    const pod = (JSON.parse(g.out) as { items: { metadata: { name: string }; status: { hostIP: string; podIP: string } }[] }).items.find(
      (p) => p.metadata.name === name,
    );
    expect([pod?.status.hostIP, pod?.status.podIP]).toEqual(['127.0.0.2', '127.0.0.2']);
    const web = (await podContainers(ns, name)).find((c) => c.Labels[LABEL.containerName] === 'web')!;
    expect((await docker.getContainer(web.Id).inspect()).Config.Env).toContain('MY_IP=127.0.0.2');
  });
});

describe('DNS', () => {
  it("gives a dnsPolicy None pod its dnsConfig and nothing of the host's", async () => {
    const name = unique('dnsnone');
    const r = await world.cli(
      'apply',
      '--timeout',
      '20s',
      world.write(
        `${name}.yaml`,
        `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  dnsPolicy: None
  dnsConfig: {nameservers: [192.0.2.53], options: [{name: ndots, value: '2'}]}
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sh, -c, 'cat /etc/resolv.conf; exec sleep 3600']}]
`,
      ),
    );
    expect(r.code, r.err).toBe(0);
    const c = (await podContainers(ns, name)).find((x) => x.Labels[LABEL.containerName] === 'c')!;
    const conf = await until('resolv.conf to be printed', async () => {
      const text = await logsOf(c.Id);
      return text.includes('nameserver') ? text : undefined;
    });
    const lines = conf.split('\n').filter((l) => l.trim() && !l.startsWith('#'));
    expect(lines.filter((l) => l.startsWith('nameserver'))).toEqual(['nameserver 192.0.2.53']);
    expect(lines.filter((l) => l.startsWith('search') && l.trim() !== 'search .' && l.trim() !== 'search')).toEqual([]);
    expect(lines.some((l) => l.startsWith('options') && l.includes('ndots:2'))).toBe(true);
  });
});
