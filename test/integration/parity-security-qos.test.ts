import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import { testRunLabels } from './suite-run.js';
import { docker, logsOf, podContainers, TEST_IMAGE, unique, until, World } from './helpers.js';

// Kubelet parity for the security context, QoS and OOM protection (issue 9, items 7, 8, seccomp).
const world = new World();
const ns = unique('parity-sq');
const USER_IMAGE = `podrun-test/busybox-user:${ns}`;
afterAll(async () => {
  await world.cleanup();
  await docker
    .getImage(USER_IMAGE)
    .remove({ force: true })
    .catch(() => undefined);
});

beforeAll(async () => {
  // An image that says USER 1234, as many do.
  const c = await docker.createContainer({ Image: TEST_IMAGE, Cmd: ['true'], Labels: testRunLabels() });
  const [repo, tag] = USER_IMAGE.split(':') as [string, string];
  await c.commit({ repo, tag, changes: ['USER 1234'] });
  await c.remove({ force: true });
});

function pod(name: string, spec: string, container: string, command = "[sh, -c, 'id; exec sleep 3600']", image = TEST_IMAGE): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
${spec}  containers:
  - name: c
    image: ${image}
    command: ${command}
${container}`;
}

async function container(
  name: string,
  c = 'c',
): Promise<{ id: string; pid: number; hostConfig: { OomScoreAdj?: number; CpuShares?: number; SecurityOpt?: string[] | null } }> {
  const found = await until(`${name}/${c} to run`, async () =>
    (await podContainers(ns, name)).find((x) => x.Labels[LABEL.containerName] === c && x.State === 'running'),
  );
  const info = await docker.getContainer(found.Id).inspect();
  return { id: found.Id, pid: info.State.Pid, hostConfig: info.HostConfig as never };
}

const procField = (pid: number, file: string): string => readFileSync(`/proc/${pid}/${file}`, 'utf8');

describe('security context as the kubelet enforces it', () => {
  it("refuses to run an image as root under runAsNonRoot, with CreateContainerConfigError and the kubelet's message", async () => {
    const name = unique('nonroot');
    const r = await world.cli('apply', '--timeout', '5s', world.write(`${name}.yaml`, pod(name, '  securityContext: {runAsNonRoot: true}\n', '')));
    expect(r.code).toBe(1);
    expect(r.err).toContain(`: CreateContainerConfigError: container has runAsNonRoot and image will run as root (pod: "${name}_${ns}(`);
    expect((await podContainers(ns, name)).filter((c) => c.Labels[LABEL.containerName] === 'c' && c.State === 'running')).toEqual([]);
    // With a non-root user it runs.
    const ok = unique('nonroot-ok');
    const r2 = await world.cli(
      'apply',
      '--timeout',
      '20s',
      world.write(`${ok}.yaml`, pod(ok, '  securityContext: {runAsNonRoot: true, runAsUser: 1000}\n', '')),
    );
    expect(r2.code, r2.err).toBe(0);
  });

  it("keeps the image's user when only runAsGroup is set, instead of root", async () => {
    const name = unique('grouponly');
    const r = await world.cli(
      'apply',
      '--timeout',
      '20s',
      world.write(`${name}.yaml`, pod(name, '  securityContext: {runAsGroup: 4321}\n', '', undefined, USER_IMAGE)),
    );
    expect(r.code, r.err).toBe(0);
    const c = await container(name);
    await until('id to print', async () => ((await logsOf(c.id)).includes('uid=') ? true : undefined));
    expect((await logsOf(c.id)).trim()).toMatch(/^uid=1234 gid=4321/);
  });

  it("runs without a seccomp profile as the kubelet does (Unconfined), and RuntimeDefault under the engine's", async () => {
    const plain = unique('seccomp-none');
    const rd = unique('seccomp-rd');
    expect((await world.cli('apply', '--timeout', '20s', world.write(`${plain}.yaml`, pod(plain, '', '')))).code).toBe(0);
    expect(
      (await world.cli('apply', '--timeout', '20s', world.write(`${rd}.yaml`, pod(rd, '  securityContext: {seccompProfile: {type: RuntimeDefault}}\n', ''))))
        .code,
    ).toBe(0);
    const seccomp = (pid: number): string => /^Seccomp:\s+(\d)/m.exec(procField(pid, 'status'))?.[1] ?? '?';
    expect(seccomp((await container(plain)).pid)).toBe('0');
    expect(seccomp((await container(rd)).pid)).toBe('2');
  });
});

