import { afterAll, describe, expect, it } from 'vitest';
import { podContainers, TEST_IMAGE, unique, World } from './helpers.js';

// Two podrun instances (state dirs) on one engine, as the README demo and `npm test` are: the same
// namespace/name in both, and neither may touch the other's pods.
const a = new World();
const b = new World();
afterAll(async () => {
  await a.cleanup();
  await b.cleanup();
});

describe('instances sharing one engine', () => {
  it('run the same pod side by side, and delete and clean up only their own', async () => {
    const ns = unique('iso');
    const pod = `apiVersion: v1
kind: Pod
metadata: {name: same, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sleep, '3600']}]
`;
    const ra = await a.cli('apply', a.write('pod.yaml', pod));
    expect(ra.code, ra.err).toBe(0);
    const rb = await b.cli('apply', b.write('pod.yaml', pod));
    expect(rb.code, rb.err).toBe(0);
    const running = async (w: World): Promise<string[]> =>
      (await podContainers(ns, 'same', w.instance))
        .filter((c) => c.State === 'running')
        .map((c) => c.Id)
        .sort();
    const bIds = await running(b);
    expect(bIds).toHaveLength(2);
    expect(await running(a)).toHaveLength(2);

    const d = await a.cli('delete', '-n', ns, 'same');
    expect(d.code, d.err).toBe(0);
    expect(await podContainers(ns, 'same', a.instance)).toEqual([]);
    expect(await running(b)).toEqual(bIds);

    await a.cli('apply', a.write('pod.yaml', pod));
    await a.cleanup();
    expect(await podContainers(ns, 'same', a.instance)).toEqual([]);
    expect(await running(b)).toEqual(bIds);
  });
});
