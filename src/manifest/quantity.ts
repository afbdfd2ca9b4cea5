// Kubernetes resource quantities ("128Mi", "500m", "1.5", "2e3") as plain numbers.

const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };
const QUANTITY = /^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|([numkMGTPE]|[KMGTPE]i))?$/;

/** The quantity's value in base units (bytes, cores); throws on a malformed quantity. */
export function parseQuantity(q: string | number): number {
  if (typeof q === 'number') return q;
  const m = QUANTITY.exec(q.trim());
  if (!m) throw new Error(`invalid quantity ${JSON.stringify(q)}`);
  const base = Number(m[1]);
  if (m[2]) return base * 10 ** Number(m[2].slice(1));
  const suffix = m[3] ?? '';
  const mult = BINARY[suffix] ?? DECIMAL[suffix];
  if (mult === undefined) throw new Error(`invalid quantity suffix in ${JSON.stringify(q)}`);
  return base * mult;
}

/** CPU as integer millicores, rounding up as the kubelet does. */
export function milliCpu(q: string | number): number {
  return Math.ceil(parseQuantity(q) * 1000 - 1e-9);
}
