import type Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { identityOf, LABEL } from '../../src/runtime/labels.js';
import { groupObserved } from '../../src/runtime/observed.js';
import { recordFromListed } from '../../src/runtime/docker/records.js';
import { containerCreateOptions, sandboxCreateOptions, type DockerContainerExtras, type DockerSandboxExtras } from '../../src/runtime/docker/translate.js';
import { containerConfig, type ContainerConfigOptions } from '../../src/runtime/kuberuntime/container-config.js';
import { podSandboxConfig } from '../../src/runtime/kuberuntime/sandbox-config.js';
import type { Container, Pod } from '../../src/manifest/types.js';
import type { PodIdentity } from '../../src/runtime/labels.js';
import type { ResolvConf } from '../../src/runtime/dns.js';
import { expandVars } from '../../src/runtime/env.js';
import { parseResolvConf, podDns } from '../../src/runtime/dns.js';
import { desired } from '../fixtures/pods.js';

const POD = `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: prod, labels: {tier: front}}
spec:
  hostname: www
  hostAliases: [{ip: 10.0.0.5, hostnames: [db, db.local]}]
  securityContext: {runAsUser: 1000, supplementalGroups: [5]}
  containers:
  - name: app
    image: nginx:1.27
    command: [run, --ip=$(MY_IP), --tier=$(TIER), $$(LITERAL), $(UNKNOWN)]
    args: [--node=$(NODE)]
    env:
    - {name: MY_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: TIER, valueFrom: {fieldRef: {fieldPath: "metadata.labels['tier']"}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: URL, value: http://$(MY_IP):80}
    - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    ports: [{containerPort: 80, hostPort: 8080, hostIP: 127.0.0.1}, {containerPort: 53, protocol: UDP}]
    resources: {limits: {memory: 128Mi, cpu: 500m}, requests: {cpu: 250m}}
    securityContext:
      runAsGroup: 2000
      capabilities: {add: [NET_ADMIN], drop: [ALL]}
      readOnlyRootFilesystem: true
      allowPrivilegeEscalation: false
      seccompProfile: {type: Unconfined}
    volumeMounts: [{name: data, mountPath: /data, subPath: www, readOnly: true}]
  volumes: [{name: data, hostPath: {path: /srv}}]
`;

// The Docker engine's create options, as it makes them: the pod's CRI configs (kuberuntime/),
// translated (docker/translate.ts) with what only Docker decides.

function sandboxOptions(
  pod: Pod,
  id: PodIdentity,
  o: { attempt: number; hash: string; dns?: ResolvConf; network?: string } & Partial<DockerSandboxExtras>,
): ReturnType<typeof sandboxCreateOptions> {
  const config = podSandboxConfig(pod, id, { instance: id.instance ?? '', attempt: o.attempt, hash: o.hash, ...(o.dns ? { dns: o.dns } : {}) });
  const s = pod.spec;
  return sandboxCreateOptions(config, {
    pauseImage: 'pause:1',
    network: 'bridge',
    restartPolicy: 'always',
    extraHosts: (s.hostAliases ?? []).flatMap((a) => (a.hostnames ?? []).map((h) => `${h}:${a.ip}`)),
    ...o,
  });
}

function containerOptions(
  pod: Pod,
  id: PodIdentity,
  c: Container,
  o: Omit<ContainerConfigOptions, 'instance'> & Partial<DockerContainerExtras>,
): ReturnType<typeof containerCreateOptions> {
  const config = containerConfig(pod, id, c, { ...o, instance: id.instance ?? '' });
  const sandbox = podSandboxConfig(pod, id, { instance: id.instance ?? '', attempt: 0, hash: '' });
  return containerCreateOptions(config, sandbox, { sandboxId: 'sb', restartPolicy: 'no', ...o });
}

