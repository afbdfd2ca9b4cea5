import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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
