import { describe, expect, it } from 'vitest';
import { endExec, execClock } from '../../src/runtime/docker/exec-end.js';
import type { ProcView } from '../../src/runtime/exec-reaper.js';
import type { EngineCalls } from '../../src/runtime/docker/engine.js';

// When an exec's end may touch processes at all: a local engine whose /proc podrun sees, an exec
// still running (or, for a timed-out probe, one whose children hold its output).
const ID = 'c'.repeat(64);

type ExecInspect = { Running: boolean; Pid: number; ExitCode?: number | null };

/** `exec`: what each exec inspect answers, in turn (the last one again once they run out). */
function engine(endpoint: string, exec: ExecInspect | ExecInspect[]): EngineCalls & { calls: string[] } {
  const calls: string[] = [];
  const answers = Array.isArray(exec) ? [...exec] : [exec];
  const docker = {
    getExec: () => ({ inspect: async () => (answers.length > 1 ? answers.shift() : answers[0]) }),
    getContainer: () => ({ inspect: async () => ({ Id: ID, State: { Pid: 50 } }) }),
  };
  // Only the two inspects endExec makes are faked, not the whole client.
  return {
    calls,
    endpoint,
    options: { stateDir: '/x', pauseImage: 'p' },
    docker: docker as unknown as EngineCalls['docker'],
    call: (what, fn) => (calls.push(what), fn()),
  } as EngineCalls & { calls: string[] };
}

/** A /proc with the container's first process (50) and the exec's (100) in it; every signal noted. */
function view(sees = true): ProcView & { signals: string[] } {
  const signals: string[] = [];
  const gone = new Set<number>();
  return {
    signals,
    pids: () => [50, 100].filter((p) => !gone.has(p)),
    stat: (pid) => (gone.has(pid) ? undefined : { pid, ppid: pid === 100 ? 41 : 40, session: pid, state: 'S', start: pid === 100 ? 1200 : 10 }),
    cgroup: () => (sees ? `0::/docker/${ID}\n` : '0::/\n'),
    pidNs: () => 'pid:[1]',
    now: () => 1000,
    signal: (pid, sig) => {
      signals.push(`${sig} ${pid}`);
      if (sig === 'SIGKILL') gone.add(pid);
    },
  };
}

const ref = { containerId: ID, execId: 'e', since: 1000 };

describe('ending an exec', () => {
  it('a remote engine: nothing is asked or signalled, and the answer says it could not', async () => {
    const e = engine('tcp://127.0.0.1:2375', { Running: true, Pid: 100 });
    const v = view();
    expect(execClock(e, v)).toBe(0);
    expect(await endExec(e, { ...ref, since: 0 }, true, v)).toBe('unreachable');
    expect(e.calls).toEqual([]);
    expect(v.signals).toEqual([]);
  });

  it('a local engine whose processes this /proc does not show (podrun in a pid namespace of its own): unreachable, nothing signalled', async () => {
    const v = view(false);
    expect(await endExec(engine('unix:///var/run/docker.sock', { Running: true, Pid: 100 }), ref, true, v)).toBe('unreachable');
    expect(v.signals).toEqual([]);
  });

  it('an abandoned `podrun exec` whose process has exited is let be (what it left in the background stays)', async () => {
    const v = view();
    expect(await endExec(engine('unix:///var/run/docker.sock', { Running: false, Pid: 100 }), ref, false, v)).toBe('finished');
    expect(v.signals).toEqual([]);
  });

  it('a running exec on a local engine is stopped, then killed', async () => {
    const v = view();
    expect(await endExec(engine('/var/run/docker.sock', { Running: true, Pid: 100 }), ref, false, v)).toEqual({ killed: 1 });
    expect(v.signals).toEqual(['SIGSTOP 100', 'SIGKILL 100']);
  });

  it('an exec whose process has not started by its deadline (a loaded machine) is waited for, then killed', async () => {
    const v = view();
    const pauses: number[] = [];
    const e = engine('/var/run/docker.sock', [
      { Running: false, Pid: 0, ExitCode: null },
      { Running: false, Pid: 0, ExitCode: null },
      { Running: true, Pid: 100 },
    ]);
    expect(await endExec(e, ref, true, v, async (ms) => pauses.push(ms))).toEqual({ killed: 1 });
    expect(pauses).toHaveLength(2);
    expect(v.signals).toEqual(['SIGSTOP 100', 'SIGKILL 100']);
  });
});
