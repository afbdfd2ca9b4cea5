/**
 * A hand-written Node tool for what `podrun apply --no-wait` does on a CRI runtime, timed as a whole
 * process (its start, its code's loading, `node:http2`, the connection) where the strict floor counts
 * `node -e 0` and the floor's calls alone. The bench bundles it into one CommonJS file first, as
 * podrun's own code is, so module resolution costs it no more than it costs podrun.
 *
 *   node cri-tool.cjs ENDPOINT DIR LABEL LOGDIR IMAGE [BUNDLE]
 *     Reads every .yaml file in DIR and makes the floor's calls for each (bench/cri-floor-calls.ts).
 *     With BUNDLE (podrun's dist/bundle), each file is first parsed and checked with podrun's own
 *     YAML reader and Pod schema validator, from their code caches as podrun loads them: the least a
 *     tool that checks its input before it changes anything can take.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { CriClient } from '../src/runtime/cri/client.js';
import { coldCalls } from './cri-floor-calls.js';

interface CachedScripts {
  runCachedScript(dir: string, name: string): { exports: unknown };
}

function check(bundle: string, texts: string[]): void {
  const { runCachedScript } = createRequire(join(bundle, 'cached-script.cjs'))(join(bundle, 'cached-script.cjs')) as CachedScripts;
  const yaml = runCachedScript(bundle, 'js-yaml').exports as { load(text: string): unknown };
  const validate = runCachedScript(bundle, 'pod-validator').exports as ((doc: unknown) => boolean) & { errors?: unknown };
  for (const text of texts) if (!validate(yaml.load(text))) throw new Error(`invalid pod: ${JSON.stringify(validate.errors)}`);
}

async function main(): Promise<void> {
  const [endpoint, dir, label, logDir, image, bundle] = process.argv.slice(2) as [string, string, string, string, string, string?];
  const client = new CriClient({ endpoint, timeoutMs: 60_000 });
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
  const texts = files.map((f) => readFileSync(join(dir, f), 'utf8'));
  if (bundle) check(bundle, texts);
  const value = label.split('=')[1] ?? '';
  await coldCalls(
    client,
    files.map((_, i) => `tool-${value}-${i}`),
    label,
    logDir,
    image,
  );
  client.close();
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
