import { afterAll, describe, expect, it } from 'vitest';
import { FaultyEngine } from './engine-helpers.js';
import { TEST_IMAGE, unique, World } from './helpers.js';

// An engine that takes a request and never answers it (Docker 20.10 does this for a container
// whose exit it lost: its stop and inspect wait forever). podrun gives up after
// --runtime-request-timeout (a stop: its grace period plus that), names the call, and exits.
const world = new World();
const faulty = new FaultyEngine();
afterAll(async () => {
  await faulty.stop();
  await world.cleanup();
});

describe('an engine that never answers', () => {
  it('costs a delete the grace period plus --runtime-request-timeout, not forever', async () => {
    await faulty.start();
    const ns = unique('stuck');
    const name = unique('hung');
    const file = world.write(
      'pod.yaml',
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: ${TEST_IMAGE}, command: [sleep, '3600']}]
`,
    );
    expect((await world.bin(['apply', '-f', file])).code).toBe(0);
    faulty.mode = { kind: 'hang', match: /^POST (\/v[\d.]+)?\/containers\/[^/]+\/stop/ };
    const t0 = Date.now();
    const r = await world.bin(['--runtime-request-timeout', '2s', 'delete', 'pod', name, '-n', ns], { env: { DOCKER_HOST: faulty.host } });
    const took = Date.now() - t0;
    expect(r.code).toBe(1);
    // The stop's own bound: its grace period (at least 2 s, as the kubelet's minimum) plus 2 s.
    expect(r.err).toContain(`podrun: pod/${ns}/${name}: the Docker engine did not answer within 4s: stop container (the engine may be stuck; see its log)`);
    // Not before its bound (the message says which bound ended it).
    expect(took).toBeGreaterThanOrEqual(4000);
    expect(faulty.faultedRequests).toBeGreaterThan(0);
    faulty.mode = { kind: 'pass' };
    expect((await world.bin(['delete', 'pod', name, '-n', ns, '--grace-period', '0'])).code).toBe(0);
  });
});
