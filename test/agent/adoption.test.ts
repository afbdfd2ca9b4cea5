import { describe, expect, it } from 'vitest';
import { Adoption } from '../../src/agent/adoption.js';
import { newPodRecord } from '../../src/agent/pod-record.js';
import { EngineRequestError } from '../../src/runtime/engine-errors.js';
import { DockerEngine } from '../../src/runtime/docker/docker-engine.js';
import type { ObservedPod } from '../../src/runtime/observed.js';
import type { EngineCapabilities, EngineRestartOn } from '../../src/runtime/runtime-types.js';

// Adopting a container the engine restarts by itself: podrun takes its restarts over, and where
// the engine cannot give them up it says what it keeps, in podrun's words (never, failure,
// always), whichever engine it is. On the Docker API that is its restart policy: an engine that
// cannot change it in place (it says so by the kind of its refusal) keeps it; any other refusal
// is an error.

const none = (): undefined => undefined;
const ALL: EngineCapabilities = { restartPolicy: true, execKill: true, streaming: true, events: true, stats: true };
const log = { debug: none, info: none, warn: none, error: none };
const pod: ObservedPod = {
  uid: 'u',
  name: 'p',
  namespace: 'ns',
  source: 'file:/p',
  sandboxes: [],
  containers: [{ id: 'c1', engineName: 'c1', type: 'app', name: 'a', hash: 'h', restartCount: 0, state: 'running', created: 1, image: 'i' }],
};

/** The Docker engine on a stand-in client that holds one container with `policy` and refuses updates with HTTP `refusal`. */
function dockerWith(policy: string, refusal?: number): DockerEngine {
  const rt = new DockerEngine({ stateDir: '/nonexistent/podrun-adoption-test', pauseImage: 'pause' });
  const container = {
    inspect: async () => ({ HostConfig: { RestartPolicy: { Name: policy } } }),
    update: async (o: { RestartPolicy: { Name: string } }) => {
      // As dockerode fails: the engine's status on the error.
      if (refusal) throw Object.assign(new Error(`(HTTP code ${refusal}) no`), { statusCode: refusal });
      policy = o.RestartPolicy.Name;
    },
  };
  // A stand-in for dockerode: only the two calls adoption makes, on the client the role modules share
  // (engine.ts: EngineCalls, whose `docker` makes the real client on first use: replaced, not set).
  Object.defineProperty((rt as unknown as { calls: object }).calls, 'docker', { value: { getContainer: () => container } });
  return rt;
}

describe('adoption', () => {
  it('the Docker engine gives its restart policy up, or says what it keeps where it cannot change it, and fails on any other refusal', async () => {
    expect(await dockerWith('always').takeOverRestarts('c1')).toBe('never');
    expect(await dockerWith('no').takeOverRestarts('c1')).toBe('never');
    for (const [policy, kept] of [
      ['always', 'always'],
      ['unless-stopped', 'always'],
      ['on-failure', 'failure'],
    ] as const) {
      // Podman 4.x: no container update (501, or 404 for the endpoint it does not have).
      for (const status of [501, 404]) expect(await dockerWith(policy, status).takeOverRestarts('c1')).toBe(kept);
    }
    await expect(dockerWith('always', 500).takeOverRestarts('c1')).rejects.toThrow(EngineRequestError);
  });

  it('keeps what the engine still restarts on, and leaves a dead container to it only for that', async () => {
    const engine = (kept: EngineRestartOn | undefined) => ({ takeOverRestarts: async () => kept, capabilities: ALL });
    const taken = newPodRecord();
    await new Adoption(engine('never'), { finishedAt: none }, log).adopt(taken, pod);
    expect(taken.adopted.has('c1')).toBe(true);
    expect(taken.adopted.get('c1')).toBeUndefined();

    const kept = newPodRecord();
    const adoption = new Adoption(engine('failure'), { finishedAt: () => Date.now() }, log);
    await adoption.adopt(kept, pod);
    expect(kept.adopted.get('c1')).toBe('failure');
    const dead = { ...pod.containers[0]!, state: 'exited' as const };
    expect(adoption.engineRestarts(kept, { ...dead, exitCode: 1 })).toBe(true);
    expect(adoption.engineRestarts(kept, { ...dead, exitCode: 0 })).toBe(false);
  });

  it('asks an engine without restart policies nothing: it has no restarts to give up', async () => {
    let asked = 0;
    const cri = { takeOverRestarts: async () => (asked++, 'always' as const), capabilities: { ...ALL, restartPolicy: false } };
    const r = newPodRecord();
    await new Adoption(cri, { finishedAt: () => Date.now() }, log).adopt(r, pod);
    expect(asked).toBe(0);
    expect(r.adopted.has('c1')).toBe(true);
    expect(r.adopted.get('c1')).toBeUndefined();
  });
});
