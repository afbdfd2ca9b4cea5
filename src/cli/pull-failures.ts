import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../base/atomic-file.js';
import type { PodEvent } from '../status/events.js';

/** A container whose image `apply` could not have, as kubectl would show it: ErrImagePull or ErrImageNeverPull. */
export interface PullFailure {
  container: string;
  image: string;
  reason: string;
  message: string;
  at: string;
}

interface Stored {
  uid: string;
  key: string;
  failures: PullFailure[];
}

const dirOf = (stateDir: string): string => join(stateDir, 'pull-failures');
const fileOf = (uid: string): string => `${createHash('sha256').update(uid).digest('hex').slice(0, 32)}.json`;

/**
 * With no agent, nothing else remembers why a pod of `apply` has no container: its failed pulls
 * are kept in `<state-dir>/pull-failures/` (one file per pod, written atomically) so that `get`
 * and `describe` say ErrImagePull, as kubectl would, until an apply or an agent runs the pod.
 */
export function recordPullFailures(stateDir: string, uid: string, key: string, failures: PullFailure[]): void {
  const path = join(dirOf(stateDir), fileOf(uid));
  if (failures.length === 0) {
    rmSync(path, { force: true });
    return;
  }
  mkdirSync(dirOf(stateDir), { recursive: true });
  writeFileAtomic(path, `${JSON.stringify({ uid, key, failures } satisfies Stored, null, 2)}\n`);
}

/**
 * Whether any pod's failed pulls may be on record: a missing directory holds none; one that cannot
 * be read may (each pod's record is then removed as before, and a failure to do so told).
 */
export function anyPullFailures(stateDir: string): boolean {
  try {
    return readdirSync(dirOf(stateDir)).some((n) => n.endsWith('.json'));
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/** Every pod's recorded failures by uid; a file that cannot be read is skipped (it only informs). */
export function loadPullFailures(stateDir: string): Map<string, PullFailure[]> {
  const out = new Map<string, PullFailure[]>();
  let names: string[];
  try {
    names = readdirSync(dirOf(stateDir)).filter((n) => n.endsWith('.json'));
  } catch {
    return out;
  }
  for (const n of names) {
    try {
      const s = JSON.parse(readFileSync(join(dirOf(stateDir), n), 'utf8')) as Stored;
      if (typeof s.uid === 'string' && fileOf(s.uid) === n && Array.isArray(s.failures)) out.set(s.uid, s.failures);
    } catch {
      // A damaged record shows nothing; the next apply of the pod rewrites or removes it.
    }
  }
  return out;
}

/** The kubelet's events for the failed pulls, for describe with no agent. */
export function pullFailureEvents(ns: string, name: string, uid: string, failures: PullFailure[]): PodEvent[] {
  return failures.flatMap((f) => {
    const base = {
      count: 1,
      firstTimestamp: f.at,
      lastTimestamp: f.at,
      involvedObject: { kind: 'Pod' as const, namespace: ns, name, uid, fieldPath: `spec.containers{${f.container}}` },
      source: { component: 'podrun' as const },
    };
    return [
      { ...base, type: 'Normal' as const, reason: 'Pulling', message: `Pulling image "${f.image}"` },
      { ...base, type: 'Warning' as const, reason: 'Failed', message: `Failed to pull image "${f.image}": ${f.message}` },
      { ...base, type: 'Warning' as const, reason: 'Failed', message: `Error: ${f.reason}` },
    ];
  });
}
