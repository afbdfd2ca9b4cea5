// The Prometheus text format's escaping of a label value, on the ground floor: the probe metrics
// (here) and the container endpoints (stats/exposition.ts, a floor up) both write label sets.

export function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}
