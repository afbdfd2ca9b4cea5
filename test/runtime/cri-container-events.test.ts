import { describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import type { EngineRecord } from '../../src/runtime/observed.js';
import type { EngineEvent } from '../../src/runtime/runtime-types.js';
import { followContainerEvents, foldContainerEvent, type EventFollowOptions } from '../../src/runtime/cri/container-events.js';
import { CriNotSupportedError, CriUnreachableError } from '../../src/runtime/cri/errors.js';
import {
  codec,
  ContainerEventResponse,
  ContainerEventType,
  ContainerState,
  PodSandboxState,
  type ContainerEvent,
  type ContainerStatusInfo,
  type PodSandboxStatusInfo,
} from '../../src/runtime/cri/messages.js';
import { relistWatch } from '../../src/runtime/cri/relist.js';

// The runtime's container events (GetContainerEvents) folded into the relist's record, on plain
// data and a fake stream: each change told once whichever of the two saw it first, what is not
// this instance's dropped, and a runtime without the call (Unimplemented) followed by relisting.

const INSTANCE = 'inst-1';
const ids = { [LABEL.instance]: INSTANCE, [LABEL.podUid]: 'uid-1', [LABEL.podName]: 'p', [LABEL.podNamespace]: 'ns' };

function sandbox(state: number, instance = INSTANCE): PodSandboxStatusInfo {
  return {
    id: 'sb1',
    metadata: { name: 'p', uid: 'uid-1', namespace: 'ns', attempt: 0 },
    state,
    createdAt: 1_000_000_000n,
    network: { ip: '10.0.0.5', additionalIps: [] },
    labels: { ...ids, [LABEL.instance]: instance },
    annotations: {},
    runtimeHandler: '',
  };
}

function container(state: number, exitCode = 0): ContainerStatusInfo {
  return {
    id: 'c1',
    metadata: { name: 'a', attempt: 0 },
    state,
    createdAt: 2_000_000_000n,
    startedAt: 0n,
    finishedAt: 0n,
    exitCode,
    image: { image: 'busybox' },
    imageRef: 'sha256:x',
    reason: '',
    message: '',
    labels: { ...ids, [LABEL.containerName]: 'a' },
    annotations: {},
    mounts: [],
    logPath: '',
    imageId: '',
  };
}

function event(type: number, containerId: string, sb: PodSandboxStatusInfo | undefined, cs: ContainerStatusInfo[] = []): ContainerEvent {
  return { containerId, containerEventType: type, createdAt: 0n, podSandboxStatus: sb, containersStatuses: cs };
}

function recordOf(e: ContainerEvent): EngineRecord {
  const f = foldContainerEvent(e, { instance: INSTANCE, pauseImage: 'pause' });
  if (!f || !('record' in f)) throw new Error('no record in the event');
  return f.record;
}

/** A stream that yields the events, then fails with `end` (or stays open until aborted). */
async function* stream(events: ContainerEvent[], end?: Error): AsyncGenerator<ContainerEvent> {
  for (const e of events) yield e;
  if (end) throw end;
}

function options(said: string[]): EventFollowOptions {
  return {
    instance: INSTANCE,
    pauseImage: 'pause',
    slowPeriodMs: 60_000,
    fastPeriodMs: 1000,
    notice: (m) => said.push(m),
    known: { unsupported: false, followed: false },
  };
}

describe('the runtime container events', () => {
  it('decode with the published runtime.v1 field numbers (container_id 1, type 2, created_at 3, sandbox status 4, statuses 5)', () => {
    const sb = Buffer.from([0x0a, 0x03, 0x73, 0x62, 0x31, 0x18, 0x01]); // PodSandboxStatus{id: "sb1", state: NOTREADY}
    const cs = Buffer.from([0x0a, 0x02, 0x63, 0x31, 0x18, 0x02, 0x38, 0x03]); // ContainerStatus{id: "c1", state: EXITED, exit_code: 3}
    const bytes = Buffer.concat([Buffer.from([0x0a, 0x02, 0x63, 0x31, 0x10, 0x02, 0x18, 0x05, 0x22, sb.length]), sb, Buffer.from([0x2a, cs.length]), cs]);
    const ev = codec<never, ContainerEvent>(ContainerEventResponse).deserialize(bytes);
    expect(ev).toMatchObject({
      containerId: 'c1',
      containerEventType: ContainerEventType.STOPPED,
      createdAt: 5n,
      podSandboxStatus: { id: 'sb1', state: PodSandboxState.NOTREADY },
    });
    expect(ev.containersStatuses.map((c) => [c.id, c.state, c.exitCode])).toEqual([['c1', ContainerState.EXITED, 3]]);
  });

  it("folds an event to the record it names: a sandbox, a container with its exit code, a deletion; drops others' and sandbox-less ones", () => {
    const o = { instance: INSTANCE, pauseImage: 'pause' };
    expect(foldContainerEvent(event(ContainerEventType.STARTED, 'sb1', sandbox(PodSandboxState.READY)), o)).toMatchObject({
      record: { kind: 'sandbox', id: 'sb1', state: 'ready', network: { ip: '10.0.0.5' } },
    });
    expect(foldContainerEvent(event(ContainerEventType.STOPPED, 'c1', sandbox(PodSandboxState.READY), [container(ContainerState.EXITED, 3)]), o)).toMatchObject(
      { record: { id: 'c1', state: 'exited', exitCode: 3 } },
    );
    expect(foldContainerEvent(event(ContainerEventType.DELETED, 'c1', sandbox(PodSandboxState.READY)), o)).toEqual({ removedId: 'c1', podUid: 'uid-1' });
    expect(
      foldContainerEvent(event(ContainerEventType.STARTED, 'c1', sandbox(PodSandboxState.READY, 'someone-else'), [container(ContainerState.RUNNING)]), o),
    ).toBeUndefined();
    expect(foldContainerEvent(event(ContainerEventType.STARTED, 'c1', undefined, [container(ContainerState.RUNNING)]), o)).toBeUndefined();
    // An event whose statuses do not hold the container it names says nothing of it.
    expect(foldContainerEvent(event(ContainerEventType.STARTED, 'c9', sandbox(PodSandboxState.READY), [container(ContainerState.RUNNING)]), o)).toBeUndefined();
  });

  it('tells each change once, whether the stream or the relist saw it first; an event older than the relist is dropped', async () => {
    let listed: EngineRecord[] = [];
    const told: EngineEvent[] = [];
    const watch = await relistWatch(
      async () => listed,
      (e) => told.push(e),
      () => undefined,
      3_600_000,
    );
    const said: string[] = [];
    const evs = [
      event(ContainerEventType.STARTED, 'sb1', sandbox(PodSandboxState.READY)),
      event(ContainerEventType.CREATED, 'c1', sandbox(PodSandboxState.READY), [container(ContainerState.CREATED)]),
      event(ContainerEventType.STARTED, 'c1', sandbox(PodSandboxState.READY), [container(ContainerState.RUNNING)]),
      event(ContainerEventType.STOPPED, 'c1', sandbox(PodSandboxState.READY), [container(ContainerState.EXITED, 3)]),
      // Late: it ran before it stopped, and the stop was told.
      event(ContainerEventType.STARTED, 'c1', sandbox(PodSandboxState.READY), [container(ContainerState.RUNNING)]),
    ];
    await followContainerEvents(stream(evs), watch, options(said));
    expect(told.map((e) => (e.kind === 'sandbox' ? [e.id, e.kind, e.state] : [e.id, e.kind, e.exitCode]))).toEqual([
      ['sb1', 'sandbox', 'ready'],
      ['c1', 'created', undefined],
      ['c1', 'started', undefined],
      ['c1', 'exited', 3],
    ]);
    expect(said).toEqual(["following the runtime's container events (GetContainerEvents); relisting every 60 s as a safety net"]);
    // The relist now finds what the stream told: nothing new. Then the deletion, by the stream.
    listed = [recordOf(evs[0]!), recordOf(evs[3]!)];
    watch.setPeriod(5);
    await new Promise((r) => setTimeout(r, 40));
    expect(told).toHaveLength(4);
    watch.observe(undefined, 'c1');
    expect(told.map((e) => e.kind).slice(4)).toEqual(['removed']);
    watch.stop();
  });

  it('a runtime without GetContainerEvents (Unimplemented) is relisted at the fast period, said once; other failures just fall back', async () => {
    const periods: number[] = [];
    const fake = { stop: () => undefined, observe: () => undefined, setPeriod: (ms: number) => periods.push(ms) };
    const said: string[] = [];
    const o = options(said);
    await followContainerEvents(stream([], new CriNotSupportedError('unix:///x', 'GetContainerEvents', 'unknown method GetContainerEvents')), fake, o);
    expect(o.known.unsupported).toBe(true);
    expect(periods.at(-1)).toBe(1000);
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/does not serve GetContainerEvents \(Unimplemented.*relisting every 1 s/);
    const o2 = options(said);
    await followContainerEvents(stream([], new CriUnreachableError('unix:///x', 'gone')), fake, o2);
    expect(o2.known.unsupported).toBe(false);
    expect(periods.at(-1)).toBe(1000);
    expect(said).toHaveLength(1);
  });
});
