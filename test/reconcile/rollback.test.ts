import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/manifest/types.js';
import { decideRollback, notReadyReason, rollbackDeadline, type RollbackRecord } from '../../src/reconcile/rollback.js';
import { parseDuration } from '../../src/base/duration.js';
import type { ContainerStatusSummary, PodStatusSummary } from '../../src/status/pod-status.js';

const pod = (env: string, annotations?: Record<string, string>): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', ...(annotations ? { annotations } : {}) },
  spec: { containers: [{ name: 'app', image: 'busybox', env: [{ name: 'V', value: env }] }] },
});
const v1 = { version: 'v1', pod: pod('1') };
const v2 = { version: 'v2', pod: pod('2') };
const v3 = { version: 'v3', pod: pod('3') };
const T0 = Date.parse('2026-11-30T10:00:00Z');
const MIN2 = 120_000;
const ready = { ready: true } as const;
const failing = { ready: false, reason: 'container app: readiness probe failed: HTTP probe failed with statuscode: 500' } as const;
const unknown = { ready: false } as const;
const goodV1: RollbackRecord = { good: { version: 'v1', pod: v1.pod, at: new Date(T0 - 1000).toISOString() } };

describe('health-gated updates (the rollback decision)', () => {
  it('remembers every version seen Ready, opted in or not, as the one to go back to', () => {
    const d = decideRollback({}, { declared: v1, deadlineMs: undefined, observed: { version: 'v1', readiness: ready }, now: T0 });
    expect(d).toEqual({ record: { good: { version: 'v1', pod: v1.pod, at: new Date(T0).toISOString() } }, run: 'declared' });
    // Not Ready: nothing remembered.
    expect(decideRollback({}, { declared: v1, deadlineMs: MIN2, observed: { version: 'v1', readiness: failing }, now: T0 }).record).toEqual({});
  });

  it('gives an update until its deadline, then goes back to the last Ready version with the reason', () => {
    const start = decideRollback(goodV1, { declared: v2, deadlineMs: MIN2, now: T0 });
    expect(start).toEqual({ record: { ...goodV1, trying: { version: 'v2', since: new Date(T0).toISOString() } }, run: 'declared', checkAt: T0 + MIN2 });
    const before = decideRollback(start.record, { declared: v2, deadlineMs: MIN2, observed: { version: 'v2', readiness: failing }, now: T0 + MIN2 - 1 });
    expect(before.run).toBe('declared');
    expect(before.checkAt).toBe(T0 + MIN2);
    const due = decideRollback(before.record, { declared: v2, deadlineMs: MIN2, observed: { version: 'v2', readiness: failing }, now: T0 + MIN2 });
    expect(due).toEqual({
      record: {
        ...goodV1,
        failed: {
          version: 'v2',
          reason: failing.reason,
          since: new Date(T0).toISOString(),
          at: new Date(T0 + MIN2).toISOString(),
          deadlineMs: MIN2,
          rolledBackTo: 'v1',
        },
      },
      run: 'good',
      rolledBack: failing.reason,
    });
    // The failed version is not tried again while the source declares it...
    const later = decideRollback(due.record, { declared: v2, deadlineMs: MIN2, observed: { version: 'v1', readiness: ready }, now: T0 + 10 * MIN2 });
    expect(later).toEqual({ record: due.record, run: 'good' });
    // ...and is, as a new attempt, once the source changes again.
    const next = decideRollback(later.record, { declared: v3, deadlineMs: MIN2, now: T0 + 11 * MIN2 });
    expect(next).toEqual({
      record: { ...goodV1, trying: { version: 'v3', since: new Date(T0 + 11 * MIN2).toISOString() } },
      run: 'declared',
      checkAt: T0 + 12 * MIN2,
    });
  });

  it('an update that becomes Ready stays, and becomes the version to go back to', () => {
    const start = decideRollback(goodV1, { declared: v2, deadlineMs: MIN2, now: T0 });
    const ok = decideRollback(start.record, { declared: v2, deadlineMs: MIN2, observed: { version: 'v2', readiness: ready }, now: T0 + 5000 });
    expect(ok).toEqual({ record: { good: { version: 'v2', pod: v2.pod, at: new Date(T0 + 5000).toISOString() } }, run: 'declared' });
    expect(decideRollback(ok.record, { declared: v2, deadlineMs: MIN2, observed: { version: 'v2', readiness: failing }, now: T0 + 10 * MIN2 }).run).toBe(
      'declared',
    );
  });

  it('the deadline starts only once the engine can be reached', () => {
    const away = decideRollback(goodV1, { declared: v2, deadlineMs: MIN2, now: T0, engineUp: false });
    expect(away).toEqual({ record: goodV1, run: 'declared' });
    const back = decideRollback(away.record, { declared: v2, deadlineMs: MIN2, now: T0 + 10 * MIN2, engineUp: true });
    expect(back.record.trying).toEqual({ version: 'v2', since: new Date(T0 + 10 * MIN2).toISOString() });
    // A version already being tried keeps its clock while the engine is away.
    expect(decideRollback(back.record, { declared: v2, deadlineMs: MIN2, now: T0 + 11 * MIN2, engineUp: false }).record).toEqual(back.record);
  });

  it('the deadline counts from when the update was first seen, across restarts', () => {
    const restarted: RollbackRecord = { ...goodV1, trying: { version: 'v2', since: new Date(T0).toISOString() } };
    // The agent came back after the deadline and no probe has answered yet: not judged blind.
    const blind = decideRollback(restarted, { declared: v2, deadlineMs: MIN2, observed: { version: 'v2', readiness: unknown }, now: T0 + 3 * MIN2 });
    expect(blind).toEqual({ record: restarted, run: 'declared', checkAt: T0 + 3 * MIN2 + 1000 });
    const judged = decideRollback(restarted, { declared: v2, deadlineMs: MIN2, observed: { version: 'v2', readiness: failing }, now: T0 + 3 * MIN2 });
    expect(judged.run).toBe('good');
  });

  it('pods without the annotation, without a Ready version, or back at it, are left as the kubelet leaves them', () => {
    const failedV2: RollbackRecord = {
      ...goodV1,
      failed: { version: 'v2', reason: 'x', since: new Date(T0).toISOString(), at: new Date(T0).toISOString(), deadlineMs: MIN2, rolledBackTo: 'v1' },
    };
    expect(decideRollback(failedV2, { declared: v2, deadlineMs: undefined, now: T0 })).toEqual({ record: goodV1, run: 'declared' });
    expect(decideRollback({}, { declared: v2, deadlineMs: MIN2, observed: { version: 'v2', readiness: failing }, now: T0 + 10 * MIN2 })).toEqual({
      record: {},
      run: 'declared',
    });
    expect(decideRollback(failedV2, { declared: v1, deadlineMs: MIN2, now: T0 })).toEqual({ record: goodV1, run: 'declared' });
  });

  it('reads the deadline from the annotation, else the default; 0 opts out', () => {
    expect(rollbackDeadline(pod('1', { 'podrun.io/rollback-after': '2m' }), 0, parseDuration)).toBe(MIN2);
    expect(rollbackDeadline(pod('1'), 30_000, parseDuration)).toBe(30_000);
    expect(rollbackDeadline(pod('1', { 'podrun.io/rollback-after': '0' }), 30_000, parseDuration)).toBeUndefined();
    expect(rollbackDeadline(pod('1'), 0, parseDuration)).toBeUndefined();
  });
});

