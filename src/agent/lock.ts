import { createHash } from 'node:crypto';
import { mkdirSync, realpathSync, rmSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';

// One actor per state directory: an agent, or, with none, one CLI command that changes pods. The
// lock is a Linux abstract unix socket named after the state directory's real path: binding it is
// atomic (two started at the same instant cannot both win), and the kernel releases it the moment
// the holder dies, kill -9 included, even while the process is still a zombie. A pid file could do
// neither: pids are reused after a reboot, and a check-then-write lets two in. The name lives in
// the network namespace, so processes that share a state directory must share one too (they do
// on a node). Whoever connects is told who holds the lock and, for a CLI, what it is deleting.

/** Who holds the lock, as the holder says it on every connection. */
export interface LockHolder {
  kind: 'agent' | 'cli';
  pid?: number;
  /** The CLI's verb (apply, delete, pull, gc). */
  verb?: string;
  /** Pods the holder is deleting now, by uid: readers show them Terminating. */
  terminating?: Record<string, { deletionTimestamp: string; deletionGracePeriodSeconds: number }>;
}

/** The lock is held by someone else: `holder` says who. */
export class LockHeldError extends Error {
  constructor(
    readonly stateDir: string,
    readonly holder: LockHolder,
  ) {
    super(
      holder.kind === 'agent'
        ? `another podrun agent is running with state directory ${stateDir}`
        : `podrun ${holder.verb ?? 'command'}${holder.pid ? ` (pid ${holder.pid})` : ''} is changing the pods of state directory ${stateDir}; try again once it ends`,
    );
  }
}

function lockName(stateDir: string): string {
  return `\0podrun-agent-${createHash('sha256').update(realpathSync(stateDir)).digest('hex').slice(0, 32)}`;
}

/** How long a reader waits for the holder's line: a holder busy on its event loop answers late, never not at all. */
const HOLDER_TIMEOUT_MS = 5000;

/**
 * Takes the state directory's lock as `holder`; throws LockHeldError if someone holds it.
 * `describe` adds what the holder is doing now to each answer. Resolves to the release.
 */
export async function acquireLock(stateDir: string, holder: LockHolder, describe?: () => Partial<LockHolder>): Promise<() => void> {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const name = lockName(stateDir);
  const server: Server = createServer((socket) => {
    socket.on('error', () => socket.destroy());
    socket.end(`${JSON.stringify({ ...holder, pid: process.pid, ...describe?.() })}\n`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EADDRINUSE') return reject(err);
      lockHolder(stateDir).then((h) => reject(new LockHeldError(stateDir, h ?? { kind: 'agent' })), reject);
    });
    server.listen(name, () => resolve());
  });
  server.unref();
  return () => {
    server.close();
  };
}

/** The agent's lock: an older podrun kept a pid file here, which means nothing now. */
export async function acquireAgentLock(stateDir: string): Promise<() => void> {
  const release = await acquireLock(stateDir, { kind: 'agent' });
  rmSync(join(stateDir, 'agent.pid'), { force: true });
  return release;
}

/** Who holds this state directory's lock; undefined when nobody does. A connection decides, not a pid. */
export async function lockHolder(stateDir: string): Promise<LockHolder | undefined> {
  let name: string;
  try {
    name = lockName(stateDir);
  } catch {
    return undefined;
  }
  return new Promise((resolve) => {
    const s = connect(name);
    let connected = false;
    let text = '';
    s.setTimeout(HOLDER_TIMEOUT_MS, () => s.destroy());
    s.once('connect', () => (connected = true));
    s.on('data', (c: Buffer) => (text += c.toString('utf8')));
    s.once('error', () => undefined);
    s.once('close', () => {
      if (!connected) return resolve(undefined);
      try {
        resolve(JSON.parse(text) as LockHolder);
      } catch {
        // An agent of an earlier release says nothing: a holder all the same.
        resolve({ kind: 'agent' });
      }
    });
  });
}

/** Whether a live agent holds this state directory's lock. */
export async function agentRunning(stateDir: string): Promise<boolean> {
  return (await lockHolder(stateDir))?.kind === 'agent';
}
