import type Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { LABEL, MANAGED_BY } from '../../src/runtime/labels.js';
import { groupObserved } from '../../src/runtime/observed.js';
import {
  eventFromDocker,
  recordFromInspect,
  recordFromListed,
  sandboxStateOf,
  upAtLeastMs,
  readingFromDocker,
  statusFromInspect,
  stateOf,
  type DockerStats,
} from '../../src/runtime/docker/records.js';
import { cpuOf } from '../../src/stats/summary.js';

// Docker's answers in podrun's words: what the cache, status and logs read must not depend on
// which of Docker's calls (list, inspect, events) told it.

const LABELS = { [LABEL.managedBy]: MANAGED_BY, [LABEL.podUid]: 'u1', [LABEL.containerType]: 'app', [LABEL.containerName]: 'app', [LABEL.restartCount]: '2' };

function inspected(status: string, exitCode: number): Docker.ContainerInspectInfo {
  return {
    Id: 'c1',
    Name: '/podrun_web_app_default_abc_000000_2',
    Created: '2026-11-30T09:00:00.5Z',
    Path: 'sleep',
    Args: ['60'],
    Image: 'sha256:img',
    State: {
      Status: status,
      ExitCode: exitCode,
      Running: status === 'running',
      StartedAt: '2026-11-30T09:00:01.123456789Z',
      FinishedAt: '0001-01-01T00:00:00Z',
      OOMKilled: false,
      Restarting: false,
      Error: '',
    },
    Config: { Image: 'busybox:1', Labels: LABELS },
    HostConfig: { NetworkMode: 'container:s1' },
    NetworkSettings: { Networks: {} },
  } as unknown as Docker.ContainerInspectInfo;
}

describe('recordFromInspect', () => {
  it('reads as the list entry of the same container', () => {
    const [pod] = groupObserved([recordFromInspect(inspected('exited', 137))]);
    expect(pod?.containers[0]).toMatchObject({
      id: 'c1',
      engineName: 'podrun_web_app_default_abc_000000_2',
      state: 'exited',
      exitCode: 137,
      restartCount: 2,
      created: Date.parse('2026-11-30T09:00:00Z') / 1000,
      image: 'busybox:1',
    });
    const listed = recordFromListed({
      Id: 'c1',
      Names: ['/podrun_web_app_default_abc_000000_2'],
      Image: 'busybox:1',
      Created: Date.parse('2026-11-30T09:00:00Z') / 1000,
      Labels: LABELS,
      State: 'exited',
      Status: 'Exited (137) 3 seconds ago',
      NetworkSettings: { Networks: {} },
    } as unknown as Docker.ContainerInfo);
    expect(recordFromInspect(inspected('exited', 137))).toEqual(listed);
  });

  it('has no exit code while running', () => {
    const [pod] = groupObserved([recordFromInspect(inspected('running', 0))]);
    expect(pod?.containers[0]?.state).toBe('running');
    expect(pod?.containers[0]?.exitCode).toBeUndefined();
  });
});

describe("Podman's own states, in Docker's words", () => {
  it('reads stopped (exited, its cleanup not run yet) as exited with its code, and stopping as running', () => {
    // As Podman 4.3 answered, polled every few ms around a `sh -c 'sleep 1; exit 3'`.
    const stoppedListed = recordFromListed({
      Id: 'c1',
      Names: ['/n'],
      Image: 'i',
      Created: 5,
      Labels: LABELS,
      State: 'stopped',
      Status: 'Exited (3) Less than a second ago',
    } as unknown as Docker.ContainerInfo);
    expect(stoppedListed).toMatchObject({ state: 'exited', exitCode: 3 });
    expect(recordFromInspect(inspected('stopped', 3))).toMatchObject({ state: 'exited', exitCode: 3 });
    expect(statusFromInspect(inspected('stopped', 3).State, 0).state).toBe('exited');
    const [pod] = groupObserved([recordFromInspect(inspected('stopped', 3))]);
    expect(pod?.containers[0]).toMatchObject({ state: 'exited', exitCode: 3 });

    expect(recordFromInspect(inspected('stopping', 0))).toMatchObject({ state: 'running' });
    expect(recordFromInspect(inspected('stopping', 0))).not.toHaveProperty('exitCode');
    expect(statusFromInspect(inspected('stopping', 0).State, 0).state).toBe('running');
  });
});

