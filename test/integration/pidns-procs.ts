import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** A process as `ps -o pid,stat,args` shows it (the pid here is the host's). */
export interface NsProc {
  pid: number;
  stat: string;
  args: string;
}

/**
 * The processes in the pid namespace of `initPid` (a container's first process), read from the
 * host's /proc: what `ps` would list inside the container, zombies as `[name]` as ps shows them.
 * Undefined when that process is gone.
 */
export function pidNamespaceProcesses(initPid: number): NsProc[] | undefined {
  let ns: string;
  try {
    ns = readlinkSync(`/proc/${initPid}/ns/pid`);
  } catch {
    return undefined;
  }
  const out: NsProc[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readlinkSync(`/proc/${p}/ns/pid`) !== ns) continue;
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      // The name is in parentheses and may hold spaces: the state is the first field after it.
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const state = stat.slice(close + 2, close + 3);
      const args = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
      out.push({ pid: Number(p), stat: state, args: args || `[${comm}]` });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
