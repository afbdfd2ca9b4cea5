import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

// Ending what an exec started, when its deadline passes or its client goes away. The engine has
// no call for it (Docker's API cannot kill an exec), so podrun signals the processes itself, from
// the engine's /proc: the exec's process (its host pid, from the engine's exec inspect), then
// everything it started. A pid is a number that the kernel gives out again once it is free, and
// the container may be hostile: a process is signalled only when /proc shows it inside that very
// container (its cgroup names the container's id, its pid namespace is the container's) and it
// started after the exec was made. Nothing outside the container is ever signalled.

/** One process as /proc/<pid>/stat tells it. */
export interface ProcStat {
  pid: number;
  ppid: number;
  session: number;
  /** R, S, D, T, t, Z, X... A zombie (Z) holds nothing but its pid; it cannot be signalled away. */
  state: string;
  /** Clock ticks after boot. */
  start: number;
}

/** What the reaper reads and does, so a test can hand in a /proc of its own and count signals. */
export interface ProcView {
  /**
   * The processes to look at: those of the container's cgroup (and its children) when its
   * cgroupfs can be read, which costs what the container holds; else every process of the machine.
   */
  pids(c: ExecContainer): number[];
  stat(pid: number): ProcStat | undefined;
  cgroup(pid: number): string | undefined;
  pidNs(pid: number): string | undefined;
  /** Clock ticks since boot now (as /proc/<pid>/stat counts a process's start). */
  now(): number;
  signal(pid: number, sig: 'SIGSTOP' | 'SIGKILL'): void;
}

/** The container the exec ran in: its full id and its first process's host pid (inspect's State.Pid). */
export interface ExecContainer {
  id: string;
  initPid: number;
}

/** USER_HZ: the unit of /proc's start times, 100 on every Linux architecture Node runs on. */
const TICKS_PER_SECOND = 100;

/** A walk of a container's cgroup stops past this many directories (a container can make its own below it). */
const MAX_CGROUP_DIRS = 1000;

/** The machine's /proc and cgroupfs (or directories laid out as them, for tests). */
export function procView(
  root = '/proc',
  kill: (pid: number, sig: NodeJS.Signals) => void = (p, s) => process.kill(p, s),
  cgroupRoot = '/sys/fs/cgroup',
): ProcView {
  const read = (path: string): string | undefined => {
    try {
      return readFileSync(`${root}/${path}`, 'utf8');
    } catch {
      return undefined;
    }
  };
  const all = (): number[] => {
    try {
      return readdirSync(root)
        .filter((n) => /^[0-9]+$/.test(n))
        .map(Number);
    } catch {
      return [];
    }
  };
  return {
    pids: (c) => cgroupPids(cgroupRoot, read(`${c.initPid}/cgroup`), c.id) ?? all(),
    stat: (pid) => parseStat(read(`${pid}/stat`)),
    cgroup: (pid) => read(`${pid}/cgroup`),
    pidNs: (pid) => {
      try {
        return readlinkSync(`${root}/${pid}/ns/pid`);
      } catch {
        return undefined;
      }
    },
    now: () => Math.floor(Number((read('uptime') ?? '0').split(' ')[0]) * TICKS_PER_SECOND),
    signal: (pid, sig) => {
      try {
        kill(pid, sig);
      } catch {
        // Gone between the look and the signal: what was wanted.
      }
    },
  };
}

/**
 * The processes of the cgroup that /proc/<pid>/cgroup names (one that names the container), its
 * child cgroups included: the pids controller's (or memory's) on cgroup v1, the unified one on
 * v2. Undefined when it cannot be read: the caller looks at every process instead. Only a
 * candidate list: each process is still judged by /proc.
 */
export function cgroupPids(cgroupRoot: string, procCgroup: string | undefined, id: string): number[] | undefined {
  if (!procCgroup || !namesContainer(procCgroup, id)) return undefined;
  const lines = procCgroup
    .split('\n')
    .map((l) => /^\d+:([^:]*):(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null);
  const v1 = (name: string): string | undefined => lines.find((m) => m[1]?.split(',').includes(name))?.[2];
  const v2 = lines.find((m) => m[1] === '')?.[2];
  const dirs = [
    v1('pids') && `${cgroupRoot}/pids${v1('pids')}`,
    v1('memory') && `${cgroupRoot}/memory${v1('memory')}`,
    v2 && `${cgroupRoot}${v2}`,
    v2 && `${cgroupRoot}/unified${v2}`,
  ];
  for (const dir of dirs) {
    if (!dir || !namesContainer(dir, id)) continue;
    const pids: number[] = [];
    const queue = [dir];
    let seen = 0;
    let readable = false;
    for (let d = queue.shift(); d !== undefined && seen < MAX_CGROUP_DIRS; d = queue.shift(), seen++) {
      try {
        pids.push(...readFileSync(`${d}/cgroup.procs`, 'utf8').split('\n').filter(Boolean).map(Number));
        readable = true;
        for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) queue.push(`${d}/${e.name}`);
      } catch {
        // Gone, or not this hierarchy: the next one is tried.
      }
    }
    if (readable) return pids;
  }
  return undefined;
}

