import { afterEach, describe, expect, it } from 'vitest';
import { LABEL } from '../../src/runtime/labels.js';
import { busyboxPod, criBed, runPod, type CriBed } from './cri-fake-bed.js';

// The CRI engine's reading half (engine-view.ts) on the in-memory runtime: lists by podrun's
// labels, the answers it keeps so a relist stays cheap (exit codes, sandbox IPs), and inspects by
// id, each sandbox and container as what it is.

const beds: CriBed[] = [];
afterEach(() => {
  for (const b of beds.splice(0)) b.dispose();
});
function bed(...a: Parameters<typeof criBed>): CriBed {
  const b = criBed(...a);
  beds.push(b);
  return b;
}

describe('the CRI engine listing a fake runtime', () => {
  it("lists every pod of its instance, or one pod by its uid label, grouped with the sandbox's IP", async () => {
    const b = bed();
    const a = busyboxPod('a');
    const c = busyboxPod('c');
    const ra = await runPod(b, a);
    await runPod(b, c);
    expect((await b.engine.listPods()).map((p) => p.name).sort()).toEqual(['a', 'c']);
    b.runtime.clearCalls();
    const [only, ...rest] = await b.engine.listPods(a.uid);
    expect(rest).toEqual([]);
    expect(only?.sandboxes.map((s) => [s.id, s.state, s.ip])).toEqual([[ra.sandbox.id, 'ready', '10.88.0.2']]);
    expect(only?.containers.map((x) => [x.id, x.name, x.state])).toEqual([[ra.containerId, 'app', 'running']]);
    const selector = { [LABEL.instance]: b.engine.instance, [LABEL.podUid]: a.uid };
    expect(b.runtime.callsOf('ListPodSandbox')[0]?.request).toEqual({ filter: { labelSelector: selector } });
    expect(b.runtime.callsOf('ListContainers')[0]?.request).toEqual({ filter: { labelSelector: selector } });
  });

  it("asks an exited container's exit code once: it never changes", async () => {
    const b = bed();
    const { containerId } = await runPod(b, busyboxPod('a'));
    b.runtime.exitContainer(containerId, 3);
    const first = await b.engine.listContainers();
    expect(first.find((x) => x.id === containerId)).toMatchObject({ state: 'exited', exitCode: 3 });
    await b.engine.listContainers();
    expect(b.runtime.callsOf('ContainerStatus')).toHaveLength(1);
  });

  it("sees neither another instance's pods nor, by id, its containers, on a runtime they share", async () => {
    const mine = bed();
    const theirs = bed({}, mine.runtime);
    await runPod(mine, busyboxPod('a'));
    const other = await runPod(theirs, busyboxPod('b'));
    expect((await mine.engine.listPods()).map((p) => p.name)).toEqual(['a']);
    const seen = await mine.engine.inspectContainers(
      new Map([
        [other.containerId, 'container'],
        [other.sandbox.id, 'sandbox'],
      ]),
    );
    expect([...seen.values()]).toEqual([undefined, undefined]);
  });

  it('inspects containers and sandboxes by id, each by its own call and no other; one the runtime does not have is undefined', async () => {
    const b = bed();
    const { sandbox, containerId } = await runPod(b, busyboxPod('a'));
    b.runtime.exitContainer(containerId, 1);
    b.runtime.clearCalls();
    const seen = await b.engine.inspectContainers(
      new Map([
        [containerId, 'container'],
        [sandbox.id, 'sandbox'],
        ['gone', 'container'],
      ]),
    );
    expect(seen.get(containerId)).toMatchObject({ kind: 'container', id: containerId, state: 'exited', exitCode: 1 });
    expect(seen.get(sandbox.id)).toMatchObject({ kind: 'sandbox', id: sandbox.id, state: 'ready', network: { ip: '10.88.0.2' } });
    expect(seen.get('gone')).toBeUndefined();
    // No id is tried as the other kind: a NotFound is the answer, not a cue to guess.
    expect(b.runtime.callNames().sort()).toEqual(['ContainerStatus', 'ContainerStatus', 'PodSandboxStatus']);
  });
});

describe("a list of one pod leaves the other pods' cached answers alone", () => {
  it("keeps the other pod's exit codes and sandbox IP through a list of one pod by uid", async () => {
    const b = bed();
    const a = busyboxPod('a');
    const c = busyboxPod('c');
    const ra = await runPod(b, a);
    const rc = await runPod(b, c);
    b.runtime.exitContainer(ra.containerId, 1);
    b.runtime.exitContainer(rc.containerId, 2);
    // The relist's full list: each exit code and sandbox IP asked once.
    await b.engine.listContainers();
    await b.engine.listContainers(a.uid);
    b.runtime.clearCalls();
    // Pod c as the runtime said before: the sandbox's IP known, its exit code not asked again.
    expect(await b.engine.sandboxInfo(rc.sandbox.id, c.pod)).toEqual({ id: rc.sandbox.id, ip: '10.88.0.3' });
    await b.engine.inspectContainers(new Map([[rc.sandbox.id, 'sandbox']]));
    const listed = await b.engine.listContainers(c.uid);
    expect(b.runtime.callNames()).toEqual(['PodSandboxStatus', 'ListPodSandbox', 'ListContainers']);
    expect(listed.find((x) => x.id === rc.containerId)).toMatchObject({ kind: 'container', exitCode: 2 });
  });

  it('asks a sandbox the runtime no longer has as a sandbox still: gone, in one call', async () => {
    const b = bed();
    const { sandbox } = await runPod(b, busyboxPod('a'));
    // Removed behind the engine's back (crictl rmp).
    await b.runtime.stopPodSandbox(sandbox.id);
    await b.runtime.removePodSandbox(sandbox.id);
    await b.engine.listContainers();
    b.runtime.clearCalls();
    expect((await b.engine.inspectContainers(new Map([[sandbox.id, 'sandbox']]))).get(sandbox.id)).toBeUndefined();
    expect(b.runtime.callNames()).toEqual(['PodSandboxStatus']);
  });
});
