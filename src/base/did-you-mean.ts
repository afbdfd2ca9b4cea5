/**
 * The one word among `candidates` a mistyped `word` most likely meant (`comand` → command,
 * `memroy` → memory, `aply` → apply), or undefined when none is close enough to say so.
 * Close: a Damerau-Levenshtein distance (a swap of two neighbours counts one) of at most a third
 * of the word, and at least 1; a difference of case alone always is. A word of three letters or
 * fewer is too short to guess from (`gpu` is not a typo of `cpu`).
 */
export function didYouMean(word: string, candidates: Iterable<string>): string | undefined {
  const limit = word.length <= 3 ? 0 : Math.max(1, Math.floor(word.length / 3));
  let best: { word: string; d: number } | undefined;
  for (const c of candidates) {
    if (c === word) continue;
    const d = c.toLowerCase() === word.toLowerCase() ? 0 : distance(word, c);
    if (d <= limit && (!best || d < best.d)) best = { word: c, d };
  }
  return best?.word;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
export function distance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 8) return Math.abs(a.length - b.length);
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}
