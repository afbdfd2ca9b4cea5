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

  it('ignore spelling: key order, explicit defaults, empty lists and objects', () => {
    const a = desired(POD).pod;
    const b = desired(
      POD.replace('  - name: side\n    image: busybox:1.36\n', '  - image: busybox:1.36\n    name: side\n    imagePullPolicy: IfNotPresent\n    args: []\n    securityContext: {}\n    terminationMessagePath: /dev/termination-log\n'),
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
