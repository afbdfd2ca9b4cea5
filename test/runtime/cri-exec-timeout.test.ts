import { describe, expect, it } from 'vitest';
import type { CriClient } from '../../src/runtime/cri/client.js';
import { criExec, runtimeExecTimeoutS } from '../../src/runtime/cri/exec.js';
import type { ProcView } from '../../src/runtime/exec-reaper.js';

// containerd kills an ExecSync's process at the runtime's timeout; a child the command left then
// lives on as an orphan that nothing ties to the exec. podrun's own kill (exec-end.ts) must come
// first, so the runtime is handed a later deadline than the one podrun keeps.

/** A client whose ExecSync never answers, and which records the timeout it was handed. */
function stalledClient(): { client: CriClient; asked: number[] } {
  const asked: number[] = [];
  const client = {
    execSync: (_id: string, _cmd: string[], timeoutSeconds: number) => {
      asked.push(timeoutSeconds);
      return new Promise<never>(() => undefined);
    },
    // The kill's look for the container's first process: gone, so nothing is signalled.
    containerStatusVerbose: () => Promise.reject(new Error('gone')),
  } as unknown as CriClient;
  return { client, asked };
}

const noProc: ProcView = {
  pids: () => [],
  stat: () => undefined,
  cgroup: () => undefined,
  pidNs: () => undefined,
  now: () => 0,
  signal: () => undefined,
};

describe('an exec timed out by podrun on CRI', () => {
  it('hands the runtime a deadline seconds after its own, so podrun kills first', async () => {
    const { client, asked } = stalledClient();
    const r = await criExec(client, 'c'.repeat(64), ['sh', '-c', 'yes & sleep 9'], 50, noProc);
    expect(r).toBe('timeout');
    expect(asked).toHaveLength(1);
    // podrun's deadline: 50 ms; the runtime's at least a whole second past it.
    expect(asked[0]! * 1000).toBeGreaterThanOrEqual(50 + 1000);
  });

  it('rounds as the kubelet does, then adds the slack', () => {
    for (const [ms, own] of [
      [1, 1],
      [1000, 1],
      [1001, 2],
      [30_000, 30],
    ] as const) {
      expect(runtimeExecTimeoutS(ms)).toBeGreaterThanOrEqual(own + 1);
      expect(runtimeExecTimeoutS(ms)).toBeLessThanOrEqual(own + 3);
    }
  });
});
