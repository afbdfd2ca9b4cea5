import { describe, expect, it } from 'vitest';
import type { ProcStat, ProcView } from '../../src/runtime/exec-reaper.js';
import { criExecId, findExecLeader } from '../../src/runtime/cri/exec-end.js';

// Which process is an abandoned `podrun exec`'s on a CRI runtime, which gives an exec no id: the
// container's process, newer than the exec, parented by the runtime's shim (outside the
// container), running exactly the command; and only when that is one process.
const ID = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);
const CG = (id: string): string => `0::/k8s.io/${id}\n`;
const NS = 'pid:[4026532000]';

interface P {
  pid: number;
  ppid: number;
  start: number;
  argv: string[];
  cgroup?: string;
  ns?: string;
  state?: string;
}

function view(procs: P[]): { view: ProcView; argv: (pid: number) => string[] | undefined } {
  const by = new Map(procs.map((p) => [p.pid, p]));
  return {
    view: {
      pids: () => procs.map((p) => p.pid),
      stat: (pid): ProcStat | undefined => {
        const p = by.get(pid);
        return p && { pid, ppid: p.ppid, session: pid, state: p.state ?? 'S', start: p.start };
      },
      cgroup: (pid) => (by.has(pid) ? (by.get(pid)?.cgroup ?? CG(ID)) : undefined),
      pidNs: (pid) => (by.has(pid) ? (by.get(pid)?.ns ?? NS) : undefined),
      now: () => 5000,
      signal: () => undefined,
    },
    argv: (pid) => by.get(pid)?.argv,
  };
}

const SHIM = { pid: 40, ppid: 1, start: 10, argv: ['containerd-shim-runc-v2'], cgroup: '0::/system.slice/containerd.service\n', ns: 'pid:[4026531836]' };
const INIT = { pid: 100, ppid: 40, start: 100, argv: ['sh', '-c', 'while :; do sleep 1; done'] };
const where = { id: ID, initPid: 100 };

describe('the process of an abandoned exec on a CRI runtime', () => {
  it("is the one newer than the exec, parented by the shim, running the command; not the container's own nor an older one", () => {
    const { view: v, argv } = view([
      SHIM,
      INIT,
      { pid: 150, ppid: 40, start: 900, argv: ['sleep', '1003'] }, // an older session of the same command
      { pid: 200, ppid: 100, start: 1200, argv: ['sleep', '1003'] }, // the container's own child: parent inside
      { pid: 210, ppid: 40, start: 1200, argv: ['sleep', '1003'], cgroup: CG(OTHER) }, // another container's
      { pid: 220, ppid: 40, start: 1200, argv: ['sleep', '10030'] }, // not the command
      { pid: 230, ppid: 40, start: 1300, argv: ['sleep', '1003'] }, // it
    ]);
    expect(findExecLeader(v, where, ['sleep', '1003'], 1000, argv)).toBe(230);
    expect(findExecLeader(v, where, ['sleep', '1004'], 1000, argv)).toBe('none');
  });

  it('is not guessed at when two processes fit (two sessions of one command)', () => {
    const { view: v, argv } = view([SHIM, INIT, { pid: 230, ppid: 40, start: 1300, argv: ['sh'] }, { pid: 240, ppid: 40, start: 1400, argv: ['sh'] }]);
    expect(findExecLeader(v, where, ['sh'], 1000, argv)).toBe('ambiguous');
  });

  it("takes an exec that replaced its command (sh -c 'a & b' runs b in its own process) only when its call is in flight and it is the only exec since", () => {
    const it1 = { pid: 230, ppid: 40, start: 1300, argv: ['sleep', '1001'] };
    const { view: v, argv } = view([
      SHIM,
      INIT,
      { pid: 210, ppid: 100, start: 1100, argv: ['sleep', '9'] },
      it1,
      { pid: 231, ppid: 100, start: 1310, argv: ['sleep', '1000'] },
    ]);
    expect(findExecLeader(v, where, ['sh', '-c', 'sleep 1000 & sleep 1001'], 1000, argv)).toBe('none');
    expect(findExecLeader(v, where, ['sh', '-c', 'sleep 1000 & sleep 1001'], 1000, argv, true)).toBe(230);
    // Another exec of the container since: neither is guessed at.
    const two = view([SHIM, INIT, it1, { pid: 240, ppid: 40, start: 1400, argv: ['cat'] }]);
    expect(findExecLeader(two.view, where, ['sh', '-c', 'x'], 1000, two.argv, true)).toBe('ambiguous');
  });

  it('carries the command in the ref as JSON (the CRI has no exec id)', () => {
    expect(JSON.parse(criExecId(['sh', '-c', 'a b']))).toEqual(['sh', '-c', 'a b']);
  });
});
