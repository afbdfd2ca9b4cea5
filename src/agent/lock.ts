import { createHash } from 'node:crypto';
import { mkdirSync, realpathSync, rmSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';

// One agent per state directory. The lock is a Linux abstract unix socket named after the state
// directory's real path: binding it is atomic (two agents started at the same instant cannot both
// win), and the kernel releases it the moment the holder dies, kill -9 included, even while the
// process is still a zombie. A pid file could do neither: pids are reused after a reboot, and a
// check-then-write lets two agents in. The name lives in the network namespace, so agents that
// share a state directory must share a network namespace too (they do on a node).

function lockName(stateDir: string): string {
  return `\0podrun-agent-${createHash('sha256').update(realpathSync(stateDir)).digest('hex').slice(0, 32)}`;
}

/** Takes the state directory's lock; throws if another live agent holds it. Resolves to the release. */
export async function acquireAgentLock(stateDir: string): Promise<() => void> {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const name = lockName(stateDir);
  // Whoever connects only learns that an agent is alive; nothing is said.
  const server: Server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'EADDRINUSE' ? new Error(`another podrun agent is running with state directory ${stateDir}`) : err);
    });
    server.listen(name, () => resolve());
  });
  // An older podrun kept a pid file here; it means nothing now.
  rmSync(join(stateDir, 'agent.pid'), { force: true });
  server.unref();
  return () => {
    server.close();
  };
}

/** Whether a live agent holds this state directory's lock: a connection, not a pid, decides. */
export async function agentRunning(stateDir: string): Promise<boolean> {
  let name: string;
  try {
    name = lockName(stateDir);
  } catch {
    return false;
  }
  return new Promise((resolve) => {
    const s = connect(name);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
