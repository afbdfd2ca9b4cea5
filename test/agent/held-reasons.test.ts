import { describe, expect, it } from 'vitest';
import { noteHeld } from '../../src/agent/held-reasons.js';
import { newPodRecord } from '../../src/agent/pod-record.js';
import type { DesiredPod } from '../../src/manifest/types.js';

const pod: DesiredPod = {
  key: 'ns/web',
  uid: 'u1',
  origin: { source: 'file:/m/web.yaml', file: '/m/web.yaml', line: 1 },
  pod: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'ns' }, spec: { containers: [{ name: 'app', image: 'r:5000/app:2' }] } },
};

describe('the reasons of a held start', () => {
  it('keeps the failed pull’s own answer behind ImagePullBackOff through every turn of the back-off, and says BackOff once', () => {
    const r = newPodRecord();
    const events: string[] = [];
    const note = (): void => noteHeld(pod, r, [{ name: 'app', reason: 'ImagePullBackOff', waitMs: 10_000 }], (t, m) => events.push(`${t} ${m}`));
    r.waiting.set('app', { reason: 'ErrImagePull', message: 'dial tcp 127.0.0.1:5000: connect: connection refused' });
    note();
    const first = 'Back-off pulling image "r:5000/app:2": dial tcp 127.0.0.1:5000: connect: connection refused';
    expect(r.waiting.get('app')).toEqual({ reason: 'ImagePullBackOff', message: first });
    // Another turn while still held (an engine event, a refresh): nothing of the answer is lost.
    note();
    note();
    expect(r.waiting.get('app')).toEqual({ reason: 'ImagePullBackOff', message: first });
    expect(events).toEqual(['Normal Back-off pulling image "r:5000/app:2"']);
    // The next attempt fails anew: its own answer replaces the old one, and a new stretch is announced.
    r.waiting.set('app', { reason: 'ErrImagePull', message: 'manifest unknown' });
    note();
    expect(r.waiting.get('app')?.message).toBe('Back-off pulling image "r:5000/app:2": manifest unknown');
    expect(events).toHaveLength(2);
  });

  it('says CrashLoopBackOff with the kubelet’s message and one Warning per stretch', () => {
    const r = newPodRecord();
    const events: string[] = [];
    for (const waitMs of [10_000, 9_400]) noteHeld(pod, r, [{ name: 'app', reason: 'CrashLoopBackOff', waitMs }], (t, m) => events.push(`${t} ${m}`));
    expect(r.waiting.get('app')).toEqual({ reason: 'CrashLoopBackOff', message: 'back-off 9s restarting failed container=app pod=web_ns(u1)' });
    expect(events).toEqual(['Warning Back-off restarting failed container']);
  });
});
