import { describe, expect, it } from 'vitest';
import type { EngineContainer } from '../../src/runtime/observed.js';
import { watchByRelist } from '../../src/runtime/cri/relist.js';

const box = (state: EngineContainer['state']): EngineContainer => ({ kind: 'container', id: 'c1', name: 'k8s_c_p', image: 'i', labels: {}, state, created: 1 });

describe('a watch by relisting', () => {
  it('an event handler that throws ends the watch (the caller reconnects), not an unhandled rejection', async () => {
    let listed = 0;
    const ended: string[] = [];
    const stop = await watchByRelist(
      async () => [box(++listed === 1 ? 'created' : 'running')],
      () => {
        throw new Error('handler broke');
      },
      (err) => ended.push(err?.message ?? ''),
      5,
    );
    await expect.poll(() => ended, { timeout: 2_000 }).toEqual(['handler broke']);
    const after = listed;
    await new Promise((r) => setTimeout(r, 50));
    expect(listed).toBe(after);
    stop();
  });
});
