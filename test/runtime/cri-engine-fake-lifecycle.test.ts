import { afterEach, describe, expect, it } from 'vitest';
import { sandboxHash } from '../../src/manifest/hash.js';
import { EngineRequestError, EngineUnavailableError } from '../../src/runtime/engine-errors.js';
import { LABEL } from '../../src/runtime/labels.js';
import { ContainerState, PodSandboxState } from '../../src/runtime/cri/messages.js';
import { ContainerStartError, SandboxError } from '../../src/runtime/runtime-types.js';
import { criErrors } from '../fakes/fake-cri-runtime.js';
import { appOf, BUSYBOX, busyboxPod, criBed, identity, runPod, startRequest, type CriBed } from './cri-fake-bed.js';

// The CRI engine's lifecycle (create, start, stop, remove, status, exec) on the in-memory runtime:
// what it asks of the runtime, in which order, and what it makes of the answers and refusals.

let bed: CriBed;
afterEach(() => bed.dispose());

describe('the CRI engine making a pod on a fake runtime', () => {
  it("runs the pod's sandbox with podrun's identity as selectable labels, and tells who listens", async () => {
    bed = criBed();
    const d = busyboxPod('web');
    const sandbox = await bed.engine.createSandbox(d.pod, identity(d), 0, sandboxHash(d.pod), false);
    // The containers' image looked up while the sandbox is made; no status asked (no start needs the IP).
    expect(bed.runtime.callNames()).toEqual(['ImageStatus', 'RunPodSandbox']);
    const [run] = bed.runtime.callsOf('RunPodSandbox');
    const config = run?.request.config as { metadata: unknown; labels: Record<string, string>; logDirectory: string };
    expect(config.metadata).toEqual({ name: 'web', namespace: 'default', uid: d.uid, attempt: 0 });
    // Labels, not annotations: the runtime's list selects on labels only.
    expect(config.labels).toMatchObject({ [LABEL.instance]: bed.engine.instance, [LABEL.podUid]: d.uid, [LABEL.managedBy]: 'podrun' });
    expect(config.logDirectory).toBe(bed.engine.podLogDirectory({ namespace: 'default', name: 'web', uid: d.uid }));
    expect(sandbox).toEqual({ id: bed.runtime.sandboxes.keys().next().value, ip: '' });
    expect(bed.runtime.sandboxes.get(sandbox.id)?.status.state).toBe(PodSandboxState.READY);
    expect(bed.created).toEqual([{ uid: d.uid, id: sandbox.id }]);
  });

  it('creates, then starts, a container in the sandbox it is given, with its identity and its log path', async () => {
    bed = criBed();
    const d = busyboxPod('web');
    const { sandbox, containerId } = await runPod(bed, d);
    expect(bed.runtime.callNames()).toEqual(['ImageStatus', 'RunPodSandbox', 'CreateContainer', 'StartContainer']);
    const [create] = bed.runtime.callsOf('CreateContainer');
    expect(create?.request.podSandboxId).toBe(sandbox.id);
    const config = create?.request.config as { metadata: unknown; labels: Record<string, string>; logPath: string };
    expect(config.metadata).toEqual({ name: 'app', attempt: 0 });
    expect(config.labels).toMatchObject({ [LABEL.podUid]: d.uid, [LABEL.containerName]: 'app', [LABEL.instance]: bed.engine.instance });
    expect(config.logPath).toBe('app/0.log');
    expect(bed.runtime.callsOf('StartContainer')[0]?.request).toEqual({ containerId });
    expect(bed.runtime.containers.get(containerId)?.status.state).toBe(ContainerState.RUNNING);
    expect(bed.created.map((c) => c.id)).toEqual([sandbox.id, containerId]);
  });

  it('pulls an image the runtime lacks before the create, as IfNotPresent says', async () => {
    bed = criBed();
    bed.runtime.images.clear();
    await runPod(bed, busyboxPod('web'));
    const names = bed.runtime.callNames();
    expect(names.filter((n) => n === 'PullImage')).toHaveLength(1);
    expect(names.indexOf('PullImage')).toBeLessThan(names.indexOf('CreateContainer'));
    expect(bed.runtime.callsOf('PullImage')[0]?.request.image).toEqual({ image: BUSYBOX });
  });

  it('has an image again that was removed behind its back, and creates once more', async () => {
    bed = criBed();
    await runPod(bed, busyboxPod('one'));
    // Seen present by the first pod; `crictl rmi` then takes it away.
    bed.runtime.images.clear();
    bed.runtime.clearCalls();
    await runPod(bed, busyboxPod('two'));
    expect(bed.runtime.callNames().filter((n) => n !== 'ImageStatus')).toEqual([
      'RunPodSandbox',
      'CreateContainer',
      'PullImage',
      'CreateContainer',
      'StartContainer',
    ]);
  });
});

