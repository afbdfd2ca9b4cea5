import { describe, expect, it } from 'vitest';
import { EngineRequestError } from '../../src/runtime/engine-errors.js';
import { ImageStore } from '../../src/runtime/docker/images.js';
import type { EngineCalls } from '../../src/runtime/docker/engine.js';
import type { RuntimeOptions } from '../../src/runtime/runtime-types.js';

// The image store against an engine of plain data: nothing is present, and each pull ends when
// the test says, so what runs at once can be seen.

function engine(options: Partial<RuntimeOptions>, streamed = new Map<string, object[]>()) {
  const pending = new Map<string, () => void>();
  const started: string[] = [];
  const calls = {
    endpoint: 'fake',
    options: { stateDir: '/x', pauseImage: 'pause', credentialFiles: [], ...options },
    call: <T>(_what: string, fn: () => Promise<T>) => fn(),
    docker: {
      getImage: () => ({ inspect: () => Promise.reject(new EngineRequestError('no such image', 'NotFound', { engine: 'the Docker engine' })) }),
      pull: (image: string) => {
        started.push(image);
        return Promise.resolve(image);
      },
      modem: {
        followProgress: (image: string, done: (err: Error | null) => void, progress: (event: object) => void) =>
          pending.set(image, () => {
            for (const event of streamed.get(image) ?? []) progress(event);
            done(null);
          }),
      },
    },
  } as unknown as EngineCalls;
  const finish = (image: string): void => {
    pending.get(image)?.();
    pending.delete(image);
  };
  return { calls, started, finish };
}

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 10));

describe('ImageStore pulls', () => {
  it('one at a time by default (serializeImagePulls), and one pull per image however many ask', async () => {
    const e = engine({});
    const store = new ImageStore(e.calls);
    const a1 = store.ensureImage('a', 'IfNotPresent');
    const a2 = store.ensureImage('a', 'IfNotPresent');
    const b = store.ensureImage('b', 'IfNotPresent');
    await tick();
    expect(e.started).toEqual(['a']);
    e.finish('a');
    await Promise.all([a1, a2]);
    await tick();
    expect(e.started).toEqual(['a', 'b']);
    e.finish('b');
    await b;
  });

  it('as many as maxParallelImagePulls at once, or all with no bound', async () => {
    const two = engine({ pullSlots: 2 });
    const s2 = new ImageStore(two.calls);
    const pulls = ['a', 'b', 'c'].map((i) => s2.ensureImage(i, 'Always'));
    await tick();
    expect(two.started).toEqual(['a', 'b']);
    two.finish('b');
    await tick();
    expect(two.started).toEqual(['a', 'b', 'c']);
    two.finish('a');
    two.finish('c');
    await Promise.all(pulls);

    const any = engine({ pullSlots: 0 });
    const s0 = new ImageStore(any.calls);
    const all = ['a', 'b', 'c'].map((i) => s0.ensureImage(i, 'Always'));
    await tick();
    expect(any.started).toEqual(['a', 'b', 'c']);
    for (const i of ['a', 'b', 'c']) any.finish(i);
    await Promise.all(all);
  });

  it('fails a pull whose answer streams an error after its 200 (Podman answers every failed pull so)', async () => {
    // Podman 4.3's words for a registry that refuses the connection, after three tries.
    const refused =
      'initializing source docker://127.0.0.1:1/x:1: pinging container registry 127.0.0.1:1: Get "https://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused';
    const e = engine(
      {},
      new Map([['gone', [{ status: 'Trying to pull 127.0.0.1:1/x:1...' }, { progressDetail: {}, errorDetail: { message: refused }, error: refused }]]]),
    );
    const store = new ImageStore(e.calls);
    const pull = store.ensureImage('gone', 'IfNotPresent');
    const failed = expect(pull).rejects.toMatchObject({
      name: 'ImageError',
      reason: 'ErrImagePull',
      message: expect.stringContaining('connect: connection refused'),
    });
    await tick();
    e.finish('gone');
    await failed;
  });
});
