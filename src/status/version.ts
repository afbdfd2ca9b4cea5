import { readFileSync } from 'node:fs';

let cached: string | undefined;

/** podrun's version, from its package.json (two levels up, from src/status or dist/bundle alike). */
export function podrunVersion(): string {
  cached ??= (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  return cached;
}