describe('translation to Docker create options', () => {
  const d = desired(POD);
  const id = identityOf(d.pod, d.origin.source, 'set1');

  it('puts ports, hostname, hosts and the pod spec on the sandbox', () => {
    const o = sandboxOptions(d.pod, id, { attempt: 2, hash: 'h' });
    expect(o.name).toBe(`podrun_web_POD_prod_${d.uid.replace(/-/g, '').slice(0, 8)}_2`);
    expect(o.Hostname).toBe('www');
    // Two podrun instances on one engine may run the same pod: the instance keeps names apart.
    const scoped = sandboxOptions(d.pod, { ...id, instance: 'abcdef123456' }, { attempt: 2, hash: 'h' });
    expect(scoped.name).toBe(`podrun_web_POD_prod_${d.uid.replace(/-/g, '').slice(0, 8)}_abcdef_2`);
    expect(o.ExposedPorts).toEqual({ '80/tcp': {}, '53/udp': {} });
    expect(o.HostConfig?.PortBindings).toEqual({ '80/tcp': [{ HostIp: '127.0.0.1', HostPort: '8080' }] });
    expect(o.HostConfig?.ExtraHosts).toEqual(['db:10.0.0.5', 'db.local:10.0.0.5']);
    expect(o.HostConfig?.IpcMode).toBe('shareable');
    expect(o.Labels?.[LABEL.applySet]).toBe('set1');
    expect(JSON.parse(o.Labels?.[LABEL.podSpec] ?? '')).toEqual(d.pod);
  });

  it("adds the pod's dnsConfig to the node's resolver, as the kubelet's appendDNSConfig; dnsPolicy None has the pod's alone", () => {
    const node = parseResolvConf('# node\nnameserver 10.0.0.2\nnameserver 127.0.0.53\nsearch node.example\noptions ndots:2 edns0\n');
    const mk = (policy: string, config = '{nameservers: [192.0.2.53]}', hostNetwork = false): Record<string, unknown> => {
      const p = desired(`apiVersion: v1
kind: Pod
metadata: {name: d}
spec:
  hostNetwork: ${hostNetwork}
  dnsPolicy: ${policy}
  ${config ? `dnsConfig: ${config}` : ''}
  containers: [{name: c, image: busybox}]
`);
      const dns = podDns(p.pod.spec.dnsPolicy, p.pod.spec.dnsConfig, node, hostNetwork);
      const h = sandboxOptions(p.pod, identityOf(p.pod, 's'), { attempt: 0, hash: 'h', ...(dns ? { dns } : {}) }).HostConfig ?? {};
      return { Dns: h.Dns, DnsSearch: h.DnsSearch, DnsOptions: h.DnsOptions };
    };
    expect(mk('None')).toEqual({ Dns: ['192.0.2.53'], DnsSearch: ['.'], DnsOptions: undefined });
    expect(mk('None', '{nameservers: [192.0.2.53], searches: [corp.example]}')).toEqual({
      Dns: ['192.0.2.53'],
      DnsSearch: ['corp.example'],
      DnsOptions: undefined,
    });
    // The node's servers first, the pod's after; the node's loopback cache is the pod's own loopback on a bridge.
    expect(mk('ClusterFirst')).toEqual({ Dns: ['10.0.0.2', '192.0.2.53'], DnsSearch: ['node.example'], DnsOptions: ['ndots:2', 'edns0'] });
    expect(mk('Default', '{searches: [corp.example], options: [{name: ndots, value: "5"}, {name: rotate}]}')).toEqual({
      Dns: ['10.0.0.2'],
      DnsSearch: ['node.example', 'corp.example'],
      DnsOptions: ['ndots:5', 'edns0', 'rotate'],
    });
    expect(mk('ClusterFirstWithHostNet', '{nameservers: [192.0.2.53, 192.0.2.54]}', true)).toEqual({
      Dns: ['10.0.0.2', '127.0.0.53', '192.0.2.53'],
      DnsSearch: ['node.example'],
      DnsOptions: ['ndots:2', 'edns0'],
    });
    // No dnsConfig: the node's file as it is, copied by the engine.
    expect(mk('ClusterFirst', '')).toEqual({ Dns: undefined, DnsSearch: undefined, DnsOptions: undefined });
  });

  it("keeps the kubelet's resolver limits: 3 servers, 32 search paths, 2048 characters of them", () => {
    const node = parseResolvConf(`search ${Array.from({ length: 30 }, (_, i) => `n${i}.example`).join(' ')}\n`);
    const many = { nameservers: ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4'], searches: Array.from({ length: 10 }, (_, i) => `p${i}.example`) };
    const r = podDns('ClusterFirst', many, node, false);
    expect(r?.nameservers).toEqual(['192.0.2.1', '192.0.2.2', '192.0.2.3']);
    expect(r?.searches).toHaveLength(32);
    const long = podDns('None', { searches: Array.from({ length: 30 }, (_, i) => `${'x'.repeat(90)}${i}.example`) }, node, false);
    expect(long?.searches.join(' ').length).toBeLessThanOrEqual(2048);
    expect(long?.searches.length).toBe(20);
  });

  it('asks for the OOM score QoS gives, never below what the node allows', () => {
    const critical = desired(`apiVersion: v1
kind: Pod
metadata: {name: cp}
spec:
  priorityClassName: system-node-critical
  containers: [{name: c, image: busybox}]
`);
    const opts = (floor: number): number | undefined =>
      containerOptions(critical.pod, identityOf(critical.pod, 's'), critical.pod.spec.containers[0]!, {
        type: 'app',
        restartCount: 0,
        hash: 'h',
        volumes: new Map(),
        runtime: { podIP: '', hostIP: '', nodeName: 'n', oomScoreFloor: floor },
      }).HostConfig?.OomScoreAdj;
    expect(opts(-1000)).toBe(-997);
    expect(opts(0)).toBe(0);
    const sandbox = (floor: number): number | undefined =>
      sandboxOptions(critical.pod, identityOf(critical.pod, 's'), { attempt: 0, hash: 'h', oomScoreFloor: floor }).HostConfig?.OomScoreAdj;
    expect([sandbox(-1000), sandbox(0)]).toEqual([-998, 0]);
  });

  it('joins containers to the sandbox with env, limits and security translated', () => {
    const o = containerOptions(d.pod, id, d.pod.spec.containers[0]!, {
      type: 'app',
      restartCount: 3,
      hash: 'h1',
      restartPolicy: 'always',
      volumes: new Map([['data', { kind: 'bind', path: '/srv' }]]),
      pinned: new Map([[0, '/state/pods/u/volume-subpaths/data/app/0']]),
      runtime: { podIP: '172.17.0.9', hostIP: '192.0.2.1', nodeName: 'node-1' },
    });
    expect(o.Entrypoint).toEqual(['run', '--ip=172.17.0.9', '--tier=front', '$(LITERAL)', '$(UNKNOWN)']);
    expect(o.Cmd).toEqual(['--node=node-1']);
    expect(o.Env).toEqual(['MY_IP=172.17.0.9', 'TIER=front', 'NODE=node-1', 'URL=http://172.17.0.9:80', 'MEM=128']);
    expect(o.User).toBe('1000:2000');
    expect(o.Labels).toMatchObject({ [LABEL.containerName]: 'app', [LABEL.restartCount]: '3', [LABEL.hash]: 'h1', [LABEL.containerType]: 'app' });
    expect(o.HostConfig).toMatchObject({
      NetworkMode: 'container:sb',
      IpcMode: 'container:sb',
      Memory: 128 * 1024 * 1024,
      // No swap, as the kubelet's NoSwap: the engine's default would allow as much swap again.
      MemorySwap: 128 * 1024 * 1024,
      NanoCpus: 500_000_000,
      CpuShares: 256,
      CapAdd: ['NET_ADMIN'],
      CapDrop: ['ALL'],
      ReadonlyRootfs: true,
      SecurityOpt: ['seccomp=unconfined', 'no-new-privileges'],
      GroupAdd: ['5'],
      RestartPolicy: { Name: 'always' },
      Mounts: [{ Type: 'bind', Source: '/state/pods/u/volume-subpaths/data/app/0', Target: '/data', ReadOnly: true, BindOptions: { Propagation: 'rprivate' } }],
    });
    expect(o.StopTimeout).toBe(30);
  });

  it('never hands the engine a subPath it was not given pinned: the check cannot be skipped', () => {
    expect(() =>
      containerOptions(d.pod, id, d.pod.spec.containers[0]!, {
        type: 'app',
        restartCount: 0,
        hash: 'h',
        volumes: new Map([['data', { kind: 'bind', path: '/srv' }]]),
        runtime: { podIP: '', hostIP: '', nodeName: 'n' },
      }),
    ).toThrow(/subPath "www" of volume data was not checked/);
  });

  it('expands $(VAR) the Kubernetes way', () => {
    const vars = new Map([['A', 'x']]);
    expect(expandVars('$(A)-$(B)-$$(A)-$$-$', vars)).toBe('x-$(B)-$(A)-$-$');
  });
});

describe('groupObserved', () => {
  it('rebuilds pods from labels alone, newest first, ignoring foreign containers', () => {
    const labels = (name: string, type: string, count: number): Record<string, string> => ({
      [LABEL.managedBy]: 'podrun',
      [LABEL.podUid]: 'u1',
      [LABEL.podName]: 'p',
      [LABEL.podNamespace]: 'ns',
      [LABEL.containerName]: name,
      [LABEL.containerType]: type,
      [LABEL.hash]: 'h',
      [LABEL.restartCount]: String(count),
      [LABEL.source]: 'file:/x',
    });
    const info = (id: string, l: Record<string, string>, state: string, status: string) =>
      ({
        Id: id,
        Names: [`/${id}`],
        Image: 'i',
        ImageID: '',
        Command: '',
        Created: 1,
        Ports: [],
        Labels: l,
        State: state,
        Status: status,
        HostConfig: { NetworkMode: '' },
        NetworkSettings: { Networks: {} },
        Mounts: [],
      }) as never;
    const pods = groupObserved(
      [
        info('a0', labels('a', 'app', 0), 'exited', 'Exited (2) 5 seconds ago'),
        info('a1', labels('a', 'app', 1), 'running', 'Up 3 seconds'),
        info('s0', labels('POD', 'sandbox', 0), 'running', 'Up 9 seconds'),
        info('foreign', { 'com.example': 'x' }, 'running', 'Up'),
      ].map(recordFromListed),
    );
    expect(pods).toHaveLength(1);
    expect(pods[0]!.containers.map((c) => [c.id, c.state, c.exitCode])).toEqual([
      ['a1', 'running', undefined],
      ['a0', 'exited', 2],
    ]);
    expect(pods[0]!.sandboxes.map((s) => s.id)).toEqual(['s0']);
  });
});

describe('the pod spec in force', () => {
  it("takes each container from its newest instance's own label, and the newest grace period", () => {
    const v1 = desired(POD);
    const v2 = desired(POD.replace('image: nginx:1.27', 'image: nginx:1.28'));
    const id = identityOf(v1.pod, 'file:/p.yaml');
    const sandbox = sandboxOptions(v1.pod, id, { attempt: 0, hash: 'sh' });
    const newer = { ...v2.pod, spec: { ...v2.pod.spec, terminationGracePeriodSeconds: 3 } };
    const c = containerOptions(newer, id, newer.spec.containers[0]!, {
      type: 'app',
      restartCount: 1,
      hash: 'h2',
      volumes: new Map([['data', { kind: 'bind', path: '/srv' }]]),
      pinned: new Map([[0, '/pinned']]),
      runtime: { podIP: '', hostIP: '', nodeName: 'n' },
    });
    const list = [
      { Id: 'sb', Names: ['/sb'], Labels: sandbox.Labels, State: 'running', Status: 'Up', Created: 1, Image: 'p' },
      { Id: 'c1', Names: ['/c1'], Labels: c.Labels, State: 'running', Status: 'Up', Created: 2, Image: 'x' },
    ] as unknown as Docker.ContainerInfo[];
    const [o] = groupObserved(list.map(recordFromListed));
    expect(o!.spec!.spec.terminationGracePeriodSeconds).toBe(3);
    expect(o!.spec!.spec.containers[0]).toEqual(newer.spec.containers[0]);
    expect(o!.containers[0]!.graceSeconds).toBe(3);
    expect(o!.containers[0]!.spec).toEqual(newer.spec.containers[0]);
  });
});
