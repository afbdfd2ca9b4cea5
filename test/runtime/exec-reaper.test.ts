import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cgroupPids, execProcesses, killExec, parseStat, procView, type ProcStat, type ProcView } from '../../src/runtime/exec-reaper.js';
import { CappedBytes, MAX_EXEC_OUTPUT } from '../../src/runtime/docker/streams.js';

// Which processes an exec's end may signal: only the exec's own, inside its container, whatever
// else /proc shows (pids given out again, sessions and cgroups that only look alike).
const ID = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);
const CG = (id: string): string => `12:pids:/docker/${id}\n1:name=systemd:/docker/${id}\n0::/\n`;
const NS = 'pid:[4026532184]';

interface FakeProc {
  pid: number;
  ppid: number;
  session: number;
  start: number;
  state?: string;
  cgroup?: string;
  ns?: string;
  comm?: string;
}

/** A directory laid out as /proc: <pid>/stat, <pid>/cgroup, <pid>/ns/pid (a link), uptime. */
function fakeProc(procs: FakeProc[], uptime = 50): string {
  const root = mkdtempSync(join(tmpdir(), 'podrun-proc-'));
  writeFileSync(join(root, 'uptime'), `${uptime}.00 100.00\n`);
  for (const p of procs) {
    mkdirSync(join(root, String(p.pid), 'ns'), { recursive: true });
    // Fields after the command, as the kernel writes them: starttime is the 20th.
    const rest = [p.state ?? 'S', p.ppid, p.session, p.session, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 20, 0, 1, 0, p.start];
    writeFileSync(join(root, String(p.pid), 'stat'), `${p.pid} (${p.comm ?? 'sleep'}) ${rest.join(' ')} 0 0\n`);
    writeFileSync(join(root, String(p.pid), 'cgroup'), p.cgroup ?? CG(ID));
    symlinkSync(p.ns ?? NS, join(root, String(p.pid), 'ns', 'pid'));
  }
  roots.push(root);
  return root;
}
const roots: string[] = [];
afterAll(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));

const container = { id: ID, initPid: 50 };

/** The fake /proc, with no cgroupfs (every process is looked at) unless `cgroups` names one. */
const at = (root: string, kill: (pid: number, sig: NodeJS.Signals) => void = () => undefined, cgroups = join(root, 'no-cgroupfs')): ProcView =>
  procView(root, kill, cgroups);
const SINCE = 1000;

describe("which processes are an exec's", () => {
  const layout: FakeProc[] = [
    { pid: 50, ppid: 40, session: 50, start: 10 }, // the container's first process
    { pid: 60, ppid: 50, session: 50, start: 20 }, // the container's own work
    { pid: 100, ppid: 41, session: 100, start: 1200 }, // the exec's process (the shim's child)
    { pid: 101, ppid: 100, session: 100, start: 1210 }, // its child
    { pid: 102, ppid: 50, session: 100, start: 1220 }, // a child its parent left (reparented to PID 1)
    { pid: 103, ppid: 101, session: 103, start: 1230 }, // a grandchild that made a session of its own
    { pid: 104, ppid: 103, session: 103, start: 1240, comm: 'evil) S 1 100 100 (x' }, // a command that mimics stat's fields
    { pid: 105, ppid: 100, session: 100, start: 1250, state: 'Z' }, // dead already
    { pid: 200, ppid: 1, session: 100, start: 1300, cgroup: '0::/user.slice\n', ns: 'pid:[4026531836]' }, // the host's, same session number
    { pid: 201, ppid: 100, session: 100, start: 1300, cgroup: CG(OTHER) }, // another container's, claiming the exec as parent
    { pid: 202, ppid: 100, session: 100, start: 1300, ns: 'pid:[4026539999]' }, // the container's cgroup, another pid namespace
    { pid: 203, ppid: 50, session: 100, start: 900 }, // older than the exec: cannot be its
    { pid: 204, ppid: 100, session: 100, start: 1300, cgroup: `0::/system.slice/docker-${ID}0.scope\n` }, // an id that only starts alike
  ];

  it("the exec's process, its session, its descendants; nothing outside the container, older, or dead", () => {
    const view = at(fakeProc(layout));
    expect(execProcesses(view, container, 100, SINCE).sort()).toEqual([100, 101, 102, 103, 104]);
  });

  it("looks only at the processes of the container's cgroup (and its children) when cgroupfs can be read", () => {
    const root = fakeProc(layout);
    const dir = join(root, 'cg', 'pids', 'docker', ID);
    mkdirSync(join(dir, 'nested'), { recursive: true });
    writeFileSync(join(dir, 'cgroup.procs'), '50\n60\n100\n101\n');
    writeFileSync(join(dir, 'nested', 'cgroup.procs'), '103\n');
    // 102 and 104 are not listed: not candidates. Those listed are still judged by /proc.
    expect(execProcesses(at(root, undefined, join(root, 'cg')), container, 100, SINCE).sort()).toEqual([100, 101, 103]);
    // A cgroup line of the root ("/") is never walked: that would be the whole machine.
    expect(cgroupPids(join(root, 'cg'), '12:pids:/\n', ID)).toBeUndefined();
    expect(cgroupPids(join(root, 'cg'), CG(ID), ID)?.sort()).toEqual([100, 101, 103, 50, 60]);
  });

  it('reads a command with spaces and parentheses in it', () => {
    const s = parseStat('104 (evil) S 1 100 100 (x) S 103 103 103 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1240 0 0');
    expect(s).toEqual({ pid: 104, ppid: 103, session: 103, state: 'S', start: 1240 } satisfies ProcStat);
    expect(parseStat('garbage')).toBeUndefined();
    expect(parseStat(undefined)).toBeUndefined();
  });

  it("an exec's pid given out again to a process of another container: nothing is the exec's", () => {
    const view = at(
      fakeProc([
        { pid: 50, ppid: 40, session: 50, start: 10 },
        { pid: 100, ppid: 41, session: 100, start: 1500, cgroup: CG(OTHER) },
        { pid: 110, ppid: 100, session: 100, start: 1510, cgroup: CG(OTHER) },
      ]),
    );
    expect(execProcesses(view, container, 100, SINCE)).toEqual([]);
  });

  it("a /proc that is not the engine's (podrun in a pid namespace of its own) shows no process of the container", async () => {
    // The container's first pid names some other process here.
    const signals: string[] = [];
    const view = at(
      fakeProc([
        { pid: 50, ppid: 1, session: 50, start: 10, cgroup: '0::/\n' },
        { pid: 100, ppid: 1, session: 100, start: 1200, cgroup: '0::/\n' },
      ]),
      (pid, sig) => signals.push(`${sig} ${pid}`),
    );
    expect(execProcesses(view, container, 100, SINCE)).toEqual([]);
    expect(await killExec(view, container, 100, SINCE, async () => undefined)).toBe(0);
    expect(signals).toEqual([]);
  });

  it("the container's first process is never the exec's, even in its session", () => {
    const view = at(
      fakeProc([
        { pid: 50, ppid: 40, session: 100, start: 1200 },
        { pid: 100, ppid: 41, session: 100, start: 1200 },
      ]),
    );
    expect(execProcesses(view, container, 100, SINCE)).toEqual([100]);
  });

  it("signals only the exec's processes of a real /proc layout: stopped first, then killed", async () => {
    const signals: string[] = [];
    const view = at(fakeProc(layout), (pid, sig) => signals.push(`${sig} ${pid}`));
    // The files do not change when signalled: every round finds the same five, still "running".
    await killExec(view, container, 100, SINCE, async () => undefined);
    const pids = new Set(signals.map((s) => Number(s.split(' ')[1])));
    expect([...pids].sort()).toEqual([100, 101, 102, 103, 104]);
    const firstKill = signals.findIndex((s) => s.startsWith('SIGKILL'));
    expect(signals.slice(0, firstKill).every((s) => s.startsWith('SIGSTOP'))).toBe(true);
    expect(signals.slice(0, firstKill)).toHaveLength(5);
  });
});