describe("the CRI engine's refused creates leave what the code promises", () => {
  it('a refused RunPodSandbox is a SandboxError, and nothing is told as made', async () => {
    bed = criBed();
    bed.runtime.injectError('RunPodSandbox', criErrors.invalidArgument('RunPodSandbox', 'bad config'));
    const d = busyboxPod('web');
    await expect(bed.engine.createSandbox(d.pod, identity(d), 0, sandboxHash(d.pod), false)).rejects.toThrow(SandboxError);
    expect(bed.runtime.sandboxes.size).toBe(0);
    expect(bed.created).toEqual([]);
  });

  it('a refused CreateContainer is a CreateContainerError and is not started', async () => {
    bed = criBed();
    const d = busyboxPod('web');
    const sandbox = await bed.engine.createSandbox(d.pod, identity(d), 0, sandboxHash(d.pod), false);
    bed.runtime.injectError('CreateContainer', criErrors.invalidArgument('CreateContainer', 'bad mount'));
    const err = await bed.engine.startContainer(d.pod, identity(d), appOf(d), startRequest(d, appOf(d), sandbox)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ContainerStartError);
    expect((err as ContainerStartError).reason).toBe('CreateContainerError');
    expect(bed.runtime.callNames()).not.toContain('StartContainer');
    expect(bed.runtime.containers.size).toBe(0);
    expect(bed.created.map((c) => c.id)).toEqual([sandbox.id]);
  });

  it('a refused StartContainer is a RunContainerError; the created container is told, so the cache sees it to replace', async () => {
    bed = criBed();
    const d = busyboxPod('web');
    const sandbox = await bed.engine.createSandbox(d.pod, identity(d), 0, sandboxHash(d.pod), false);
    bed.runtime.injectError('StartContainer', criErrors.failedPrecondition('StartContainer', 'exec format error'));
    const err = await bed.engine.startContainer(d.pod, identity(d), appOf(d), startRequest(d, appOf(d), sandbox)).catch((e: unknown) => e);
    expect((err as ContainerStartError).reason).toBe('RunContainerError');
    const [left] = [...bed.runtime.containers.keys()];
    expect(bed.runtime.containers.get(left ?? '')?.status.state).toBe(ContainerState.CREATED);
    expect(bed.created.map((c) => c.id)).toEqual([sandbox.id, left]);
  });
});

describe('the CRI engine stopping and removing on a fake runtime', () => {
  it('stops with the grace period in whole seconds; a container gone already is fine', async () => {
    bed = criBed();
    const { containerId } = await runPod(bed, busyboxPod('web'));
    bed.runtime.clearCalls();
    await bed.engine.stopContainer(containerId, 2.4);
    expect(bed.runtime.calls).toEqual([{ name: 'StopContainer', request: { containerId, timeout: 2 } }]);
    expect(bed.runtime.containers.get(containerId)?.status.state).toBe(ContainerState.EXITED);
    await expect(bed.engine.stopContainer('gone', 1)).resolves.toBeUndefined();
  });

  it("a stop the runtime did not answer in time fails as the runtime's fault", async () => {
    bed = criBed();
    const { containerId } = await runPod(bed, busyboxPod('web'));
    bed.runtime.injectError('StopContainer', criErrors.deadline('StopContainer'));
    const err = await bed.engine.stopContainer(containerId, 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineRequestError);
    expect((err as EngineRequestError).kind).not.toBe('NotFound');
  });

  it('removes a container; NotFound from the runtime is fine', async () => {
    bed = criBed();
    const { containerId } = await runPod(bed, busyboxPod('web'));
    await bed.engine.stopContainer(containerId, 0);
    await bed.engine.removeContainer(containerId);
    expect(bed.runtime.containers.has(containerId)).toBe(false);
    bed.runtime.injectError('RemoveContainer', criErrors.notFound('RemoveContainer'));
    await expect(bed.engine.removeContainer(containerId)).resolves.toBeUndefined();
  });

  it('removes a sandbox as the kubelet GC does: stopped first, then removed, even when the stop finds it gone', async () => {
    bed = criBed();
    const { sandbox } = await runPod(bed, busyboxPod('web'));
    bed.runtime.clearCalls();
    await bed.engine.removeSandbox(sandbox.id);
    expect(bed.runtime.callNames()).toEqual(['StopPodSandbox', 'RemovePodSandbox']);
    expect(bed.runtime.sandboxes.size + bed.runtime.containers.size).toBe(0);
    bed.runtime.clearCalls();
    await expect(bed.engine.removeSandbox(sandbox.id)).resolves.toBeUndefined();
    expect(bed.runtime.callNames()).toEqual(['StopPodSandbox', 'RemovePodSandbox']);
  });

  it("an unreachable runtime is the engine's unavailable error, not a refused request", async () => {
    bed = criBed();
    const { containerId } = await runPod(bed, busyboxPod('web'));
    bed.runtime.injectError('StopContainer', criErrors.unavailable());
    await expect(bed.engine.stopContainer(containerId, 1)).rejects.toBeInstanceOf(EngineUnavailableError);
    bed.runtime.injectError('ListPodSandbox', criErrors.unavailable());
    await expect(bed.engine.listPods()).rejects.toBeInstanceOf(EngineUnavailableError);
  });
});

