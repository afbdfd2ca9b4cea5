import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../base/atomic-file.js';

/**
 * Pods being deleted: while a pod spends its grace period, whoever deletes it (`podrun delete` or
 * the agent) leaves a note in the state directory, so every reader (get, describe, the agent's
 * /pods) shows it Terminating, with the deletionTimestamp and grace period kubectl shows.
 */
export interface Deletion {
  deletionTimestamp: string;
  deletionGracePeriodSeconds: number;
}

function dir(stateDir: string): string {
  return join(stateDir, 'terminating');
}

export function markTerminating(stateDir: string, uid: string, graceSeconds: number): void {
  try {
    mkdirSync(dir(stateDir), { recursive: true, mode: 0o700 });
    const note: Deletion = { deletionTimestamp: new Date().toISOString(), deletionGracePeriodSeconds: graceSeconds };
    // Not fsynced: it lives as long as a deletion, on the deletion's path (a power loss at worst
    // loses the Terminating display; the next agent deletes the pod again all the same).
    writeFileAtomic(join(dir(stateDir), `${uid}.json`), JSON.stringify(note), { durable: false });
  } catch {
    // A state dir that cannot be written costs the Terminating display, never the deletion.
  }
}

export function clearTerminating(stateDir: string, uid: string): void {
  rmSync(join(dir(stateDir), `${uid}.json`), { force: true });
}

export function terminatingPods(stateDir: string): Map<string, Deletion> {
  const out = new Map<string, Deletion>();
  let names: string[];
  try {
    names = readdirSync(dir(stateDir));
  } catch {
    return out;
  }
  for (const n of names) {
    if (!n.endsWith('.json')) continue;
    try {
      out.set(n.slice(0, -5), JSON.parse(readFileSync(join(dir(stateDir), n), 'utf8')) as Deletion);
    } catch {
      // half-written or damaged: not shown
    }
  }
  return out;
}

/** A deletion not done this long after its grace period was given up on (its deleter died): the pod is the agent's again. */
const DELETION_SLACK_S = 30;

/**
 * Whether someone (`podrun delete`) is deleting the pod now: an agent that synced it meanwhile
 * would race the deletion (a container restarted into a sandbox about to stop) instead of making
 * the pod anew once it is gone. A note left by a deleter that died is given up on once its grace
 * period and some slack have passed, and removed, so the pod is not shown Terminating for ever.
 */
export function deletionUnderway(stateDir: string, uid: string, now: number): boolean {
  const file = join(dir(stateDir), `${uid}.json`);
  // Asked at every turn of every pod's worker: a missing note (the usual case) is told by a look,
  // not by a read that fails (an ENOENT error made and thrown cost ~0.1 ms a turn).
  if (!existsSync(file)) return false;
  let note: Partial<Deletion>;
  try {
    note = JSON.parse(readFileSync(file, 'utf8')) as Partial<Deletion>;
  } catch {
    // None (the usual case), or half-written: no deletion to wait for.
    return false;
  }
  const since = Date.parse(String(note.deletionTimestamp));
  const grace = Number(note.deletionGracePeriodSeconds);
  if (!Number.isFinite(since) || !Number.isFinite(grace)) return false;
  if (now <= since + (Math.max(0, grace) + DELETION_SLACK_S) * 1000) return true;
  rmSync(file, { force: true });
  return false;
}
