import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { canonicalJson, containerHash, sandboxHash } from '../../src/manifest/hash.js';
import { desired } from '../fixtures/pods.js';

const POD = `apiVersion: v1
kind: Pod
metadata: {name: golden, namespace: hashes}
spec:
  containers:
  - name: web
    image: nginx:1.27
    command: [nginx, -g, 'daemon off;']
    ports: [{containerPort: 80, hostPort: 8080}]
    env: [{name: A, value: '1'}]
    volumeMounts: [{name: data, mountPath: /data}]
  - name: side
    image: busybox:1.36
  volumes:
  - name: data
    hostPath: {path: /srv/data}
`;

describe('spec hashes', () => {
  // Golden vectors: these values must never change across podrun versions (kubernetes #67537).
  // If this test fails, a change altered hash inputs: bump HASH_VERSION with a migration instead.
  it('match the golden vectors', () => {
    const { pod } = desired(POD);
    expect(sandboxHash(pod)).toBe('af19e1a8e4becf8f');
    expect(containerHash(pod, pod.spec.containers[0]!)).toBe('a11c0e578185e4be');
    expect(containerHash(pod, pod.spec.containers[1]!)).toBe('30e0838e57a6008b');
  });

  // The pods podrun's users actually run, and one that uses every honoured field (probes,
  // resources, securityContext, lifecycle, init containers, a sidecar, every volume kind).
  it.each([
    ['static-pods/etcd.yaml', 'c413907097ad9a1c', { etcd: '6ced5e58d9c2a6b0' }],
    ['static-pods/kube-apiserver.yaml', 'c413907097ad9a1c', { 'kube-apiserver': '1a78b7fc9bb0b9e1' }],
    ['static-pods/haproxy.yaml', 'c413907097ad9a1c', { haproxy: 'dcff82660e5b3282' }],
    ['static-pods/keepalived.json', 'c413907097ad9a1c', { keepalived: '39f266f66daad7c4' }],
    ['static-pods/kube-vip.yaml', 'ce77830721bc876a', { 'kube-vip': '1175b09da85ba594' }],
    ['kitchen-sink.yaml', '7e4b2262f02df690', { init: 'e56596b88e1cb6fe', side: '1368dae2b8004c7a', app: '2f4f5fefc421546c' }],
  ] as const)('match the golden vectors of %s', (file, sandbox, containers) => {
    const { pod } = desired(readFileSync(fileURLToPath(new URL(`../fixtures/${file}`, import.meta.url)), 'utf8'));
    expect(sandboxHash(pod)).toBe(sandbox);
    const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
    expect(Object.fromEntries(all.map((c) => [c.name, containerHash(pod, c)]))).toEqual(containers);
  });

  it('ignore spelling: key order, explicit defaults, empty lists and objects', () => {
    const a = desired(POD).pod;
    const b = desired(
      POD.replace(
        '  - name: side\n    image: busybox:1.36\n',
        '  - image: busybox:1.36\n    name: side\n    imagePullPolicy: IfNotPresent\n    args: []\n    securityContext: {}\n    terminationMessagePath: /dev/termination-log\n',
      ),
    ).pod;
    expect(containerHash(b, b.spec.containers[1]!)).toBe(containerHash(a, a.spec.containers[1]!));
    expect(sandboxHash(b)).toBe(sandboxHash(a));
  });

  it('change for what shapes the container, and only for that container', () => {
    const a = desired(POD).pod;
    const env = desired(POD.replace("value: '1'", "value: '2'")).pod;
    expect(containerHash(env, env.spec.containers[0]!)).not.toBe(containerHash(a, a.spec.containers[0]!));
    expect(containerHash(env, env.spec.containers[1]!)).toBe(containerHash(a, a.spec.containers[1]!));
    expect(sandboxHash(env)).toBe(sandboxHash(a));
    // A mounted volume's source is part of the container that mounts it, not of the others.
    const vol = desired(POD.replace('/srv/data', '/srv/other')).pod;
    expect(containerHash(vol, vol.spec.containers[0]!)).not.toBe(containerHash(a, a.spec.containers[0]!));
    expect(containerHash(vol, vol.spec.containers[1]!)).toBe(containerHash(a, a.spec.containers[1]!));
  });

  it("are kept per pod object: one container object in two pods hashes with each pod's volumes", () => {
    const a = desired(POD).pod;
    const vol = desired(POD.replace('/srv/data', '/srv/other')).pod;
    const c = a.spec.containers[0]!;
    const first = containerHash(a, c);
    expect(containerHash(vol, c)).not.toBe(first);
    expect(containerHash(a, c)).toBe(first);
    expect(sandboxHash(a)).toBe(sandboxHash(desired(POD).pod));
  });

  it('move the sandbox for ports, host network and hostname, regardless of port order', () => {
    const a = desired(POD).pod;
    expect(sandboxHash(desired(POD.replace('hostPort: 8080', 'hostPort: 8081')).pod)).not.toBe(sandboxHash(a));
    expect(sandboxHash(desired(POD.replace('spec:\n', 'spec:\n  hostname: h\n')).pod)).not.toBe(sandboxHash(a));
    expect(sandboxHash(desired(POD.replace('spec:\n', 'spec:\n  hostNetwork: false\n')).pod)).toBe(sandboxHash(a));
  });

  it('canonical JSON sorts keys and drops empties', () => {
    expect(canonicalJson({ b: 1, a: { d: [], c: null, e: {} }, f: [{}, 2] })).toBe('{"b":1,"f":[null,2]}');
  });
});
