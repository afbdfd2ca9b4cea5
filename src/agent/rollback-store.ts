import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log/logger.js';
import type { RollbackRecord } from '../reconcile/rollback.js';
import { writeFileAtomic } from '../base/atomic-file.js';

interface StoredRecord extends RollbackRecord {
  uid: string;
  /** namespace/name, for whoever reads the directory. */
  key: string;
}

/** The last name made: a pod updated often has its record written at each update, and the hash was a third of the write. */
let lastFile: { uid: string; name: string } | undefined;

/** A file name from a pod uid (which a manifest may set to anything). */
function fileOf(uid: string): string {
  if (lastFile?.uid === uid) return lastFile.name;
  const name = `${createHash('sha256').update(uid).digest('hex').slice(0, 32)}.json`;
  lastFile = { uid, name };
  return name;
}

/**
 * The health-gate records of every pod, one file per pod in `<state-dir>/rollback/`, written
 * atomically before the agent acts on them (so a kill -9 finds the decision it was carrying out).
 * A file that cannot be read is logged and ignored: the pod then runs what its source declares.
 */
export class RollbackStore {
  private readonly dir: string;
  private readonly records = new Map<string, RollbackRecord>();

  constructor(
    stateDir: string,
    private readonly log: Logger,
  ) {
    this.dir = join(stateDir, 'rollback');
  }

  load(): void {
    let names: string[];
    try {
      names = readdirSync(this.dir).filter((n) => n.endsWith('.json'));
    } catch {
      return;
    }
    for (const n of names) {
      try {
        const { key: _key, uid, ...record } = JSON.parse(readFileSync(join(this.dir, n), 'utf8')) as StoredRecord;
        if (typeof uid !== 'string' || fileOf(uid) !== n) throw new Error('no uid, or not the uid its name is made from');
        if (record.good && (typeof record.good.version !== 'string' || typeof record.good.pod !== 'object')) throw new Error('good version without a pod');
        this.records.set(uid, record);
      } catch (err) {
        this.log.error(`${join(this.dir, n)}: cannot read the rollback record (${(err as Error).message}); its pod runs what its source declares`);
      }
    }
  }

  get(uid: string): RollbackRecord {
    return this.records.get(uid) ?? {};
  }

  /** Stores a changed record; throws when it cannot be written to disk (it is kept in memory still). */
  set(uid: string, key: string, record: RollbackRecord): void {
    const path = join(this.dir, fileOf(uid));
    if (!record.good && !record.trying && !record.failed) {
      rmSync(path, { force: true });
      this.records.delete(uid);
      return;
    }
    // Kept in memory even when the write fails: the agent acts on it either way.
    this.records.set(uid, record);
    writeFileAtomic(path, `${JSON.stringify({ uid, key, ...record }, null, 2)}\n`);
  }

  get size(): number {
    return this.records.size;
  }

  uids(): string[] {
    return [...this.records.keys()];
  }

  forget(uid: string): void {
    if (!this.records.delete(uid)) return;
    rmSync(join(this.dir, fileOf(uid)), { force: true });
  }
}