const app = (c: Partial<ContainerStatusSummary>): ContainerStatusSummary => ({
  name: 'app',
  type: 'app',
  state: 'running',
  restartCount: 0,
  image: 'busybox',
  ready: true,
  started: true,
  ...c,
});
const status = (containers: ContainerStatusSummary[], extra: Partial<PodStatusSummary> = {}): PodStatusSummary => ({
  phase: 'Running',
  initialized: true,
  containersReady: containers.every((c) => c.ready),
  ready: containers.every((c) => c.ready),
  containers,
  initContainers: [],
  ...extra,
});

describe('why a pod is not Ready', () => {
  const none = (): undefined => undefined;
  it('names the container and its probe, exit code or waiting reason', () => {
    expect(
      notReadyReason(
        status([app({ ready: false })]),
        true,
        () => ({ kind: 'readiness', ok: false, message: 'HTTP probe failed with statuscode: 500' }),
        () => true,
      ),
    ).toBe('container app: readiness probe failed: HTTP probe failed with statuscode: 500');
    const looping = app({
      state: 'waiting',
      reason: 'CrashLoopBackOff',
      message: 'back-off 10s',
      ready: false,
      started: false,
      lastTerminated: { exitCode: 3, reason: 'Error', containerID: 'x' },
    });
    expect(notReadyReason(status([looping]), true, none, () => false)).toBe(
      'container app is waiting: CrashLoopBackOff: back-off 10s, last exit code 3 (Error)',
    );
    expect(notReadyReason(status([app({ state: 'terminated', exitCode: 1, reason: 'Error', ready: false })]), true, none, () => false)).toBe(
      'container app exited with code 1 (Error)',
    );
    expect(
      notReadyReason(
        status([app({ ready: false, started: false })]),
        true,
        () => ({ kind: 'startup', ok: false, message: 'timeout' }),
        () => true,
      ),
    ).toBe('container app: startup probe failed: timeout');
  });

  it('is unknown while a probed container has no probe result yet, and says what is left otherwise', () => {
    expect(notReadyReason(status([app({ ready: false })]), true, none, () => true)).toBeUndefined();
    expect(
      notReadyReason(
        status([app({ ready: false })]),
        true,
        () => ({ kind: 'readiness', ok: true, message: '' }),
        () => true,
      ),
    ).toBe('container app: readiness probe has not passed yet');
    expect(notReadyReason(status([app({})], { ready: false }), true, none, () => false)).toBe('a readiness gate is not True');
    expect(notReadyReason(status([app({})]), false, none, () => false)).toBe('the update has not finished (containers still to stop or start)');
  });
});
