import { describe, expect, it } from 'vitest';
import { containerConfig, containerLogPath, userOf } from '../../src/runtime/kuberuntime/container-config.js';
import { podSandboxConfig, splitLabels } from '../../src/runtime/kuberuntime/sandbox-config.js';
import { containerConfigMessage, sandboxConfigMessage } from '../../src/runtime/cri/wire-config.js';
import { MountPropagation, NamespaceMode, ProfileType, Protocol } from '../../src/runtime/cri/messages.js';
import { identityOf, LABEL } from '../../src/runtime/labels.js';
import { parseResolvConf, podDns } from '../../src/runtime/dns.js';
import { desired } from '../fixtures/pods.js';

// A pod as the kubelet hands it to a runtime (kuberuntime/): the configs both engines start
// from. The CRI engine sends them as they are (cri/wire-config.ts numbers the enums); the Docker
// engine translates them (test/runtime/docker-translate.test.ts, from the same pod).

const POD = `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: prod, labels: {tier: front}}
spec:
  hostname: www
  hostPID: true
  terminationGracePeriodSeconds: 7
  securityContext: {runAsUser: 1000, supplementalGroups: [5], sysctls: [{name: net.core.somaxconn, value: '1024'}]}
  dnsConfig: {nameservers: [192.0.2.53], options: [{name: ndots, value: '2'}]}
  containers:
  - name: app
    image: nginx:1.27
    command: [run, --ip=$(MY_IP)]
    args: [--node=$(NODE)]
    workingDir: /srv
    tty: true
    env:
    - {name: MY_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    ports: [{containerPort: 80, hostPort: 8080, hostIP: 127.0.0.1}, {containerPort: 53, protocol: UDP}]
    resources: {limits: {memory: 128Mi, cpu: 500m}, requests: {cpu: 250m}}
    securityContext:
      runAsGroup: 2000
      capabilities: {add: [net_admin, CAP_SYS_TIME], drop: [ALL]}
      readOnlyRootFilesystem: true
      allowPrivilegeEscalation: false
      privileged: true
    volumeMounts:
    - {name: data, mountPath: /data, subPath: www, readOnly: true}
    - {name: logs, mountPath: /logs, mountPropagation: HostToContainer}
  volumes: [{name: data, hostPath: {path: /srv}}, {name: logs, hostPath: {path: /var/log}}]
`;

const d = desired(POD);
const id = { ...identityOf(d.pod, d.origin.source, 'set1'), instance: 'abcdef123456' };
const app = d.pod.spec.containers[0]!;
const node = parseResolvConf('nameserver 10.0.0.2\nsearch node.example\n');

describe('the sandbox config (generatePodSandboxConfig)', () => {
  const dns = podDns(d.pod.spec.dnsPolicy, d.pod.spec.dnsConfig, node, false);
  const c = podSandboxConfig(d.pod, id, { instance: 'abcdef123456', attempt: 2, hash: 'h', logRoot: '/logs', ...(dns ? { dns } : {}) });

  it('names the pod, its attempt, hostname, log directory and resolver', () => {
    expect(c.metadata).toEqual({ name: 'web', uid: d.uid, namespace: 'prod', attempt: 2 });
    expect(c.hostname).toBe('www');
    expect(c.logDirectory).toBe(`/logs/prod_web_${d.uid}`);
    expect(c.dnsConfig).toEqual({ servers: ['10.0.0.2', '192.0.2.53'], searches: ['node.example'], options: ['ndots:2'] });
    expect(podSandboxConfig(d.pod, id, { instance: 'i', attempt: 0, hash: 'h' }).logDirectory).toBeUndefined();
  });

  it('carries every port, the namespaces, sysctls and whether any container is privileged', () => {
    expect(c.portMappings).toEqual([
      { protocol: 'TCP', containerPort: 80, hostPort: 8080, hostIp: '127.0.0.1' },
      { protocol: 'UDP', containerPort: 53 },
    ]);
    expect(c.linux).toEqual({
      securityContext: { namespaceOptions: { network: 'POD', pid: 'NODE', ipc: 'POD' }, privileged: true },
      sysctls: { 'net.core.somaxconn': '1024' },
    });
  });

  it('keeps identity in labels (containerd caps a label at 4096 bytes) and the spec in annotations', () => {
    expect(c.labels).toMatchObject({
      [LABEL.instance]: 'abcdef123456',
      [LABEL.podUid]: d.uid,
      [LABEL.hash]: 'h',
      [LABEL.applySet]: 'set1',
      'io.kubernetes.pod.name': 'web',
      'io.kubernetes.pod.namespace': 'prod',
      'io.kubernetes.pod.uid': d.uid,
    });
    expect(Object.keys(c.annotations)).toEqual([LABEL.podSpec]);
    expect(JSON.parse(c.annotations[LABEL.podSpec] ?? '')).toEqual(d.pod);
    const s = splitLabels({ [LABEL.podUid]: 'u', [LABEL.podSpec]: '{}', [LABEL.containerSpec]: '{}', [LABEL.gracePeriod]: '3' });
    expect(s.labels).toEqual({ [LABEL.podUid]: 'u' });
  });

  it('is sent with the enums numbered as api.proto numbers them', () => {
    const m = sandboxConfigMessage(c);
    expect(m.portMappings?.map((p) => p.protocol)).toEqual([Protocol.TCP, Protocol.UDP]);
    expect(m.linux?.securityContext?.namespaceOptions).toEqual({ network: NamespaceMode.POD, pid: NamespaceMode.NODE, ipc: NamespaceMode.POD });
  });

  it('has no hostname and no ports on the host network', () => {
    const h = desired(
      POD.replace('hostname: www', 'hostNetwork: true').replace('hostPort: 8080, ', '').replace(", sysctls: [{name: net.core.somaxconn, value: '1024'}]", ''),
    );
    const hc = podSandboxConfig(h.pod, identityOf(h.pod, 's'), { instance: 'i', attempt: 0, hash: 'h' });
    expect(hc.hostname).toBeUndefined();
    expect(hc.portMappings).toEqual([]);
    expect(hc.linux.securityContext.namespaceOptions.network).toBe('NODE');
  });
});