/**
 * Whether processes here may lower an oom_score_adj (CAP_SYS_RESOURCE): where they may not (as in
 * some VMs), the engine refuses negative values and podrun asks for 0 at the lowest.
 */
const canLower = (BigInt(`0x${/^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0'}`) >> 24n) & 1n ? true : false;
const floor = (v: number): number => (canLower ? v : Math.max(0, v));

describe('QoS and OOM protection', () => {
  it('gives a system-node-critical pod -997, a Guaranteed one -997, a BestEffort one 1000 with 2 cpu shares, and the sandbox -998', async () => {
    const critical = unique('critical');
    const guaranteed = unique('guaranteed');
    const besteffort = unique('besteffort');
    for (const [n, spec, c] of [
      [critical, '  priorityClassName: system-node-critical\n', '    resources: {requests: {cpu: 100m, memory: 64Mi}}\n'],
      [guaranteed, '', '    resources: {limits: {cpu: 200m, memory: 64Mi}}\n'],
      [besteffort, '', ''],
    ] as const) {
      const r = await world.cli('apply', '--timeout', '20s', world.write(`${n}.yaml`, pod(n, spec, c)));
      expect(r.code, r.err).toBe(0);
    }
    const adj = async (n: string, c = 'c'): Promise<number> => Number(procField((await container(n, c)).pid, 'oom_score_adj').trim());
    expect(await adj(critical)).toBe(floor(-997));
    expect(await adj(guaranteed)).toBe(floor(-997));
    expect(await adj(besteffort)).toBe(1000);
    expect((await container(besteffort)).hostConfig.CpuShares).toBe(2);
    expect((await container(critical)).hostConfig.CpuShares).toBe(102);
    expect(await adj(besteffort, 'POD')).toBe(floor(-998));
    // Burstable: 1000 - 1000 * 64 MiB / node memory.
    const burstable = unique('burstable');
    expect(
      (await world.cli('apply', '--timeout', '20s', world.write(`${burstable}.yaml`, pod(burstable, '', '    resources: {requests: {memory: 1Gi}}\n')))).code,
    ).toBe(0);
    expect(await adj(burstable)).toBe(1000 - Math.floor((1000 * 1024 ** 3) / totalmem()));
  });
});

describe("the kubelet's podPidsLimit (--pod-max-pids)", () => {
  it('holds a fork loop in a pod at the limit, and gives the limit to each of its containers, the sandbox too', { timeout: 90_000 }, async () => {
    const name = unique('forks');
    // A bounded fork loop (200 sleeps) in a subshell that dies at the first failed fork; the
    // container's main process then says so and lives on to be counted.
    const file = world.write(
      `${name}.yaml`,
      pod(name, '', '', "[sh, -c, '(i=0; while [ $i -lt 200 ]; do sleep 3600 & i=$((i+1)); done); echo loop-done; exec sleep 3600']"),
    );
    const r = await world.cli('--pod-max-pids', '20', 'apply', '--timeout', '30s', file);
    expect(r.code, r.err).toBe(0);
    const c = await container(name);
    await until('the fork loop to end', async () => ((await logsOf(c.id)).includes('loop-done') ? true : undefined), 30_000);
    // As many processes as the limit allows, never more (200 sleeps and the shell without it).
    const count = (await docker.getContainer(c.id).top()).Processes?.length ?? 0;
    expect(count).toBeLessThanOrEqual(20);
    expect(count).toBeGreaterThanOrEqual(15);
    expect(await logsOf(c.id)).toMatch(/can't fork/);
    expect((c.hostConfig as { PidsLimit?: number }).PidsLimit).toBe(20);
    const sandbox = (await podContainers(ns, name)).find((x) => x.Labels[LABEL.containerName] === 'POD');
    expect(sandbox).toBeDefined();
    expect(((await docker.getContainer(sandbox!.Id).inspect()).HostConfig as { PidsLimit?: number }).PidsLimit).toBe(20);
  });
});
