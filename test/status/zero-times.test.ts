import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { age } from '../../src/cli/get.js';
import { renderDescribe } from '../../src/cli/describe.js';
import { loadPodViews } from '../../src/cli/views.js';
import { ContainerState, PodSandboxState } from '../../src/runtime/cri/messages.js';
import { busyboxPod, criBed, runPod, type CriBed } from '../runtime/cri-fake-bed.js';

// What `get pods` and `describe` print of a pod whose runtime gave zero times (issue 44: a failed
// sandbox showed creationTimestamp 1754-08-30, AGE 99444d). kubectl prints `<unknown>` for a
// creationTimestamp it does not have (printers.go translateTimestampSince); podrun leaves the
// time out, so AGE says the same and describe shows no Start Time. The CLI's own path (no agent)
// on the CRI engine over the in-memory runtime.

/** Go's zero time through UnixNano(): it overflows to 1754-08-30T22:43:41.128654848Z. */
const GO_ZERO_NS = -6795364578871345152n;
const MIN_INT64 = -9223372036854775808n;

let bed: CriBed | undefined;
let stateDir: string | undefined;
afterEach(() => {
  bed?.dispose();
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

describe('a zero time from the runtime is never printed, nor an age counted from it', () => {
  it('a sandbox that failed with a zero creation time: AGE <unknown>, no creationTimestamp, no Start Time; container times left out', async () => {
    bed = criBed();
    stateDir = mkdtempSync(join(tmpdir(), 'podrun-zero-times-'));
    const d = busyboxPod('zero');
    const { sandbox, containerId } = await runPod(bed, d);
    const sb = bed.runtime.sandboxes.get(sandbox.id)!;
    sb.status.state = PodSandboxState.NOTREADY;
    sb.status.createdAt = GO_ZERO_NS;
    const c = bed.runtime.containers.get(containerId)!;
    Object.assign(c.status, { state: ContainerState.EXITED, exitCode: 1, reason: 'Error', createdAt: MIN_INT64, startedAt: MIN_INT64, finishedAt: GO_ZERO_NS });

    const { pods, fromAgent } = await loadPodViews(bed.engine, stateDir);
    expect(fromAgent).toBe(false);
    const pod = pods.find((p) => p.metadata.name === 'zero')!;
    expect(pod.metadata).not.toHaveProperty('creationTimestamp');
    expect(age(pod.metadata.creationTimestamp)).toBe('<unknown>');
    const terminated = pod.status.containerStatuses?.[0]?.state.terminated;
    expect(terminated).toMatchObject({ exitCode: 1 });
    expect(terminated).not.toHaveProperty('startedAt');
    expect(terminated).not.toHaveProperty('finishedAt');

    const text = renderDescribe(pod, undefined, 'node-1').join('\n');
    expect(text).not.toMatch(/Start Time|Started:|Finished:/);
    // No year the runtime's "unset" could come out as: 0001, 1677 (int64's minimum), 1754 (Go's zero), 1970.
    expect(JSON.stringify(pod)).not.toMatch(/"(0001|1677|1754|1969|1970)-/);
  });

  it('a real creation time is kept and aged', async () => {
    bed = criBed();
    stateDir = mkdtempSync(join(tmpdir(), 'podrun-zero-times-'));
    const d = busyboxPod('real');
    const { sandbox } = await runPod(bed, d);
    const now = BigInt(Date.now() - 3 * 3600_000) * 1_000_000n;
    bed.runtime.sandboxes.get(sandbox.id)!.status.createdAt = now;
    const { pods } = await loadPodViews(bed.engine, stateDir);
    const pod = pods.find((p) => p.metadata.name === 'real')!;
    expect(pod.metadata.creationTimestamp).toBe(new Date(Number(now / 1_000_000_000n) * 1000).toISOString());
    expect(age(pod.metadata.creationTimestamp)).toBe('3h');
    expect(renderDescribe(pod, undefined, 'node-1').join('\n')).toContain(`Start Time:   ${pod.metadata.creationTimestamp}`);
  });
});
