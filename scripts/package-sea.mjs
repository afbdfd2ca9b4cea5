// podrun as one file for boxes without Node: Node's single executable application
// (https://nodejs.org/api/single-executable-applications.html) made from the bundle that
// `npm run build` leaves in dist/bundle. Node 20 runs only a CommonJS script in a single
// executable, so the CLI's start() and the bundle's chunks are joined into one CommonJS file; the files
// podrun reads beside its code (schemas, package.json, the build's record) become its assets,
// read through src/base/package-file.ts. Output: dist/sea/podrun.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const OUT = 'dist/sea';
const ASSETS = ['package.json', 'dist/build-info.json', 'schemas/pod.schema.json', 'schemas/config.schema.json', 'schemas/manifest.schema.json'];
// The CommonJS files the bundle runs through src/base/cached-script.ts (commander, js-yaml, the
// engine client, the Pod validator), read from the assets there; their V8 caches are not taken.
// (podrun.cjs, its loader, version.cjs and validate.cjs are bin/podrun's, not the executable's.)
const BIN_ONLY = new Set(['podrun.cjs', 'cached-script.cjs', 'version.cjs', 'validate.cjs']);
ASSETS.push(
  ...readdirSync('dist/bundle')
    .filter((f) => f.endsWith('.cjs') && !BIN_ONLY.has(f))
    .sort()
    .map((f) => `dist/bundle/${f}`),
);
// The fuse Node's binary carries for single executables (the documented sentinel).
const FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

if (!existsSync('dist/bundle/podrun.mjs')) throw new Error('dist/bundle/podrun.mjs is missing: run npm run build first');
const postject = [process.env.POSTJECT, 'node_modules/.bin/postject'].find((p) => p && existsSync(p));
if (!postject) throw new Error('postject is not installed: npm install -D postject (or set POSTJECT to its path)');

rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });

// start() is what bin/podrun runs: the same exit and EPIPE handling. From the ES module bundle:
// bin/podrun's CommonJS file reads its code cache from beside it, where an executable has nothing.
await build({
  stdin: { contents: "import { start } from '../dist/bundle/podrun.mjs'; start();", resolveDir: 'bin', sourcefile: 'podrun', loader: 'js' },
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  outfile: `${OUT}/podrun.cjs`,
  // The bundle's chunks make their require() from import.meta.url, which a CommonJS file has not:
  // the executable's own path stands in (it is only used to load Node's built-in modules).
  define: { 'import.meta.url': '__podrunSeaUrl' },
  banner: { js: "var __podrunSeaUrl = require('node:url').pathToFileURL(process.execPath).href;" },
  logLevel: 'warning',
});

const config = {
  main: `${OUT}/podrun.cjs`,
  output: `${OUT}/podrun.blob`,
  disableExperimentalSEAWarning: true,
  // A code cache or snapshot would depend on the V8 run that made it: two builds would differ.
  useSnapshot: false,
  useCodeCache: false,
  assets: Object.fromEntries(ASSETS.map((a) => [a, a])),
};
writeFileSync(`${OUT}/sea-config.json`, `${JSON.stringify(config, null, 2)}\n`);
execFileSync(process.execPath, ['--experimental-sea-config', `${OUT}/sea-config.json`], { stdio: 'inherit' });

copyFileSync(process.execPath, `${OUT}/podrun`);
chmodSync(`${OUT}/podrun`, 0o755);
// This Node carries its debugging symbols (13 MB): a box running podrun has no use for them.
execFileSync('strip', ['--strip-unneeded', `${OUT}/podrun`]);
// postject (LIEF) warns about every .note section it leaves as it was: only its errors are shown.
const injected = spawnSync(postject, [`${OUT}/podrun`, 'NODE_SEA_BLOB', `${OUT}/podrun.blob`, '--sentinel-fuse', FUSE], { encoding: 'utf8' });
if (injected.status !== 0) throw new Error(`postject failed: ${injected.stderr}${injected.stdout}`);
process.stdout.write(`${OUT}/podrun\n`);
