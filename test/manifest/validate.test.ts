import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatIssue, ManifestError } from '../../src/manifest/errors.js';
import { loadManifestSet, loadManifestText } from '../../src/manifest/load.js';

const FIXTURES = new URL('../fixtures/static-pods/', import.meta.url).pathname;

function errorsOf(text: string, file = 'web.yaml'): string[] {
  return loadManifestText({ file, source: `file:${file}`, text })
    .issues.filter((i) => i.severity === 'error')
    .map(formatIssue);
}

const WEB = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: nginx
    image: nginx:1.27
    ports:
    - containerPort: 80
  - name: sidecar
    image: busybox:1.36
    ports:
    - containerPort: 70000
`;

describe('validation errors name file, line, column and field', () => {
  it('reports an out-of-range port at its value', () => {
    expect(errorsOf(WEB)).toEqual(['web.yaml:14:22 spec.containers[1].ports[0].containerPort: must be <= 65535']);
  });

  it('reports an unknown field at its key', () => {
    const text = WEB.replace('    image: nginx:1.27\n', '    image: nginx:1.27\n    imagePolicy: Always\n').replace('70000', '81');
    expect(errorsOf(text)).toEqual(['web.yaml:9:5 spec.containers[0].imagePolicy: unknown field: not part of a Kubernetes v1 Pod']);
  });

  it('refuses Kubernetes fields podrun cannot honour, by path', () => {
    const text = WEB.replace('70000', '81').replace('spec:\n', 'spec:\n  runtimeClassName: gvisor\n');
    expect(errorsOf(text)).toEqual(['web.yaml:6:3 spec.runtimeClassName: is a Kubernetes field that podrun cannot honour; remove it']);
  });

  it('applies the static-pod rules with the reason', () => {
    const text = `apiVersion: v1
kind: Pod
metadata: {name: x}
spec:
  serviceAccountName: default
  containers:
  - name: a
    image: busybox:1.36
    env:
    - name: K
      valueFrom:
        configMapKeyRef: {name: cm, key: k}
    envFrom:
    - secretRef: {name: s}
  volumes:
  - name: s
    secret: {secretName: s}
`;
    expect(errorsOf(text, 'x.yaml')).toEqual([
      'x.yaml:5:3 spec.serviceAccountName: static pods may not reference ServiceAccounts',
      'x.yaml:13:5 spec.containers[0].envFrom: static pods may not reference ConfigMaps or Secrets',
      'x.yaml:12:9 spec.containers[0].env[0].valueFrom.configMapKeyRef: static pods may not reference ConfigMaps',
      'x.yaml:17:5 spec.volumes[0].secret: static pods may not reference Secrets',
    ]);
  });

  it('reports a missing field, a wrong kind and broken YAML', () => {
    expect(errorsOf('apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: c\n')).toEqual([
      'web.yaml:7:5 spec.containers[0].image: is required',
    ]);
    expect(errorsOf('apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n')).toEqual([
      'web.yaml:2:7 kind: must be "Pod" or "PodList" (got "Deployment"); podrun runs Pods only',
    ]);
    expect(errorsOf('apiVersion: v1\nkind: Pod\n  metadata: x\n')[0]).toMatch(/^web\.yaml:3:\d+ invalid YAML: /);
  });

  it('checks cross-field rules: mounts, duplicate names, probe handlers, sidecar-only restartPolicy', () => {
    const text = `apiVersion: v1
kind: Pod
metadata: {name: x}
spec:
  containers:
  - name: a
    image: busybox:1.36
    restartPolicy: Always
    volumeMounts: [{name: nope, mountPath: /x}]
    livenessProbe:
      exec: {command: ["true"]}
      tcpSocket: {port: 80}
  - name: a
    image: busybox:1.36
    readinessProbe:
      httpGet: {port: http}
`;
    expect(errorsOf(text)).toEqual([
      'web.yaml:8:5 spec.containers[0].restartPolicy: only init containers may set restartPolicy (Always makes a sidecar)',
      'web.yaml:9:27 spec.containers[0].volumeMounts[0].name: no volume named "nope" in spec.volumes',
      'web.yaml:11:7 spec.containers[0].livenessProbe: must have exactly one handler; found exec and tcpSocket',
      'web.yaml:13:11 spec.containers[1].name: duplicate container name "a" (also spec.containers[0])',
      'web.yaml:16:23 spec.containers[1].readinessProbe.httpGet.port: names no port of this container ("http")',
    ]);
  });

  it('validates a PodList all or nothing, with item paths', () => {
    const text = `apiVersion: v1
kind: PodList
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: ok}
  spec: {containers: [{name: a, image: busybox:1.36}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: Bad_Name}
  spec: {containers: [{name: a, image: busybox:1.36}]}
`;
    const r = loadManifestText({ file: 'l.yaml', source: 'file:l.yaml', text });
    expect(r.pods).toEqual([]);
    expect(r.issues.map(formatIssue)[0]).toMatch(/^l\.yaml:10:20 items\[1\]\.metadata\.name: "Bad_Name" is not valid here/);
  });

  it('reads several documents from one file, and JSON', () => {
    const two = `${WEB.replace('70000', '81')}---\n${WEB.replace('name: web', 'name: web2').replace('70000', '82')}`;
    const r = loadManifestText({ file: 'w.yaml', source: 'file:w.yaml', text: two });
    expect(r.pods.map((p) => [p.key, p.origin.line])).toEqual([
      ['default/web', 1],
      ['default/web2', 16],
    ]);
    const json = JSON.stringify(
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'j' }, spec: { containers: [{ name: 'a', image: 'busybox:1.36', ports: [{ containerPort: 0 }] }] } },
      null,
      2,
    );
    expect(errorsOf(json, 'j.json')).toEqual(['j.json:14:30 spec.containers[0].ports[0].containerPort: must be >= 1']);
  });

  it('refuses a set that declares the same pod twice, naming both places', () => {
    const a = { file: 'a.yaml', source: 'file:a.yaml', text: WEB.replace('70000', '81') };
    const b = { file: 'b.yaml', source: 'file:b.yaml', text: `\n\n${WEB.replace('70000', '82')}` };
    expect(() => loadManifestSet([a, b])).toThrowError(ManifestError);
    expect(() => loadManifestSet([a, b])).toThrowError('b.yaml:6:3 metadata.name: pod default/web is also declared at a.yaml:4');
  });
});

describe('real static-pod manifests validate unchanged', () => {
  for (const name of readdirSync(FIXTURES)) {
    it(name, () => {
      const r = loadManifestText({ file: name, source: `file:${name}`, text: readFileSync(join(FIXTURES, name), 'utf8') });
      expect(r.issues.filter((i) => i.severity === 'error')).toEqual([]);
      expect(r.pods).toHaveLength(1);
    });
  }

  it('warns about scheduling fields instead of refusing them (priorityClassName counts: it sets OOM protection)', () => {
    const r = loadManifestText({ file: 'etcd.yaml', source: 'file:etcd.yaml', text: readFileSync(join(FIXTURES, 'etcd.yaml'), 'utf8') });
    expect(r.issues.map(formatIssue)).toEqual(['etcd.yaml:56:3 warning: spec.priority: ignored: it has no meaning on a single node']);
  });
});
