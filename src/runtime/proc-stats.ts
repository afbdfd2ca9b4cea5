import { readdirSync, readlinkSync } from 'node:fs';
import { readIfThere, readSetting } from './cgroup-files.js';

// What a container's processes hold, from /proc as cAdvisor reads it (its process metrics): open
// file descriptors and how many are sockets, summed over the processes of the container's cgroup,
// and the open-files soft limit of its first process. A container decides how many descriptors
// it opens, so the count stops at a bound: past it, the figures are left out, not cut short.

export interface ProcFs {
  /** A directory's names, or undefined when it cannot be listed. */
  list(path: string): string[] | undefined;
  /** A symlink's target, or undefined. */
  link(path: string): string | undefined;
  read(path: string): string | undefined;
}

export interface ProcessFigures {
  fds?: number;
  sockets?: number;
  /** The soft limit on open files of the container's first process (-1: unlimited, as cAdvisor says it). */
  maxOpenFiles?: number;
}

/** The most descriptors counted in one container at one reading. */
export const MAX_FDS = 65_536;

export function processFigures(pids: readonly number[], fs: ProcFs, procRoot = '/proc'): ProcessFigures {
  if (!pids.length) return {};
  const out: ProcessFigures = {};
  let fds = 0;
  let sockets = 0;
  let complete = true;
  for (const pid of pids) {
    const names = fs.list(`${procRoot}/${pid}/fd`);
    // Gone since the cgroup was listed, or not ours to read: a count without it is not the container's.
    if (names === undefined || fds + names.length > MAX_FDS) {
      complete = false;
      break;
    }
    fds += names.length;
    for (const n of names) if (fs.link(`${procRoot}/${pid}/fd/${n}`)?.startsWith('socket:')) sockets++;
  }
  if (complete) {
    out.fds = fds;
    out.sockets = sockets;
  }
  const first = Math.min(...pids);
  // A process's limits are set when it starts (or by prlimit): read as a setting, once a minute.
  const limits = readSetting(fs.read, `${procRoot}/${first}/limits`);
  const m = limits ? /^Max open files\s+(\S+)/m.exec(limits) : null;
  if (m) out.maxOpenFiles = m[1] === 'unlimited' ? -1 : /^\d+$/.test(m[1]!) ? Number(m[1]) : undefined;
  if (out.maxOpenFiles === undefined) delete out.maxOpenFiles;
  return out;
}

export const hostProc: ProcFs = {
  list: (path) => {
    try {
      return readdirSync(path);
    } catch {
      return undefined;
    }
  },
  link: (path) => {
    try {
      return readlinkSync(path);
    } catch {
      return undefined;
    }
  },
  read: readIfThere,
};
