import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { stageAppliedSet } from '../../src/sources/applied-sets.js';
import type { DesiredPod } from '../../src/manifest/types.js';
import { desired } from '../fixtures/pods.js';

// What the applied-set tests share: a pod of one container from a given source, a state directory
// removed after each test, and an apply's record as `apply` makes it (staged, then committed).

export const pod = (name: string, image = 'busybox:1.36', source = 'file:/a.yaml'): DesiredPod => ({
  ...desired(`apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec: {containers: [{name: c, image: ${image}}]}
`),
  origin: { source, file: source, line: 1 },
});

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

export function stateDir(prefix = 'podrun-applied-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** Records the set as `apply` does, to the end of its directory's fsync. */
export async function recordSet(state: string, setId: string, pods: DesiredPod[], prune: boolean): Promise<void> {
  await (
    await stageAppliedSet(state, setId, pods, prune).commit()
  ).durable;
}
