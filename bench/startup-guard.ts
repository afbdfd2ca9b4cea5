/**
 * The start-up guard: a CLI start-up ratio that grew more than the tolerance over the one recorded
 * in docs/benchmarks.md fails the bench, so a feature cannot quietly add to every start. Pure, so
 * a unit test can hold it.
 */

export const STARTUP_HEADING = '### CLI start-up';

/** One measured row: the command as the table names it, and its median ratio to `node -e 0`. */
export interface StartupRow {
  name: string;
  median: number;
}

/** The median ratios of the CLI start-up table in a benchmarks document, by command. */
export function recordedStartup(doc: string): Map<string, number> {
  const out = new Map<string, number>();
  const at = doc.indexOf(STARTUP_HEADING);
  if (at < 0) return out;
  const lines = doc.slice(at).split('\n').slice(1);
  let inTable = false;
  for (const line of lines) {
    if (!line.startsWith('|')) {
      if (inTable) break;
      if (line.startsWith('#')) break;
      continue;
    }
    inTable = true;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    // The ratio column is the bold one: **1.63 (1.57–1.72)**.
    const ratio = cells.map((c) => /^\*\*(\d+(?:\.\d+)?)/.exec(c)?.[1]).find((x) => x !== undefined);
    if (cells[0] && ratio !== undefined) out.set(cells[0], Number(ratio));
  }
  return out;
}

/** The rows that grew more than `tolerance` (0.10: 10 %) over the recorded ratio, as messages. */
export function startupRegressions(recorded: Map<string, number>, measured: StartupRow[], tolerance = 0.1): string[] {
  const out: string[] = [];
  for (const r of measured) {
    const before = recorded.get(r.name);
    if (before === undefined) continue;
    if (r.median > before * (1 + tolerance)) {
      out.push(`${r.name}: start-up ratio ${r.median.toFixed(2)} is more than ${Math.round(tolerance * 100)} % over the recorded ${before.toFixed(2)}`);
    }
  }
  return out;
}
