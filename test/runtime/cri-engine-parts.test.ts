import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/manifest/types.js';
import { LABEL } from '../../src/runtime/labels.js';
import { boundNs, parseCriLine, timeNs, writeCriLog } from '../../src/runtime/cri/logs.js';
import { ContainerState, NamespaceMode, PodSandboxState } from '../../src/runtime/cri/messages.js';
import { containerConfig, containerLogPath, sandboxConfig, splitLabels } from '../../src/runtime/cri/pod-config.js';
import { recordFromContainer, recordFromSandbox, rfc3339 } from '../../src/runtime/cri/records.js';
import { transitions } from '../../src/runtime/cri/relist.js';
import { criEndpoint } from '../../src/runtime/open-engine.js';
import { sandboxProblem } from '../../src/runtime/cri/engine.js';
import { containerCreateOptions, startOptions } from '../../src/runtime/docker/spec.js';

const dir = mkdtempSync(join(tmpdir(), 'podrun-cri-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pod: Pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'ns', uid: 'u-1' },
  spec: {
    hostPID: true,
    terminationGracePeriodSeconds: 7,
    containers: [
      {
        name: 'c',
        image: 'busybox',
        command: ['sh'],
        args: ['-c', 'echo $(X)'],
        env: [{ name: 'X', value: 'y' }],
        ports: [{ containerPort: 80, hostPort: 8080 }],
        resources: { limits: { cpu: '500m', memory: '64Mi' } },
        securityContext: { runAsUser: 1000, capabilities: { drop: ['ALL'] } },
      },
    ],
  },
};
const id = { uid: 'u-1', name: 'p', namespace: 'ns', source: 'file:/x' };

describe('pod-config: a pod in runtime.v1 words', () => {
  it('puts specs in annotations (containerd caps a label at 4096 bytes) and identity in labels', () => {
    const s = splitLabels({ [LABEL.podUid]: 'u', [LABEL.podSpec]: '{}', [LABEL.containerSpec]: '{}' });
    expect(s.labels).toEqual({ [LABEL.podUid]: 'u' });
    expect(Object.keys(s.annotations).sort()).toEqual([LABEL.containerSpec, LABEL.podSpec].sort());
  });

  it('makes the sandbox config: metadata, log directory, ports, namespaces, identity', () => {
    const c = sandboxConfig(pod, id, { instance: 'inst', attempt: 2, hash: 'h', pauseImage: 'pause', logRoot: '/logs' });
    expect(c.metadata).toEqual({ name: 'p', uid: 'u-1', namespace: 'ns', attempt: 2 });
    expect(c.logDirectory).toBe('/logs/ns_p_u-1');
    expect(c.hostname).toBe('p');
    expect(c.portMappings).toEqual([{ protocol: 0, containerPort: 80, hostPort: 8080 }]);
    expect(c.linux?.securityContext?.namespaceOptions).toEqual({ network: NamespaceMode.POD, pid: NamespaceMode.NODE, ipc: NamespaceMode.POD });
    expect(c.labels?.[LABEL.instance]).toBe('inst');
    expect(c.labels?.['io.kubernetes.pod.uid']).toBe('u-1');
    expect(JSON.parse(c.annotations?.[LABEL.podSpec] ?? '{}').metadata.name).toBe('p');
  });

  it('makes the container config from what spec.ts decided: command, args, env, limits, user, log path', () => {
    const c = pod.spec.containers[0]!;
    const d = containerCreateOptions(
      pod,
      { ...id, instance: 'inst' },
      c,
      startOptions(
        pod,
        c,
        { type: 'app', restartCount: 3, hash: 'h', sandbox: { id: 'sb', ip: '10.0.0.2' }, volumes: new Map(), engineRestarts: false },
        { hostIP: '127.0.0.1', nodeName: 'n', oomScoreFloor: 0 },
      ),
    );
    const cc = containerConfig(pod, c, d, { instance: 'inst', restartCount: 3 });
    expect(cc.metadata).toEqual({ name: 'c', attempt: 3 });
    expect(cc.command).toEqual(['sh']);
    expect(cc.args).toEqual(['-c', 'echo y']);
    expect(cc.envs).toContainEqual({ key: 'X', value: 'y' });
    expect(cc.logPath).toBe('c/3.log');
    expect(containerLogPath('c', 0)).toBe('c/0.log');
    expect(cc.linux?.resources).toMatchObject({ cpuPeriod: 100_000, cpuQuota: 50_000, memoryLimitInBytes: 64 * 1024 * 1024 });
    expect(cc.linux?.securityContext?.runAsUser).toEqual({ value: 1000 });
    expect(cc.linux?.securityContext?.capabilities).toEqual({ dropCapabilities: ['ALL'] });
    expect(cc.labels?.[LABEL.restartCount]).toBe('3');
    expect(cc.annotations?.[LABEL.gracePeriod]).toBe('7');
  });
});

describe('records: the runtime answers as podrun records', () => {
  it('keeps a CRI time to the nanosecond', () => {
    expect(rfc3339(1_700_000_000_123_456_789n)).toBe('2023-11-14T22:13:20.123456789Z');
    expect(rfc3339(0n)).toBeUndefined();
  });

  it('reads identity from labels and annotations together, and an exit code only for an exited container', () => {
    const item = {
      id: 'c1',
      podSandboxId: 's',
      metadata: { name: 'c', attempt: 1 },
      image: { image: 'busybox' },
      imageRef: 'sha256:x',
      state: ContainerState.EXITED,
      createdAt: 5_000_000_000n,
      labels: { [LABEL.podName]: 'p' },
      annotations: { [LABEL.containerSpec]: '{}' },
      imageId: '',
    };
    const r = recordFromContainer(item, 2);
    expect(r).toMatchObject({ id: 'c1', state: 'exited', exitCode: 2, created: 5, labels: { [LABEL.podName]: 'p', [LABEL.containerSpec]: '{}' } });
    expect(recordFromContainer({ ...item, state: ContainerState.RUNNING }, 2).exitCode).toBeUndefined();
    const sb = recordFromSandbox(
      {
        id: 's',
        metadata: { name: 'p', uid: 'u', namespace: 'ns', attempt: 0 },
        state: PodSandboxState.NOTREADY,
        createdAt: 0n,
        labels: {},
        annotations: {},
        runtimeHandler: '',
      },
      'pause',
    );
    expect(sb.state).toBe('exited');
  });
});

describe('relist: events from successive lists', () => {
  const c = (state: 'created' | 'running' | 'exited', exitCode?: number) => ({
    id: 'x',
    name: 'n',
    image: 'i',
    labels: {},
    state,
    created: 1,
    ...(exitCode !== undefined ? { exitCode } : {}),
  });
  it('turns changes of state into lifecycle events, a crash between two lists included', () => {
    // First seen: its present state only (a `created` for a running one would show it not started for a moment).
    expect(transitions(undefined, c('running'), 1).map((e) => e.kind)).toEqual(['started']);
    expect(transitions(undefined, c('exited', 2), 1).map((e) => [e.kind, e.exitCode])).toEqual([['exited', 2]]);
    expect(transitions(undefined, c('created'), 1).map((e) => e.kind)).toEqual(['created']);
    expect(transitions(c('running'), c('exited', 137), 1).map((e) => [e.kind, e.exitCode])).toEqual([['exited', 137]]);
    expect(transitions(c('created'), c('exited', 1), 1).map((e) => e.kind)).toEqual(['started', 'exited']);
    expect(transitions(c('running'), c('running'), 1)).toEqual([]);
  });
});

describe('CRI log files', () => {
  it('parses the CRI format: full and partial lines, streams, an empty line', () => {
    expect(parseCriLine('2024-01-01T00:00:00.000000001Z stdout F hello')).toEqual({
      time: '2024-01-01T00:00:00.000000001Z',
      stream: 'stdout',
      text: 'hello\n',
    });
    expect(parseCriLine('2024-01-01T00:00:00Z stderr P par')?.text).toBe('par');
    expect(parseCriLine('2024-01-01T00:00:00Z stdout F')?.text).toBe('\n');
    expect(parseCriLine('garbage')).toBeUndefined();
    expect(parseCriLine('2024-01-01T00:00:00Z stdin F x')).toBeUndefined();
    expect(timeNs('1970-01-01T00:00:01.5Z')).toBe(1_500_000_000n);
    expect(boundNs('2.000000001')).toBe(2_000_000_001n);
  });

  it('writes stdout and stderr apart, with --tail counting whole lines and --since by time', async () => {
    const file = join(dir, '0.log');
    writeFileSync(
      file,
      [
        '1970-01-01T00:00:01Z stdout F one',
        '1970-01-01T00:00:02Z stderr F two',
        '1970-01-01T00:00:03Z stdout P thr',
        '1970-01-01T00:00:03Z stdout F ee',
        'not a line',
        '',
      ].join('\n'),
    );
    const read = async (o: Parameters<typeof writeCriLog>[1]): Promise<{ out: string; err: string }> => {
      let out = '';
      let err = '';
      const o1 = new PassThrough().on('data', (b: Buffer) => (out += b.toString()));
      const e1 = new PassThrough().on('data', (b: Buffer) => (err += b.toString()));
      await writeCriLog(file, o, o1, e1, async () => false);
      return { out, err };
    };
    expect(await read({ follow: false, timestamps: false })).toEqual({ out: 'one\nthree\n', err: 'two\n' });
    expect(await read({ follow: false, timestamps: false, tail: 1 })).toEqual({ out: 'three\n', err: '' });
    expect(await read({ follow: false, timestamps: false, since: 2 })).toEqual({ out: 'three\n', err: 'two\n' });
    expect((await read({ follow: false, timestamps: true, tail: 1 })).out).toBe('1970-01-01T00:00:03Z thr1970-01-01T00:00:03Z ee\n');
  });
});

describe('engine choice and errors', () => {
  it('takes a CRI endpoint as the kubelet does: unix:// or a bare path; nothing else', () => {
    expect(criEndpoint('/run/containerd/containerd.sock')).toBe('unix:///run/containerd/containerd.sock');
    expect(criEndpoint('unix:///run/crio/crio.sock')).toBe('unix:///run/crio/crio.sock');
    expect(criEndpoint(undefined)).toBeUndefined();
    expect(() => criEndpoint('tcp://1.2.3.4:1')).toThrow(/unix socket/);
  });

  it('names the fix for a missing sandbox image', () => {
    expect(sandboxProblem('failed to get sandbox image "registry.k8s.io/pause:3.6": failed to pull')).toMatch(
      /sandbox \(pause\) image registry\.k8s\.io\/pause:3\.6 is missing.*sandbox_image/,
    );
  });
});
