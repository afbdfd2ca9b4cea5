import { formatIssue, type ManifestIssue } from '../manifest/errors.js';
import type { ShownPlan } from '../server/client.js';
import type { Io } from './context.js';

export function printIssues(io: Io, issues: ManifestIssue[]): void {
  for (const i of issues) io.err(formatIssue(i));
}

/** An apply's plan, as this CLI decided it (no agent) or as the agent answered it. */
export function printPlan(io: Io, plans: readonly ShownPlan[], dryRun: boolean): void {
  const suffix = dryRun ? ' (dry run)' : '';
  for (const p of plans) {
    io.out(`pod/${p.key} ${p.verdict}${suffix}`);
    const a = p.actions;
    if (p.verdict === 'replaced' && a.reason) io.out(`  pod: ${a.reason}`);
    if (p.verdict !== 'updated') continue;
    const started = new Set(a.containersToStart.map((s) => s.name));
    for (const k of a.containersToKill) if (!started.has(k.name)) io.out(`  container ${k.name}: stopped (${k.reason})`);
    for (const s of a.containersToStart) {
      const replaced = a.containersToKill.some((k) => k.name === s.name);
      io.out(`  container ${s.name}: ${replaced ? 'replaced' : 'started'} (${s.reason})`);
    }
  }
}

/** The width of each column of a table: its widest cell. */
export function columnWidths(rows: string[][]): number[] {
  return rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
}

/** One row in columns of these widths (a wider cell pushes the rest of its row along, still 3 spaces apart). */
export function tableRow(r: string[], widths: number[]): string {
  return r
    .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(Math.max(widths[i] ?? 0, cell.length) + 3)))
    .join('')
    .trimEnd();
}

/** A fixed-width table, like kubectl's. */
export function table(rows: string[][]): string[] {
  const widths = columnWidths(rows);
  return rows.map((r) => tableRow(r, widths));
}