describe('recordFromListed', () => {
  it('takes the exit code from the status text only when exited, and the IP from the first network that has one', () => {
    const r = recordFromListed({
      Id: 'x',
      Names: ['/n'],
      Image: 'i',
      Created: 5,
      Labels: {},
      State: 'restarting',
      Status: 'Restarting (1) 2 seconds ago',
      NetworkSettings: { Networks: { a: { IPAddress: '' }, b: { IPAddress: '10.0.0.9' } } },
    } as unknown as Docker.ContainerInfo);
    expect(r).toEqual({ kind: 'container', id: 'x', name: 'n', image: 'i', labels: {}, state: 'unknown', engineRestarting: true, created: 5, ip: '10.0.0.9' });
  });

  it("says Docker's seven states in CRI's four, as cri-dockerd does; a restarting one stays alive", () => {
    const states = ['created', 'running', 'paused', 'restarting', 'exited', 'removing', 'dead'];
    expect(states.map((s) => stateOf(s))).toEqual([
      { state: 'created' },
      { state: 'running' },
      { state: 'running' },
      { state: 'unknown', engineRestarting: true },
      { state: 'exited' },
      { state: 'unknown' },
      { state: 'unknown' },
    ]);
  });
});

describe('a pause container as its sandbox (cri-dockerd toRuntimeAPISandboxState)', () => {
  const SANDBOX = { ...LABELS, [LABEL.containerType]: 'sandbox', [LABEL.containerName]: 'POD', [LABEL.restartCount]: '1' };

  it("says a pause container running (paused, Podman's stopping: up) as READY, any other state as NOTREADY; restarting stays alive", () => {
    const states = ['created', 'running', 'paused', 'restarting', 'exited', 'removing', 'dead', 'stopping', 'stopped', undefined];
    expect(states.map((s) => sandboxStateOf(s))).toEqual([
      { state: 'notready' },
      { state: 'ready' },
      { state: 'ready' },
      { state: 'notready', engineRestarting: true },
      { state: 'notready' },
      { state: 'notready' },
      { state: 'notready' },
      { state: 'ready' },
      { state: 'notready' },
      { state: 'notready' },
    ]);
  });

  it('lists and inspects a pause container as a sandbox record: its state, creation, address and identity, no exit code', () => {
    const listed = (State: string, Status: string): Docker.ContainerInfo =>
      ({
        Id: 's1',
        Names: ['/podrun_web_POD_default_abc_000000_1'],
        Image: 'pause:3.9',
        Created: 5,
        Labels: SANDBOX,
        State,
        Status,
        NetworkSettings: { Networks: { podrun: { IPAddress: '10.88.0.7' } } },
      }) as unknown as Docker.ContainerInfo;
    expect(recordFromListed(listed('running', 'Up 9 seconds'), 100_000)).toEqual({
      kind: 'sandbox',
      id: 's1',
      name: 'podrun_web_POD_default_abc_000000_1',
      image: 'pause:3.9',
      labels: SANDBOX,
      state: 'ready',
      createdAt: 5,
      network: { ip: '10.88.0.7' },
    });
    expect(recordFromListed(listed('exited', 'Exited (0) 2 seconds ago'))).toMatchObject({ kind: 'sandbox', state: 'notready' });
    expect(recordFromListed(listed('exited', 'Exited (0) 2 seconds ago'))).not.toHaveProperty('exitCode');
    const i = inspected('exited', 137);
    const pause = { ...i, Config: { ...i.Config, Image: 'pause:3.9', Labels: SANDBOX } };
    expect(recordFromInspect(pause)).toEqual({
      kind: 'sandbox',
      id: 'c1',
      name: i.Name.slice(1),
      image: 'pause:3.9',
      labels: SANDBOX,
      state: 'notready',
      createdAt: 1_796_029_200,
    });
    expect(recordFromInspect({ ...pause, State: { ...pause.State, Status: 'running' } })).toMatchObject({ kind: 'sandbox', state: 'ready' });
  });

  it("groups a pause container as the pod's sandbox: its attempt from its label, newest first, READY or not as listed", () => {
    const entry = (Id: string, attempt: string, State: string, Created: number): Docker.ContainerInfo =>
      ({
        Id,
        Names: [`/${Id}`],
        Image: 'pause',
        Created,
        Labels: { ...SANDBOX, [LABEL.restartCount]: attempt },
        State,
        Status: '',
      }) as unknown as Docker.ContainerInfo;
    const [pod] = groupObserved([entry('old', '0', 'exited', 1), entry('new', '1', 'running', 2)].map((e) => recordFromListed(e)));
    expect(pod!.sandboxes).toEqual([
      { id: 'new', state: 'ready', attempt: 1, hash: '', createdAt: 2, engineName: 'new', image: 'pause' },
      { id: 'old', state: 'notready', attempt: 0, hash: '', createdAt: 1, engineName: 'old', image: 'pause' },
    ]);
    expect(pod!.containers).toEqual([]);
  });

  it("tells a pause container's start and die as its sandbox's states, its removal as gone, and its create not at all", () => {
    const actor = { ID: 's1', Attributes: { ...SANDBOX, name: 'podrun_web_POD', image: 'pause:3.9' } };
    expect(['create', 'start', 'unpause', 'restart', 'die', 'destroy', 'remove'].map((a) => eventFromDocker({ Action: a, Actor: actor, time: 1 }))).toEqual([
      undefined,
      ...['ready', 'ready', 'ready', 'notready', 'removed', 'removed'].map((state) => ({
        kind: 'sandbox',
        state,
        id: 's1',
        labels: SANDBOX,
        name: 'podrun_web_POD',
        image: 'pause:3.9',
        timeMs: 1000,
      })),
    ]);
  });
});

