import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { criErrors } from '../fakes/fake-cri-runtime.js';
import { busyboxPod, criBed, runPod, type CriBed } from './cri-fake-bed.js';

// A container's log on a CRI runtime is a file the runtime writes where the kubelet (here podrun)
// told it: the pod's log directory and `<container>/<restart>.log` below it. The fake runtime
// reports the path as containerd does; the test writes the file in the CRI log format.

let bed: CriBed;
afterEach(() => bed.dispose());

function collect(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

describe("the CRI engine's logs on a fake runtime", () => {
  it("reads the file at the path the runtime reports, under the pod's log directory it made, each stream to its own", async () => {
    bed = criBed();
    const d = busyboxPod('web');
    const { containerId } = await runPod(bed, d);
    const path = bed.runtime.containers.get(containerId)?.status.logPath ?? '';
    expect(path).toBe(`${bed.engine.podLogDirectory({ namespace: 'default', name: 'web', uid: d.uid })}/app/0.log`);
    // Made by the engine before the create: a runtime does not make the directory itself.
    expect(existsSync(dirname(path))).toBe(true);
    writeFileSync(
      path,
      ['2026-01-01T00:00:00.000000001Z stdout F hello', '2026-01-01T00:00:00.000000002Z stderr P par', '2026-01-01T00:00:00.000000003Z stderr F tial', ''].join(
        '\n',
      ),
    );
    bed.runtime.exitContainer(containerId, 0);
    const out = collect();
    const err = collect();
    await bed.engine.writeLogs(containerId, { follow: false, timestamps: false }, out.stream, err.stream);
    expect([out.text(), err.text()]).toEqual(['hello\n', 'partial\n']);
    expect(bed.runtime.callsOf('ContainerStatus').map((c) => c.request.containerId)).toEqual([containerId]);
  });

  it("removes a container's log and its rotated files with the container, and no other instance's (the kubelet's removeContainerLog)", async () => {
    bed = criBed();
    const { containerId } = await runPod(bed, busyboxPod('web'));
    const path = bed.runtime.containers.get(containerId)?.status.logPath ?? '';
    const dir = dirname(path);
    // This instance's files as rotation leaves them, and the next instance's log beside them.
    for (const f of ['0.log', '0.log.20260101-000000.gz', '0.log.20260101-000001', '1.log', '10.log']) writeFileSync(`${dir}/${f}`, 'x\n');
    bed.runtime.exitContainer(containerId, 0);
    // A removal the runtime refuses leaves the log: the container is still there for `logs -p`.
    bed.runtime.injectError('RemoveContainer', criErrors.failedPrecondition('RemoveContainer', 'busy'));
    await expect(bed.engine.removeContainer(containerId)).rejects.toThrow(/busy/);
    expect(readdirSync(dir).sort()).toEqual(['0.log', '0.log.20260101-000000.gz', '0.log.20260101-000001', '1.log', '10.log']);
    await bed.engine.removeContainer(containerId);
    expect(readdirSync(dir).sort()).toEqual(['1.log', '10.log']);
    // Asked before the removal: after it the runtime no longer knows the path.
    expect(
      bed.runtime.calls
        .map((c) => c.name)
        .filter((m) => m === 'ContainerStatus' || m === 'RemoveContainer')
        .slice(-2),
    ).toEqual(['ContainerStatus', 'RemoveContainer']);
  });
});