describe("the CRI engine's status and exec on a fake runtime", () => {
  it("reads a container's exit as the runtime tells it: code, finish time, never to be taken over", async () => {
    bed = criBed();
    const { containerId } = await runPod(bed, busyboxPod('web'));
    expect(await bed.engine.containerState(containerId)).toMatchObject({ state: 'running', exitCode: 0 });
    bed.runtime.exitContainer(containerId, 3, { finishedAt: 1_700_000_100_250_000_000n });
    expect(await bed.engine.containerState(containerId)).toMatchObject({ state: 'exited', exitCode: 3, finishedAt: '2023-11-14T22:15:00.250000000Z' });
    expect(await bed.engine.finishedAt(containerId)).toBe(1_700_000_100_250);
    expect(await bed.engine.takeOverRestarts(containerId)).toBe('never');
    expect(await bed.engine.takeOverRestarts('gone')).toBeUndefined();
    expect(await bed.engine.containerState('gone')).toBeUndefined();
  });

  it('reads a sandbox as one: PodSandboxStatus, its state as the runtime says it, no ContainerStatus', async () => {
    bed = criBed();
    const b = bed;
    const { sandbox } = await runPod(b, busyboxPod('web'));
    b.runtime.clearCalls();
    const look = async (): Promise<unknown> => (await b.engine.inspectContainers(new Map([[sandbox.id, 'sandbox']]))).get(sandbox.id);
    expect(await look()).toMatchObject({ kind: 'sandbox', id: sandbox.id, state: 'ready' });
    b.runtime.killSandbox(sandbox.id);
    expect(await look()).toMatchObject({ kind: 'sandbox', id: sandbox.id, state: 'notready' });
    expect(b.runtime.callNames()).toEqual(['PodSandboxStatus', 'PodSandboxStatus']);
  });

  it("runs a probe's command through ExecSync with the runtime's later timeout, its output joined", async () => {
    bed = criBed();
    const { containerId } = await runPod(bed, busyboxPod('web'));
    bed.runtime.execAnswer = () => ({ exitCode: 1, stdout: 'out ', stderr: 'err' });
    expect(await bed.engine.exec(containerId, ['cat', '/ready'], 1000)).toEqual({ exitCode: 1, output: 'out err' });
    // podrun's own timeout (1 s) ends it first; the runtime's is 2 s later (exec.ts).
    expect(bed.runtime.callsOf('ExecSync')[0]?.request).toEqual({ containerId, cmd: ['cat', '/ready'], timeout: 3 });
    bed.runtime.execAnswer = () => 'timeout';
    expect(await bed.engine.exec(containerId, ['sleep', '9'], 1000)).toBe('timeout');
  });

  it('an exec in a container the runtime does not have is a not-found error', async () => {
    bed = criBed();
    const err = await bed.engine.exec('gone', ['true'], 1000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineRequestError);
    expect((err as EngineRequestError).kind).toBe('NotFound');
  });
});
