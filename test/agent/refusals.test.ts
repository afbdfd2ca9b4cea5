import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DesiredSet } from '../../src/agent/desired-set.js';
import { podList } from '../../src/agent/pod-list.js';
import type { Logger } from '../../src/log/logger.js';
import type { PodPolicy } from '../../src/manifest/policy.js';
import type { ObservedPod } from '../../src/runtime/observed.js';
import { EventRecorder } from '../../src/status/events.js';
import { podStatus } from '../../src/status/pod-status.js';
import { MemorySource } from '../fakes/memory-source.js';

const stateDir = mkdtempSync(join(tmpdir(), 'podrun-refusals-'));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

const TIGHT: PodPolicy = { allowPrivileged: true, allowHostNamespaces: true, allowedHostPaths: ['/srv'] };

const hostPathPod = `apiVersion: v1
kind: Pod
metadata: {name: logs}
spec:
  containers: [{name: c, image: busybox:1.36}]
  volumes:
  - name: v
    hostPath: {path: /etc}
`;

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

async function world(): Promise<{ set: DesiredSet; source: MemorySource; events: EventRecorder }> {
  const source = new MemorySource('file:/etc/podrun');
  await source.start(() => undefined);
  const events = new EventRecorder();
  return { set: new DesiredSet([source], { stateDir, log: quiet, events, run: (d) => d }), source, events };
}

/** The agent's /pods over the set, with the engine holding `observed`. */
function listed(set: DesiredSet, observed: ObservedPod[]): Promise<Record<string, unknown>[]> {
  return podList({
    set,
    cache: { pods: () => observed },
    syncer: { status: async (d, o) => (d || o ? podStatus(d?.pod ?? o!.spec!, o) : undefined), podIP: async () => undefined },
    gate: { rolledBack: () => undefined },
    hostIP: '10.0.0.1',
    deletion: () => undefined,
  });
}

type Shown = { metadata: { name: string }; status: { phase: string; reason?: string; message?: string; conditions: Record<string, string>[] } };

describe('a pod the agent refuses is visible', () => {
  it('a newly refused pod is listed Failed with the reason, and a Warning event names file, line and field', async () => {
    const { set, source, events } = await world();
    source.declareUnder(TIGHT, hostPathPod);
    set.merge([]);
    const pods = (await listed(set, [])) as Shown[];
    expect(pods.map((p) => [p.metadata.name, p.status.phase, p.status.reason])).toEqual([['logs', 'Failed', 'Forbidden']]);
    expect(pods[0]!.status.message).toBe(
      'Pod was rejected: /etc/podrun/m0.yaml:8:22 spec.volumes[0].hostPath.path: "/etc" is not under an allowed host path (--allowed-host-paths=/srv)',
    );
    expect(events.list().map((e) => [e.type, e.reason, e.involvedObject.name, e.involvedObject.fieldPath, e.message])).toEqual([
      ['Warning', 'Forbidden', 'logs', 'spec.volumes[0].hostPath.path', pods[0]!.status.message],
    ]);
    const status = JSON.parse(readFileSync(join(stateDir, 'agent-status.json'), 'utf8')) as { refused: { pod: string; reason: string }[] };
    expect(status.refused.map((r) => `${r.pod} ${r.reason}`)).toEqual(['default/logs Forbidden']);
  });

  it('a running pod the tightened policy refuses keeps running, with a Warning event and a condition', async () => {
    const { set, source, events } = await world();
    source.declareUnder(TIGHT, hostPathPod);
    const running: ObservedPod = {
      uid: 'u1',
      name: 'logs',
      namespace: 'default',
      source: 'file:/etc/podrun/m0.yaml',
      spec: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'logs' }, spec: { containers: [] } },
      sandboxes: [{ id: 's', state: 'ready', createdAt: 1 } as ObservedPod['sandboxes'][number]],
      containers: [],
    };
    const change = set.merge([running]);
    expect(change.gone).toEqual([]);
    const pods = (await listed(set, [running])) as Shown[];
    expect(pods.map((p) => [p.metadata.name, p.status.phase])).toEqual([['logs', 'Running']]);
    expect(pods[0]!.status.conditions.find((c) => c.type === 'podrun.io/Admitted')).toMatchObject({ status: 'False', reason: 'Forbidden' });
    // On the pod the engine runs, under its own uid (a manifest may set metadata.uid).
    expect(events.list().map((e) => [e.involvedObject.uid, e.type, e.reason, e.message])).toEqual([
      [
        'u1',
        'Warning',
        'Forbidden',
        '/etc/podrun/m0.yaml:8:22 spec.volumes[0].hostPath.path: "/etc" is not under an allowed host path (--allowed-host-paths=/srv) (the running pod is kept: podrun never stops a pod for a policy read after it started)',
      ],
    ]);
  });

  it('a refusal that ended takes its events with it', async () => {
    const { set, source, events } = await world();
    source.declareUnder(TIGHT, hostPathPod);
    set.merge([]);
    expect(events.podCount()).toBe(1);
    source.declareUnder(TIGHT);
    set.merge([]);
    expect(events.podCount()).toBe(0);
    expect(await listed(set, [])).toEqual([]);
  });
});
