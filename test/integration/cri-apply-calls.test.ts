import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { criTestBed } from './cri-engine.js';
import { GRPC_TRACE_ENV, rounds, SENT, tracedCalls } from './grpc-trace.js';
import { TEST_IMAGE, unique } from './helpers.js';

// What `podrun apply --no-wait` asks of a CRI runtime for a pod that does not exist yet, counted
// from gRPC's own trace of the built binary on a real containerd: the calls, and the round trips
// one after another that a start waits for. The CRI floor (bench/cri-floor.ts) makes 3 calls in 3
// rounds (RunPodSandbox, CreateContainer, StartContainer); podrun adds the plan's look at what
// runs (with Version, in the same round, sent before the manifests are parsed) and ImageStatus
// beside RunPodSandbox; no look after the start, which nobody reads. A call that comes back, or that stops running beside another, fails here.
const { world, criArgs, noDocker } = criTestBed();

/** Each test on a state directory of its own: the list sees no other test's pods (each a PodSandboxStatus). */
function podrunOn(stateDir: string): (args: string[], env?: Record<string, string>) => ReturnType<typeof world.bin> {
  return (args, env = {}) => world.bin(['--state-dir', stateDir, ...criArgs(), ...args], { env: { ...noDocker, ...env } });
}

async function applyTraced(
  cri: ReturnType<typeof podrunOn>,
  manifest: string,
): Promise<{ code: number; calls: ReturnType<typeof tracedCalls>; err: string; stderr: string }> {
  const r = await cri(['apply', '--no-wait', manifest], GRPC_TRACE_ENV);
  return {
    code: r.code,
    calls: tracedCalls(r.err),
    stderr: r.err,
    // apply's note that a CRI runtime restarts nothing by itself is cri-apply-note.test.ts's.
    err: r.err
      .split('\n')
      .filter((l) => l.startsWith('podrun') && !l.startsWith('podrun: note:'))
      .join('\n'),
  };
}

function podYaml(ns: string, name: string, env = '', spec = ''): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:${spec}
  terminationGracePeriodSeconds: 1
  containers:
  - name: c0
    image: ${TEST_IMAGE}
    command: [sh, -c, 'echo "ip=$POD_IP"; exec sleep 3600']${env}
`;
}

describe('engine calls of a CRI apply', () => {
  it('a new pod of one container: 7 calls in 4 rounds', async () => {
    const ns = unique('calls');
    const name = unique('one');
    // A field podrun ignores: the parse warns of it, which tells when the parse ran.
    const manifest = world.write(`${name}.yaml`, podYaml(ns, name, '', '\n  nodeSelector: {}'));
    const cri = podrunOn(join(world.dir, name));
    const r = await applyTraced(cri, manifest);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(rounds(r.calls)).toBe('ListContainers ‖ ListPodSandbox ‖ Version; ImageStatus ‖ RunPodSandbox; CreateContainer; StartContainer');
    expect(r.calls).toHaveLength(7);
    // The first round is on the wire before the manifests are parsed: its round trip runs beside
    // the parse (the YAML parser's and the validator's loading), not after it.
    const lines = r.stderr.split('\n');
    const warned = lines.findIndex((l) => l.includes('warning: spec.nodeSelector'));
    const sent = lines.flatMap((l, i) => (SENT.test(l) ? [i] : []));
    expect(warned).toBeGreaterThanOrEqual(0);
    expect(sent.length).toBe(7);
    expect(sent.slice(0, 3).every((i) => i < warned)).toBe(true);
    // And it runs: what the calls were for.
    const got = await cri(['get', 'pods', '-n', ns, name, '-o', 'jsonpath={.status.phase}']);
    expect(got.out.trim()).toBe('Running');
    expect((await cri(['delete', '-f', manifest, '--grace-period', '0'])).code).toBe(0);
  }, 60_000);

  it('a container whose env names status.podIP: the IP is asked before its create, and the env has it', async () => {
    const ns = unique('calls');
    const name = unique('ip');
    const manifest = world.write(`${name}.yaml`, podYaml(ns, name, `\n    env: [{name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]`));
    const cri = podrunOn(join(world.dir, name));
    const r = await applyTraced(cri, manifest);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(rounds(r.calls)).toBe('ListContainers ‖ ListPodSandbox ‖ Version; ImageStatus ‖ RunPodSandbox; PodSandboxStatus; CreateContainer; StartContainer');
    const ip = (await cri(['get', 'pods', '-n', ns, name, '-o', 'jsonpath={.status.podIP}'])).out.trim();
    expect(ip).toMatch(/^10\.88\.\d+\.\d+$/);
    let logs = '';
    for (let i = 0; i < 50 && !logs.includes('ip='); i++) {
      logs = (await cri(['logs', '-n', ns, name])).out;
      if (!logs.includes('ip=')) await new Promise((res) => setTimeout(res, 100));
    }
    expect(logs.trim()).toBe(`ip=${ip}`);
    expect((await cri(['delete', '-f', manifest, '--grace-period', '0'])).code).toBe(0);
  }, 60_000);
});
