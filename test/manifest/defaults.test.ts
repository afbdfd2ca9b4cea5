import { describe, expect, it } from 'vitest';
import { applyDefaults, defaultPullPolicy } from '../../src/manifest/defaults.js';
import { podUid } from '../../src/manifest/identity.js';
import { parseQuantity, milliCpu } from '../../src/manifest/quantity.js';
import type { Pod } from '../../src/manifest/types.js';

describe('defaults, as the apiserver and kubelet apply them', () => {
  it('fills pod, container, probe and volume defaults without touching the input', () => {
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p' },
      spec: {
        hostNetwork: true,
        containers: [{ name: 'c', image: 'etcd', ports: [{ containerPort: 2379 }], livenessProbe: { httpGet: { port: 2381 } } }],
        volumes: [{ name: 'v' }, { name: 'h', hostPath: { path: '/x' } }],
      },
    };
    const copy = JSON.parse(JSON.stringify(pod)) as Pod;
    const d = applyDefaults(pod);
    expect(pod).toEqual(copy);
    expect(d.metadata.namespace).toBe('default');
    expect(d.spec).toMatchObject({ restartPolicy: 'Always', terminationGracePeriodSeconds: 30, dnsPolicy: 'ClusterFirst' });
    const c = d.spec.containers[0]!;
    expect(c.imagePullPolicy).toBe('Always');
    expect(c.terminationMessagePath).toBe('/dev/termination-log');
    expect(c.ports).toEqual([{ containerPort: 2379, hostPort: 2379, protocol: 'TCP' }]);
    expect(c.livenessProbe).toEqual({
      httpGet: { port: 2381, path: '/', scheme: 'HTTP' },
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
    });
    expect(d.spec.volumes).toEqual([
      { name: 'v', emptyDir: {} },
      { name: 'h', hostPath: { path: '/x', type: '' } },
    ]);
  });

  it('pulls always for :latest or no tag, else if not present', () => {
    expect(defaultPullPolicy('busybox')).toBe('Always');
    expect(defaultPullPolicy('busybox:latest')).toBe('Always');
    expect(defaultPullPolicy('localhost:5000/busybox')).toBe('Always');
    expect(defaultPullPolicy('localhost:5000/busybox:1.36')).toBe('IfNotPresent');
    expect(defaultPullPolicy('busybox@sha256:abc')).toBe('IfNotPresent');
  });

  it('derives a stable UID from namespace/name unless one is given', () => {
    const base: Pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'etcd', namespace: 'kube-system' }, spec: { containers: [] } };
    expect(podUid(base)).toBe(podUid({ ...base, spec: { containers: [{ name: 'x', image: 'y' }] } }));
    expect(podUid(base)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(podUid(base)).not.toBe(podUid({ ...base, metadata: { name: 'etcd' } }));
    expect(podUid({ ...base, metadata: { ...base.metadata, uid: 'fixed' } })).toBe('fixed');
  });

  it('parses quantities', () => {
    expect(parseQuantity('128Mi')).toBe(128 * 1024 * 1024);
    expect(parseQuantity('1G')).toBe(1e9);
    expect(parseQuantity('1e3')).toBe(1000);
    expect(milliCpu('250m')).toBe(250);
    expect(milliCpu('1.5')).toBe(1500);
    expect(milliCpu(2)).toBe(2000);
    expect(() => parseQuantity('12 apples')).toThrow(/invalid quantity/);
  });
});
