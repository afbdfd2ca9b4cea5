import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { followEventStream } from '../../src/runtime/docker/events.js';
import { engineClockMs, type DockerEvent } from '../../src/runtime/docker/records.js';
import { LABEL, MANAGED_BY } from '../../src/runtime/labels.js';
import type { EngineEvent } from '../../src/runtime/runtime-types.js';

// The engine's event stream as the cache hears it. Podman 4.3 (its file events backend) cuts its
// events file to the newer half once it outgrows 1 MB, and its streams then read that half again
// from its start (podman#17665): seen in the kill -9 suite on Podman, where a replayed start of a
// dead sandbox stood beside the running one and the agent replaced a healthy pod.

const SANDBOX = { [LABEL.managedBy]: MANAGED_BY, [LABEL.podUid]: 'u1', [LABEL.containerType]: 'sandbox', [LABEL.containerName]: 'POD' };

/** A Podman line as its compatible API writes it; `s`: seconds past a fixed minute. */
function line(action: string, id: string, s: number): string {
  const timeNano = (1_796_660_460 + s) * 1e9 + 123_456_789;
  const e: DockerEvent = {
    Action: action,
    id,
    Actor: { ID: id, Attributes: { ...SANDBOX, name: `podrun_${id}`, podId: '' } },
    timeNano,
    time: Math.floor(timeNano / 1e9),
  };
  return `${JSON.stringify(e)}\n`;
}

function follow(sinceS?: number): { stream: PassThrough; told: () => string[] } {
  const stream = new PassThrough();
  const seen: EngineEvent[] = [];
  followEventStream(
    stream,
    (e) => seen.push(e),
    () => undefined,
    sinceS === undefined ? undefined : (1_796_660_460 + sinceS) * 1000,
  );
  // The lines are a sandbox's: its pause container's life told as the sandbox's states.
  return { stream, told: () => seen.map((e) => `${e.kind === 'sandbox' ? e.state : e.kind} ${e.id}`) };
}

describe("followEventStream: a replay of the engine's events is no news", () => {
  it('drops what the stream already sent, in whatever chunks the replay comes, and keeps what it never sent', () => {
    const { stream, told } = follow(0);
    // A sandbox lives and dies; its successor starts.
    for (const l of [line('create', 's3', 1), line('start', 's3', 2), line('die', 's3', 17), line('create', 's4', 18), line('start', 's4', 19)])
      stream.write(l);
    // The file is cut and read again from the middle, one line per chunk (a turn may run between
    // any two): the dead sandbox's start must not come back, even for a moment.
    const replay = [line('start', 's3', 2), line('die', 's3', 17), line('create', 's4', 18), line('start', 's4', 19)];
    const before = told().length;
    for (const l of replay) {
      stream.write(l);
      expect(told().slice(before), `after ${l}`).toEqual([]);
    }
    // Then what is new: a death written late, stamped before the last line sent (Podman's order
    // holds per container only), and a newer one.
    stream.write(line('die', 's5', 10));
    stream.write(line('die', 's4', 30));
    expect(told()).toEqual(['ready s3', 'notready s3', 'ready s4', 'notready s5', 'notready s4']);
  });

  it('drops events stamped before the stream began: the list made after subscribing has them', () => {
    // An agent started after a kill -9 follows at 20 s; the file then replays the minute before.
    const { stream, told } = follow(20);
    for (const l of [line('create', 's3', 1), line('start', 's3', 2), line('die', 's3', 17), line('remove', 's2', 18), line('start', 's4', 19)])
      stream.write(l);
    expect(told()).toEqual([]);
    stream.write(line('die', 's4', 21));
    expect(told()).toEqual(['notready s4']);
  });

  it('still drops the replay of events sent long ago, past what it remembers one by one', () => {
    const { stream, told } = follow(0);
    for (let i = 0; i < 3000; i++) stream.write(line(i % 2 ? 'die' : 'start', `c${Math.floor(i / 2)}`, 1 + i / 100));
    expect(told()).toHaveLength(3000);
    for (let i = 0; i < 3000; i++) stream.write(line(i % 2 ? 'die' : 'start', `c${Math.floor(i / 2)}`, 1 + i / 100));
    expect(told()).toHaveLength(3000);
  });
});

describe('engineClockMs', () => {
  it("reads the engine's SystemTime (to the nanosecond, as Docker and Podman write it) in ms; none without one", () => {
    expect(engineClockMs({ SystemTime: '2026-12-07T16:25:44.462370965Z' })).toBe(Date.UTC(2026, 11, 7, 16, 25, 44, 462));
    expect(engineClockMs({ SystemTime: '2026-12-07T17:25:44.462370965+01:00' })).toBe(Date.UTC(2026, 11, 7, 16, 25, 44, 462));
    expect(engineClockMs({})).toBeUndefined();
    expect(engineClockMs({ SystemTime: 'soon' })).toBeUndefined();
    expect(engineClockMs(undefined)).toBeUndefined();
  });
});
