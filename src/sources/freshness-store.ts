import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log/logger.js';
import { writeFileAtomic } from '../base/atomic-file.js';
import type { FreshnessRecord } from './freshness.js';

/**
 * What each signed source accepted, one file per source under `<state-dir>/set-freshness/`,
 * written atomically before the set it records is applied: a kill -9 in between leaves a record
 * at least as new as what runs, so a replay is never taken after a restart.
 */
export class FreshnessStore {
  private readonly dir: string;

  constructor(
    stateDir: string,
    private readonly log?: Logger,
  ) {
    this.dir = join(stateDir, 'set-freshness');
  }

  private path(source: string): string {
    return join(this.dir, `${createHash('sha256').update(source).digest('hex').slice(0, 24)}.json`);
  }

  read(source: string): FreshnessRecord | undefined {
    let text: string;
    try {
      text = readFileSync(this.path(source), 'utf8');
    } catch {
      return undefined;
    }
    try {
      const r = JSON.parse(text) as FreshnessRecord & { source?: string };
      if (r.source !== source || !Array.isArray(r.superseded) || (r.version !== undefined && !Number.isSafeInteger(r.version)))
        throw new Error('not a record of this source');
      return {
        ...(r.version !== undefined ? { version: r.version } : {}),
        ...(r.current ? { current: r.current } : {}),
        superseded: r.superseded.filter((d) => typeof d === 'string'),
      };
    } catch (err) {
      // Damaged: the signatures still hold; the versions start over from the next set taken.
      this.log?.error(`${this.path(source)}: damaged record of ${source} (${(err as Error).message}); replay protection starts over from the next set`, {
        source,
      });
      return undefined;
    }
  }

  write(source: string, record: FreshnessRecord): void {
    writeFileAtomic(this.path(source), `${JSON.stringify({ source, ...record })}\n`);
  }
}
