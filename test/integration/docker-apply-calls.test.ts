import { afterAll, describe, expect, it } from 'vitest';
import { dockerRounds, dockerTrace } from './docker-trace.js';
import { containerIds, logsOf, TEST_IMAGE, unique, until, World } from './helpers.js';

// What `podrun apply --no-wait` asks of Docker for a pod that does not exist yet, counted by a
// proxy in front of the engine's socket: the requests, and the round trips one after another that
// a start waits for. The Docker floor (bench/floor.ts) makes 4 in 4 (create and start the sandbox,
// create and start the container); podrun adds the plan's list (made while the manifests are
// read), and the image inspect and the engine's log driver beside the sandbox's create. The
// sandbox's IP is asked only when a start needs it; no look after the start, which nobody reads.
// A request that comes back, or that stops running beside another, fails here.
const world = new World();
afterAll(() => world.cleanup());

function podYaml(ns: string, name: string, env = ''): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c0
    image: ${TEST_IMAGE}
    command: [sh, -c, 'echo "ip=$POD_IP"; exec sleep 3600']${env}
`;
}

/**
 * Applies a new pod (`make` names it) until its rounds read `expected`, at most 3 times, and gives
 * the last: a round is counted from answers the proxy saw before a request began, so on a loaded
 * machine a request podrun sends beside another can land after that one's answer and read a round
 * later. It never reads earlier: a request that truly waits for another fails all three.
 */
async function fewestRounds(expected: string, make: () => { manifest: string; ns: string; name: string }): Promise<Traced & { ns: string; name: string }> {
  let r: Traced & { ns: string; name: string } = { code: -1, err: '', rounds: '', count: 0, ns: '', name: '' };
  for (let i = 0; i < 3 && r.rounds !== expected; i++) {
    const m = make();
    r = { ...(await applyTraced(m.manifest)), ns: m.ns, name: m.name };
  }
  return r;
}

interface Traced {
  code: number;
  err: string;
  rounds: string;
  count: number;
}

async function applyTraced(manifest: string): Promise<Traced> {
  const trace = await dockerTrace();
  try {
    const r = await world.bin(['apply', '--no-wait', manifest], { env: { DOCKER_HOST: trace.host } });
    const calls = trace.calls();
    return { code: r.code, err: r.err, rounds: dockerRounds(calls), count: calls.length };
  } finally {
    await trace.close();
  }
}

describe('engine requests of a Docker apply', () => {
  it("a new pod of one container: 7 requests in 5 rounds, the last 4 as the floor's", async () => {
    const expected = `GET /containers/json; GET /images/${TEST_IMAGE}/json ‖ GET /info ‖ POST /containers/create; POST /containers/{id}/start; POST /containers/create; POST /containers/{id}/start`;
    const r = await fewestRounds(expected, () => {
      const ns = unique('calls');
      const name = unique('one');
      return { manifest: world.write(`${name}.yaml`, podYaml(ns, name)), ns, name };
    });
    const { ns, name } = r;
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.rounds).toBe(expected);
    expect(r.count).toBe(7);
    // The IP no start needed is read when asked for.
    const ip = await world.bin(['get', 'pods', '-n', ns, name, '-o', 'jsonpath={.status.podIP}']);
    expect(ip.out.trim()).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  });

  it('a pod whose env names status.podIP asks the sandbox its IP before the container is made, and the container has it', async () => {
    const env = `
    env: [{name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]`;
    const expected = `GET /containers/json; GET /images/${TEST_IMAGE}/json ‖ GET /info ‖ POST /containers/create; POST /containers/{id}/start; GET /containers/{id}/json; POST /containers/create; POST /containers/{id}/start`;
    const r = await fewestRounds(expected, () => {
      const ns = unique('calls');
      const name = unique('ip');
      return { manifest: world.write(`${name}.yaml`, podYaml(ns, name, env)), ns, name };
    });
    const { ns, name } = r;
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.rounds).toBe(expected);
    const { c0 } = await containerIds(ns, name, world.instance);
    const said = await until('the container says its IP', async () => /ip=(\d+\.\d+\.\d+\.\d+)\n/.exec(await logsOf(c0!))?.[1]);
    const ip = await world.bin(['get', 'pods', '-n', ns, name, '-o', 'jsonpath={.status.podIP}']);
    expect(ip.out.trim()).toBe(said);
  });
});
