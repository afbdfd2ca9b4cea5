import { acquireLock, LockHeldError, lockHolder, type LockHolder } from '../agent/lock.js';
import type { Io } from './context.js';

/** Who changes the pods for this command: the agent (asked over its socket), or this CLI, holding the state directory's lock until `release`. */
export type Actor = { kind: 'agent' } | { kind: 'cli'; release: () => void };

/**
 * One actor per state directory. With an agent running, it acts and the command asks it; without
 * one, this command takes the lock, so an agent or a second command started meanwhile is told who
 * acts instead of racing it. Undefined, with one line said, when another command holds the lock.
 * `describe`: what this command is doing now, told to whoever asks the lock (Terminating pods).
 */
export async function becomeActor(stateDir: string, verb: string, io: Io, describe?: () => Partial<LockHolder>): Promise<Actor | undefined> {
  if ((await lockHolder(stateDir))?.kind === 'agent') return { kind: 'agent' };
  try {
    return { kind: 'cli', release: await acquireLock(stateDir, { kind: 'cli', verb }, describe) };
  } catch (err) {
    if (!(err instanceof LockHeldError)) throw err;
    // An agent that started since the look above acts now.
    if (err.holder.kind === 'agent') return { kind: 'agent' };
    io.err(`podrun: ${err.message}`);
    return undefined;
  }
}