describe('the container config (generateContainerConfig)', () => {
  const c = containerConfig(d.pod, id, app, {
    instance: 'abcdef123456',
    type: 'app',
    restartCount: 3,
    hash: 'h1',
    volumes: new Map([
      ['data', { kind: 'bind', path: '/srv', hostPath: true }],
      ['logs', { kind: 'bind', path: '/var/log', hostPath: true }],
    ]),
    pinned: new Map([[0, '/state/pinned/0']]),
    terminationLog: '/state/tl',
    runtime: { podIP: '172.17.0.9', hostIP: '192.0.2.1', nodeName: 'node-1', oomScoreFloor: -1000, nodeMemoryBytes: 8 * 2 ** 30 },
  });

  it('expands command, args and env, and keeps the working dir and streams', () => {
    expect(c.metadata).toEqual({ name: 'app', attempt: 3 });
    expect(c.image).toEqual({ image: 'nginx:1.27' });
    expect(c.command).toEqual(['run', '--ip=172.17.0.9']);
    expect(c.args).toEqual(['--node=node-1']);
    expect(c.envs).toEqual([
      { key: 'MY_IP', value: '172.17.0.9' },
      { key: 'NODE', value: 'node-1' },
    ]);
    expect(c.workingDir).toBe('/srv');
    expect([c.tty, c.stdin, c.stdinOnce]).toEqual([true, false, false]);
    expect(c.logPath).toBe('app/3.log');
    expect(containerLogPath('c', 0)).toBe('c/0.log');
  });

  it('mounts pinned paths, propagation and the termination log', () => {
    expect(c.mounts).toEqual([
      { containerPath: '/data', hostPath: '/state/pinned/0', readonly: true, propagation: 'PROPAGATION_PRIVATE' },
      { containerPath: '/logs', hostPath: '/var/log', readonly: false, propagation: 'PROPAGATION_HOST_TO_CONTAINER' },
      { containerPath: '/dev/termination-log', hostPath: '/state/tl', readonly: false, propagation: 'PROPAGATION_PRIVATE' },
    ]);
    expect(containerConfigMessage(c).mounts?.map((m) => m.propagation)).toEqual([
      MountPropagation.PRIVATE,
      MountPropagation.HOST_TO_CONTAINER,
      MountPropagation.PRIVATE,
    ]);
  });

  it("sets the kubelet's resources: shares from the request, a CFS quota, no swap, the QoS OOM score", () => {
    expect(c.linux.resources).toEqual({
      cpuShares: 256,
      cpuPeriod: 100_000,
      cpuQuota: 50_000,
      memoryLimitInBytes: 128 * 2 ** 20,
      memorySwapLimitInBytes: 128 * 2 ** 20,
      oomScoreAdj: 1000 - Math.floor((1000 * 128 * 2 ** 20) / (8 * 2 ** 30)),
    });
  });

  it('says the security context in CRI words: CAP_ names, user and group, seccomp', () => {
    const s = c.linux.securityContext;
    expect(s).toEqual({
      namespaceOptions: { network: 'POD', pid: 'NODE', ipc: 'POD' },
      capabilities: { addCapabilities: ['CAP_NET_ADMIN', 'CAP_SYS_TIME'], dropCapabilities: ['ALL'] },
      privileged: true,
      runAsUser: { value: 1000 },
      runAsGroup: { value: 2000 },
      readonlyRootfs: true,
      supplementalGroups: [5],
      noNewPrivs: true,
      seccomp: { profileType: 'Unconfined' },
    });
    expect(userOf(s)).toBe('1000:2000');
    expect(containerConfigMessage(c).linux?.securityContext?.seccomp).toEqual({ profileType: ProfileType.Unconfined });
  });

  it("keeps the image's user when only a group is asked, by name or by number", () => {
    const g = desired(POD.replace('runAsUser: 1000, ', ''));
    const mk = (imageUser: string) =>
      containerConfig(g.pod, id, g.pod.spec.containers[0]!, {
        instance: 'i',
        type: 'app',
        restartCount: 0,
        hash: 'h',
        volumes: new Map([
          ['data', { kind: 'bind', path: '/srv' }],
          ['logs', { kind: 'bind', path: '/var/log' }],
        ]),
        pinned: new Map([[0, '/p']]),
        imageUser,
        runtime: { podIP: '', hostIP: '', nodeName: 'n' },
      }).linux.securityContext;
    expect(mk('nginx:101')).toMatchObject({ runAsUsername: 'nginx', runAsGroup: { value: 2000 } });
    expect(mk('101')).toMatchObject({ runAsUser: { value: 101 }, runAsGroup: { value: 2000 } });
    expect(mk('')).toMatchObject({ runAsUser: { value: 0 }, runAsGroup: { value: 2000 } });
  });

  it('keeps identity in labels and the container spec and grace period in annotations', () => {
    expect(c.labels).toMatchObject({
      [LABEL.instance]: 'abcdef123456',
      [LABEL.containerName]: 'app',
      [LABEL.restartCount]: '3',
      [LABEL.hash]: 'h1',
      'io.kubernetes.container.name': 'app',
      'io.kubernetes.pod.uid': d.uid,
    });
    expect(c.annotations[LABEL.gracePeriod]).toBe('7');
    expect(JSON.parse(c.annotations[LABEL.containerSpec] ?? '')).toEqual(app);
  });
});