describe('upAtLeastMs: how long a running container has been up, at least, by the list', () => {
  it("reads Docker's uptime text (go-units' HumanDuration) as a lower bound, a restart in place counting anew", () => {
    expect(upAtLeastMs('Up Less than a second')).toBe(0);
    expect(upAtLeastMs('Up 1 second')).toBe(1_000);
    expect(upAtLeastMs('Up 42 seconds (healthy)')).toBe(42_000);
    expect(upAtLeastMs('Up About a minute')).toBe(60_000);
    expect(upAtLeastMs('Up 59 minutes')).toBe(3_540_000);
    expect(upAtLeastMs('Up About an hour')).toBe(3_600_000);
    // Hours are rounded to the nearest, days and longer counted from those: half an hour less.
    expect(upAtLeastMs('Up 2 hours')).toBe(5_400_000);
    expect(upAtLeastMs('Up 3 days (unhealthy)')).toBe((3 * 86_400 - 1_800) * 1000);
    expect(upAtLeastMs('Up 2 years')).toBe((2 * 31_536_000 - 1_800) * 1000);
  });

  it('none for any other text', () => {
    for (const t of ['Up', 'Up 5 parsecs', 'Restarting (1) 2 seconds ago', 'Exited (0) 5 seconds ago', 'Created', 'running', undefined])
      expect(upAtLeastMs(t)).toBeUndefined();
  });

  it("a running list entry carries the latest its instance can have started, counted to the answer's arrival; a paused one none", () => {
    const entry = (State: string, Status: string) =>
      ({ Id: 'x', Names: ['/n'], Image: 'i', Created: 5, Labels: {}, State, Status }) as unknown as Docker.ContainerInfo;
    expect(recordFromListed(entry('running', 'Up 5 seconds'), 100_000)).toMatchObject({ kind: 'container', startedBy: 95_000 });
    expect(recordFromListed(entry('paused', 'Up 5 seconds (Paused)'), 100_000)).not.toHaveProperty('startedBy');
    expect(recordFromListed(entry('running', 'Up'), 100_000)).not.toHaveProperty('startedBy');
  });
});

