import { describe, expect, it } from 'vitest';
import { CriNotSupportedError, CriRequestError } from '../../src/runtime/cri/errors.js';
import { ContainerState } from '../../src/runtime/cri/messages.js';
import type { ContainerEvent, PodSandboxConfigInput } from '../../src/runtime/cri/messages.js';
import { criErrors, FakeCriRuntime } from '../fakes/fake-cri-runtime.js';

// The fake CRI runtime holds to what the engine's tests rely on it for: containerd's rules.

const sandboxConfig = (labels: Record<string, string>, annotations: Record<string, string> = {}): PodSandboxConfigInput => ({
  metadata: { name: 'p', uid: 'u', namespace: 'default', attempt: 0 },
  labels,
  annotations,
});

describe('the fake CRI runtime', () => {
  it('selects on labels only, as containerd does: an annotation never matches', async () => {
    const rt = new FakeCriRuntime();
    const a = await rt.runPodSandbox(sandboxConfig({ app: 'a' }));
    await rt.runPodSandbox(sandboxConfig({}, { app: 'a' }));
    expect((await rt.listPodSandbox({ labelSelector: { app: 'a' } })).map((s) => s.id)).toEqual([a]);
  });

  it('throws each injected error once, in order, after recording the call', async () => {
    const rt = new FakeCriRuntime();
    rt.injectError('Version', criErrors.unimplemented('Version'));
    rt.injectError('Version', criErrors.invalidArgument('Version', 'no'));
    await expect(rt.version()).rejects.toBeInstanceOf(CriNotSupportedError);
    await expect(rt.version()).rejects.toBeInstanceOf(CriRequestError);
    await expect(rt.version()).resolves.toMatchObject({ runtimeName: 'fakeRuntime' });
    expect(rt.callNames()).toEqual(['Version', 'Version', 'Version']);
  });

  it('refuses what containerd refuses: a create from a missing image, the removal of a running container', async () => {
    const rt = new FakeCriRuntime();
    const sb = await rt.runPodSandbox(sandboxConfig({}));
    const config = { metadata: { name: 'c' }, image: { image: 'img:1' } };
    await expect(rt.createContainer(sb, config, sandboxConfig({}))).rejects.toThrow(/not found/);
    rt.addImage('img:1');
    const id = await rt.createContainer(sb, config, sandboxConfig({}));
    await rt.startContainer(id);
    await expect(rt.removeContainer(id)).rejects.toThrow(/must be stopped/);
    rt.exitContainer(id, 0);
    expect((await rt.containerStatus(id)).state).toBe(ContainerState.EXITED);
    await rt.removeContainer(id);
    await expect(rt.containerStatus(id)).rejects.toThrow(/not found/);
  });

  it('sends each change to a reader of GetContainerEvents with the sandbox status, or answers Unimplemented', async () => {
    const rt = new FakeCriRuntime();
    const abort = new AbortController();
    const events = rt.containerEvents(abort.signal);
    const first = events.next();
    const sb = await rt.runPodSandbox(sandboxConfig({ app: 'a' }));
    const ev = (await first).value as ContainerEvent;
    expect([ev.containerId, ev.containerEventType, ev.podSandboxStatus?.labels]).toEqual([sb, 0, { app: 'a' }]);
    expect((await events.next()).value).toMatchObject({ containerId: sb, containerEventType: 1 });
    abort.abort();
    expect((await events.next()).done).toBe(true);
    const none = new FakeCriRuntime();
    none.eventsUnimplemented = true;
    await expect(none.containerEvents().next()).rejects.toBeInstanceOf(CriNotSupportedError);
  });
});
