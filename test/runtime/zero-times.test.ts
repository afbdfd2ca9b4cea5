import type Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { LABEL, MANAGED_BY } from '../../src/runtime/labels.js';
import { groupObserved } from '../../src/runtime/observed.js';
import { ContainerState, PodSandboxState, type ContainerStatusInfo } from '../../src/runtime/cri/messages.js';
import { recordFromContainer, recordFromSandbox, recordFromStatus, statusFromCri } from '../../src/runtime/cri/records.js';
import { engineTime, recordFromInspect, recordFromListed, statusFromInspect } from '../../src/runtime/docker/records.js';

// A runtime's "unset" time is no time: podrun's records leave it out, so nothing above the
// runtime prints it or counts an age from it (issue 44: a failed sandbox showed 1754-08-30).

/** int64's minimum, which a runtime may send for "never". */
const MIN_INT64 = -9223372036854775808n;
/** Go's zero time through UnixNano(): it overflows to 1754-08-30T22:43:41.128654848Z. */
const GO_ZERO_NS = -6795364578871345152n;
const UNSET_NS = [0n, MIN_INT64, GO_ZERO_NS, -1n];

const LABELS = { [LABEL.managedBy]: MANAGED_BY, [LABEL.podUid]: 'u1', [LABEL.podName]: 'web', [LABEL.podNamespace]: 'ns' };

describe('CRI: a zero time from the runtime is absent', () => {
  const sandbox = (createdAt: bigint) => ({
    id: 'sb1',
    metadata: { name: 'web', uid: 'u1', namespace: 'ns', attempt: 0 },
    state: PodSandboxState.NOTREADY,
    createdAt,
    labels: { ...LABELS, [LABEL.containerType]: 'sandbox' },
    annotations: { [LABEL.restartCount]: '0', [LABEL.hash]: 'h' },
    runtimeHandler: '',
  });
  const status = (createdAt: bigint, startedAt: bigint, finishedAt: bigint): ContainerStatusInfo => ({
    id: 'c1',
    metadata: { name: 'app', attempt: 0 },
    state: ContainerState.EXITED,
    createdAt,
    startedAt,
    finishedAt,
    exitCode: 1,
    image: { image: 'busybox' },
    imageRef: 'sha256:x',
    reason: 'Error',
    message: '',
    labels: { ...LABELS, [LABEL.containerType]: 'app', [LABEL.containerName]: 'app' },
    annotations: {},
    mounts: [],
    logPath: '',
    imageId: '',
  });

  it.each(UNSET_NS)("gives a sandbox created at %s no creation time, and the pod's observed sandbox none", (ns) => {
    const rec = recordFromSandbox(sandbox(ns), 'pause');
    expect(rec).not.toHaveProperty('createdAt');
    const [pod] = groupObserved([rec]);
    expect(pod?.sandboxes[0]).not.toHaveProperty('createdAt');
  });

  it.each(UNSET_NS)('gives a container created, started and finished at %s none of those times', (ns) => {
    const s = status(ns, ns, ns);
    expect(recordFromStatus(s)).not.toHaveProperty('created');
    expect(recordFromContainer({ ...s, podSandboxId: 'sb1' })).not.toHaveProperty('created');
    const st = statusFromCri(s);
    expect(st).not.toHaveProperty('startedAt');
    expect(st).not.toHaveProperty('finishedAt');
    const [pod] = groupObserved([recordFromStatus(s)]);
    expect(pod?.containers[0]).not.toHaveProperty('created');
  });

  it('keeps a real time', () => {
    expect(recordFromSandbox(sandbox(1_700_000_000_123_456_789n), 'pause').createdAt).toBe(1_700_000_000);
    const st = statusFromCri(status(1_700_000_000_000_000_000n, 1_700_000_001_000_000_000n, 1_700_000_002_500_000_000n));
    expect([st.startedAt, st.finishedAt]).toEqual(['2023-11-14T22:13:21.000000000Z', '2023-11-14T22:13:22.500000000Z']);
    expect(recordFromStatus(status(1_700_000_000_000_000_000n, 0n, 0n)).created).toBe(1_700_000_000);
  });
});

describe('Docker: a zero time from the engine is absent', () => {
  const SANDBOX = { ...LABELS, [LABEL.containerType]: 'sandbox', [LABEL.containerName]: 'POD' };
  const APP = { ...LABELS, [LABEL.containerType]: 'app', [LABEL.containerName]: 'app' };
  const listed = (labels: Record<string, string>, created: number) =>
    ({ Id: 'x', Names: ['/n'], Image: 'i', Created: created, Labels: labels, State: 'created', Status: 'Created' }) as unknown as Docker.ContainerInfo;
  const inspected = (labels: Record<string, string>, created: string, started: string, finished: string) =>
    ({
      Id: 'x',
      Name: '/n',
      Created: created,
      State: { Status: 'exited', ExitCode: 1, StartedAt: started, FinishedAt: finished, OOMKilled: false, Restarting: false, Error: '' },
      Config: { Image: 'busybox:1', Labels: labels },
      NetworkSettings: { Networks: {} },
    }) as unknown as Docker.ContainerInspectInfo;
  const UNSET = ['0001-01-01T00:00:00Z', '1754-08-30T22:43:41.128654848Z', '1969-12-31T23:59:59Z'];

  it.each(UNSET)('reads %s as no time', (t) => {
    expect(engineTime(t)).toBeUndefined();
    for (const labels of [SANDBOX, APP]) {
      const rec = recordFromInspect(inspected(labels, t, t, t));
      expect(rec).not.toHaveProperty(rec.kind === 'sandbox' ? 'createdAt' : 'created');
    }
    const st = statusFromInspect(inspected(APP, t, t, t).State, 0);
    expect(st).not.toHaveProperty('startedAt');
    expect(st).not.toHaveProperty('finishedAt');
  });

  it.each([0, -1, -62135596800])('reads a listed creation at %s s as no time', (s) => {
    expect(recordFromListed(listed(SANDBOX, s))).not.toHaveProperty('createdAt');
    expect(recordFromListed(listed(APP, s))).not.toHaveProperty('created');
    const [pod] = groupObserved([recordFromListed(listed(SANDBOX, s)), recordFromListed(listed(APP, s))]);
    expect(pod?.sandboxes[0]).not.toHaveProperty('createdAt');
    expect(pod?.containers[0]).not.toHaveProperty('created');
  });

  it('keeps a real time', () => {
    expect(recordFromListed(listed(SANDBOX, 5))).toMatchObject({ createdAt: 5 });
    expect(recordFromInspect(inspected(APP, '2026-11-30T09:00:00.5Z', '', ''))).toMatchObject({ created: Date.parse('2026-11-30T09:00:00Z') / 1000 });
    expect(engineTime('2026-11-30T09:00:01.123456789Z')).toBe('2026-11-30T09:00:01.123456789Z');
  });
});