describe('statusFromInspect', () => {
  it("reads the zero time as never, and keeps the engine's nanoseconds", () => {
    const s = statusFromInspect(inspected('running', 0).State, 3);
    expect(s).toEqual({ state: 'running', exitCode: 0, startedAt: '2026-11-30T09:00:01.123456789Z', oomKilled: false, engineRestarts: 3, restarting: false });
  });
});

describe('eventFromDocker', () => {
  const actor = (attrs: Record<string, string>) => ({ ID: 'c1', Attributes: { ...LABELS, name: 'podrun_x', image: 'busybox:1', ...attrs } });

  it("turns the life events into one kind each (a pause changes no CRI state), the exit code a number, Docker's own attributes out of the labels", () => {
    expect(eventFromDocker({ Action: 'die', Actor: actor({ exitCode: '137' }), timeNano: 1_700_000_000_123_456_789 })).toEqual({
      kind: 'exited',
      id: 'c1',
      labels: LABELS,
      name: 'podrun_x',
      image: 'busybox:1',
      exitCode: 137,
      timeMs: 1_700_000_000_123,
    });
    expect(
      ['create', 'start', 'unpause', 'restart', 'pause', 'destroy', 'remove'].map((a) => eventFromDocker({ Action: a, Actor: actor({}), time: 1 })?.kind),
    ).toEqual(['created', 'started', 'started', 'started', undefined, 'removed', 'removed']);
  });

  it("is no event for news that changes no container's life, nor for what names no container", () => {
    for (const a of ['exec_start: sh', 'exec_die', 'kill', 'rename', 'update', 'oom', 'toString', '__proto__', ''])
      expect(eventFromDocker({ Action: a, Actor: actor({}) })).toBeUndefined();
    expect(eventFromDocker({ Action: 'die', Actor: { Attributes: {} } })).toBeUndefined();
    expect(eventFromDocker({ Action: 'die', Actor: actor({ exitCode: 'x' }) })).not.toHaveProperty('exitCode');
  });
});

describe('readingFromDocker', () => {
  const reading = (preread: string): DockerStats => ({
    read: '2026-11-30T10:00:10Z',
    cpu_stats: { cpu_usage: { total_usage: 3e9 } },
    memory_stats: {},
    preread,
    precpu_stats: { cpu_usage: { total_usage: 0 } },
  });

  it('drops a previous sample Docker gives as the zero time, so no rate is made from zero counters', () => {
    const one = readingFromDocker(reading('0001-01-01T00:00:00Z'));
    expect(one.earlier).toBeUndefined();
    expect(cpuOf(one).usageNanoCores).toBeUndefined();
    expect(cpuOf(readingFromDocker({ ...reading('2026-11-30T10:00:09Z'), precpu_stats: { cpu_usage: { total_usage: 2.5e9 } } })).usageNanoCores).toBe(5e8);
  });

  it("reads Docker's names as podrun's: CPU, memory with the working set, network, processes", () => {
    const r = readingFromDocker({
      read: '2026-11-30T10:00:10Z',
      cpu_stats: { cpu_usage: { total_usage: 3e9, usage_in_usermode: 2e9, usage_in_kernelmode: 1e9 } },
      memory_stats: { usage: 100, limit: 1000, stats: { inactive_file: 30, anon: 50, file: 40, pgfault: 7, pgmajfault: 1 } },
      networks: { eth0: { rx_bytes: 1, rx_errors: 2, tx_bytes: 3, tx_errors: 4, rx_packets: 5, tx_packets: 6, rx_dropped: 7, tx_dropped: 8 } },
      pids_stats: { current: 3 },
    });
    expect(r).toEqual({
      time: '2026-11-30T10:00:10Z',
      source: 'engine',
      cpu: { usageNs: 3e9, userNs: 2e9, systemNs: 1e9 },
      memory: { usageBytes: 100, limitBytes: 1000, workingSetBytes: 70, rssBytes: 50, cacheBytes: 40, pageFaults: 7, majorPageFaults: 1 },
      networks: { eth0: { rxBytes: 1, rxErrors: 2, txBytes: 3, txErrors: 4, rxPackets: 5, txPackets: 6, rxDropped: 7, txDropped: 8 } },
      processes: 3,
    });
  });
});