/** /proc/<pid>/stat: the command (in parentheses, and it may hold spaces and parentheses) ends at the last ')'. */
export function parseStat(text: string | undefined): ProcStat | undefined {
  if (!text) return undefined;
  const close = text.lastIndexOf(')');
  const pid = Number(text.slice(0, text.indexOf(' ')));
  if (close < 0 || !Number.isInteger(pid)) return undefined;
  // After the command: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
  // utime stime cutime cstime priority nice num_threads itrealvalue starttime.
  const f = text.slice(close + 2).split(' ');
  const ppid = Number(f[1]);
  const session = Number(f[3]);
  const start = Number(f[19]);
  if (!f[0] || ![ppid, session, start].every(Number.isFinite)) return undefined;
  return { pid, ppid, session, state: f[0], start };
}

/** The container's id as a whole component of a cgroup path (/docker/<id>, docker-<id>.scope, libpod-<id>). */
function namesContainer(cgroup: string | undefined, id: string): boolean {
  if (!cgroup || !/^[0-9a-f]{64}$/.test(id)) return false;
  return new RegExp(`(^|[^0-9a-f])${id}([^0-9a-f]|$)`, 'm').test(cgroup);
}

/**
 * Whether `pid` is a process of the container, by what /proc shows now: its cgroup names the
 * container and it shares the pid namespace of the container's first process, which must itself
 * pass (so a /proc that is not the engine's, as in a pid namespace of podrun's own, matches nothing).
 */
export function inContainer(view: ProcView, c: ExecContainer, pid: number): boolean {
  const ns = view.pidNs(c.initPid);
  if (ns === undefined || !namesContainer(view.cgroup(c.initPid), c.id)) return false;
  return namesContainer(view.cgroup(pid), c.id) && view.pidNs(pid) === ns;
}

/** Whether this /proc shows the engine's processes: the container's first process is where the engine says. */
export function seesContainer(view: ProcView, c: ExecContainer): boolean {
  return inContainer(view, c, c.initPid);
}

/**
 * The live processes of one exec: its process `leader` (when it is still the exec's), every process
 * of its session (runc and crun make an exec's process a session leader; a child that its parent
 * left keeps the session), and their descendants, each one of the container's and started no
 * earlier than `since` (ticks after boot, read before the exec was made). The container's first
 * process is never one. Zombies are left out: they are dead already.
 */
export function execProcesses(view: ProcView, c: ExecContainer, leader: number, since: number): number[] {
  const all = new Map<number, ProcStat>();
  for (const pid of view.pids(c)) {
    const s = view.stat(pid);
    if (s && s.state !== 'Z' && s.state !== 'X') all.set(pid, s);
  }
  const found = new Set<number>();
  for (const s of all.values()) if (s.pid === leader || s.session === leader) found.add(s.pid);
  // Descendants, to a fixed point (a child that left the session is still its parent's).
  const children = new Map<number, number[]>();
  for (const s of all.values()) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s.pid]);
  const queue = [...found];
  for (let p = queue.pop(); p !== undefined; p = queue.pop()) {
    for (const child of children.get(p) ?? []) {
      if (!found.has(child)) {
        found.add(child);
        queue.push(child);
      }
    }
  }
  return [...found].filter((pid) => pid !== c.initPid && (all.get(pid)?.start ?? -1) >= since && inContainer(view, c, pid));
}

/**
 * Kills an exec's processes. Each is stopped first, so that none forks behind the kill (a stopped
 * process cannot), and the tree looked at again until nothing new appears; then all are killed,
 * and a few more rounds take whatever still slipped out. Returns how many processes were killed.
 */
export async function killExec(
  view: ProcView,
  c: ExecContainer,
  leader: number,
  since: number,
  pause = (ms: number) => new Promise((r) => setTimeout(r, ms)),
): Promise<number> {
  if (!seesContainer(view, c)) return 0;
  const held = new Set<number>();
  for (let round = 0; round < 20; round++) {
    const fresh = execProcesses(view, c, leader, since).filter((p) => !held.has(p));
    // Settled when nothing new appeared and every held process has stopped (SIGSTOP lands when it
    // next returns to user space: until then it may still fork once).
    const running = [...held].some((p) => {
      const st = view.stat(p)?.state;
      return st !== undefined && st !== 'T' && st !== 't' && st !== 'Z' && st !== 'X';
    });
    if (!fresh.length && !running) break;
    for (const p of fresh) {
      view.signal(p, 'SIGSTOP');
      held.add(p);
    }
    if (!fresh.length) await pause(5);
  }
  for (const p of held) view.signal(p, 'SIGKILL');
  let killed = held.size;
  for (let round = 0; round < 5; round++) {
    const left = execProcesses(view, c, leader, since);
    if (!left.length) break;
    for (const p of left) view.signal(p, 'SIGKILL');
    killed += left.filter((p) => !held.has(p)).length;
    await pause(10);
  }
  return killed;
}