/** An in-memory /proc whose processes obey signals; `forker` makes a child at every look until it is stopped. */
function liveView(procs: FakeProc[], forker?: number): ProcView & { log: string[]; table: Map<number, FakeProc> } {
  const table = new Map(procs.map((p) => [p.pid, { ...p }]));
  let next = 1000;
  const log: string[] = [];
  return {
    log,
    table,
    pids: () => {
      const f = forker !== undefined ? table.get(forker) : undefined;
      if (f && f.state !== 'T') {
        const pid = next++;
        table.set(pid, { pid, ppid: f.pid, session: f.session, start: 1300 });
      }
      return [...table.keys()];
    },
    stat: (pid) => {
      const p = table.get(pid);
      return p ? { pid, ppid: p.ppid, session: p.session, state: p.state ?? 'S', start: p.start } : undefined;
    },
    cgroup: (pid) => (table.has(pid) ? (table.get(pid)?.cgroup ?? CG(ID)) : undefined),
    pidNs: (pid) => (table.has(pid) ? (table.get(pid)?.ns ?? NS) : undefined),
    now: () => 5000,
    signal: (pid, sig) => {
      log.push(`${sig} ${pid}`);
      const p = table.get(pid);
      if (!p) return;
      if (sig === 'SIGSTOP') p.state = 'T';
      else table.delete(pid);
    },
  };
}

describe('killing an exec', () => {
  it('a process that forks as fast as it is looked at is stopped, then killed with every child it made', async () => {
    const view = liveView(
      [
        { pid: 50, ppid: 40, session: 50, start: 10 },
        { pid: 100, ppid: 41, session: 100, start: 1200 },
      ],
      100,
    );
    const killed = await killExec(view, container, 100, SINCE, async () => undefined);
    expect([...view.table.keys()]).toEqual([50]);
    expect(killed).toBeGreaterThanOrEqual(2);
    expect(view.log.filter((l) => l.endsWith(' 50'))).toEqual([]);
  });

  it('an exec that already ended, with nothing left, costs no signal', async () => {
    const view = liveView([{ pid: 50, ppid: 40, session: 50, start: 10 }]);
    expect(await killExec(view, container, 100, SINCE, async () => undefined)).toBe(0);
    expect(view.log).toEqual([]);
  });
});

describe('exec output', () => {
  it("keeps the kubelet's 10 KiB, counted in bytes, of any amount offered", () => {
    const out = new CappedBytes(MAX_EXEC_OUTPUT);
    const chunk = Buffer.from('é'.repeat(1000)); // 2,000 bytes, 1,000 characters
    for (let i = 0; i < 50_000; i++) out.add(chunk); // 100 MB
    expect(out.seen).toBe(100_000_000);
    const text = out.text();
    // 10,240 bytes is 5,120 whole characters: the cut falls between two.
    expect(Buffer.byteLength(text)).toBe(10 * 1024);
    expect(text).toBe('é'.repeat(5120));
  });

  it('cuts inside a chunk at exactly the limit', () => {
    const out = new CappedBytes(10);
    out.add(Buffer.from('abcdef'));
    out.add(Buffer.from('ghijkl'));
    out.add(Buffer.from('mn'));
    expect(out.text()).toBe('abcdefghij');
  });
});
