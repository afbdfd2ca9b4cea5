import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function pidFile(stateDir: string): string {
  return join(stateDir, 'agent.pid');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid of a live agent using this state directory, if any. */
export function runningAgent(stateDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(pidFile(stateDir), 'utf8').trim());
    return pid > 0 && pid !== process.pid && alive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** One agent per state directory; a stale pid file (after kill -9) is taken over. */
export function acquireAgentLock(stateDir: string): () => void {
  const other = runningAgent(stateDir);
  if (other) throw new Error(`another podrun agent (pid ${other}) is running with state directory ${stateDir}`);
  mkdirSync(stateDir, { recursive: true });
  writeFileSync(pidFile(stateDir), `${process.pid}\n`);
  return () => {
    try {
      if (Number(readFileSync(pidFile(stateDir), 'utf8').trim()) === process.pid) rmSync(pidFile(stateDir));
    } catch {
      // already gone
    }
  };
}
