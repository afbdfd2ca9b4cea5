import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { LABEL, MANAGED_BY } from '../../src/runtime/labels.js';
import { boundNs, parseCriLine, timeNs } from '../../src/runtime/cri/logs.js';
import { writeCriLog } from '../../src/runtime/cri/log-read.js';
import { ContainerState, PodSandboxState } from '../../src/runtime/cri/messages.js';
import { recordFromContainer, recordFromSandbox, rfc3339 } from '../../src/runtime/cri/records.js';
import { transitions } from '../../src/runtime/cri/relist.js';
import { criEndpoint } from '../../src/runtime/open-engine.js';
import { sandboxProblem } from '../../src/runtime/cri/engine.js';
import { groupObserved, type EngineContainer, type EngineSandbox } from '../../src/runtime/observed.js';
import type { EngineEvent } from '../../src/runtime/runtime-types.js';

const dir = mkdtempSync(join(tmpdir(), 'podrun-cri-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

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
    expect(sb.state).toBe('notready');
  });
});

/** An event's exit code: a container's end says one, a sandbox's never. */
const codeOf = (e: EngineEvent): number | undefined => (e.kind === 'sandbox' ? undefined : e.exitCode);

describe('records: a sandbox as the runtime says it', () => {
  const item = (state: number, attempt = 2) => ({
    id: 'sb1',
    metadata: { name: 'web', uid: 'u1', namespace: 'ns', attempt },
    state,
    createdAt: 7_900_000_000n,
    labels: { [LABEL.managedBy]: MANAGED_BY, [LABEL.podUid]: 'u1', [LABEL.podName]: 'web', [LABEL.podNamespace]: 'ns', [LABEL.containerType]: 'sandbox' },
    annotations: { [LABEL.restartCount]: String(attempt), [LABEL.hash]: 'sh' },
    runtimeHandler: '',
  });

  it('takes READY as ready and NOTREADY as not ready, straight from the runtime, with its address, labels and annotations as one map', () => {
    expect(recordFromSandbox(item(PodSandboxState.READY), 'pause:3.9', '10.88.0.4')).toEqual({
      kind: 'sandbox',
      id: 'sb1',
      name: expect.stringContaining('_POD_ns_'),
      image: 'pause:3.9',
      labels: { ...item(0).labels, ...item(2).annotations },
      state: 'ready',
      createdAt: 7,
      network: { ip: '10.88.0.4' },
    });
    const down = recordFromSandbox(item(PodSandboxState.NOTREADY), 'pause:3.9');
    expect(down).toMatchObject({ kind: 'sandbox', state: 'notready' });
    expect(down).not.toHaveProperty('network');
    expect(down).not.toHaveProperty('exitCode');
  });

  it("groups it as the pod's sandbox: the newest attempt first, each with its hash and state", () => {
    const [pod] = groupObserved([
      recordFromSandbox(item(PodSandboxState.NOTREADY, 1), 'pause'),
      recordFromSandbox({ ...item(PodSandboxState.READY, 2), id: 'sb2' }, 'pause', '10.88.0.5'),
    ]);
    expect(pod!.sandboxes.map((s) => [s.id, s.state, s.attempt, s.hash, s.ip])).toEqual([
      ['sb2', 'ready', 2, 'sh', '10.88.0.5'],
      ['sb1', 'notready', 1, 'sh', undefined],
    ]);
  });

  it('relists a sandbox as state changes: first seen in its state, told again only when it changes', () => {
    const sb = (state: EngineSandbox['state']): EngineSandbox => ({ kind: 'sandbox', id: 's', name: 'n', image: 'pause', labels: {}, state, createdAt: 1 });
    const said = (es: EngineEvent[]): string[] => es.map((e) => (e.kind === 'sandbox' ? `sandbox ${e.state}` : e.kind));
    expect(said(transitions(undefined, sb('ready'), 1))).toEqual(['sandbox ready']);
    expect(said(transitions(undefined, sb('notready'), 1))).toEqual(['sandbox notready']);
    expect(said(transitions(sb('ready'), sb('ready'), 1))).toEqual([]);
    expect(said(transitions(sb('ready'), sb('notready'), 1))).toEqual(['sandbox notready']);
  });
});

describe('relist: events from successive lists', () => {
  const c = (state: 'created' | 'running' | 'exited', exitCode?: number): EngineContainer => ({
    kind: 'container',
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
    expect(transitions(undefined, c('exited', 2), 1).map((e) => [e.kind, codeOf(e)])).toEqual([['exited', 2]]);
    expect(transitions(undefined, c('created'), 1).map((e) => e.kind)).toEqual(['created']);
    expect(transitions(c('running'), c('exited', 137), 1).map((e) => [e.kind, codeOf(e)])).toEqual([['exited', 137]]);
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
