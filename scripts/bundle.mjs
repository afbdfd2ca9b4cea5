// Bundles the CLI for bin/podrun: start-up is mostly module loading, and a few files load faster
// than hundreds. The Docker engine client's gRPC, protobuf, ssh and tar code (BuildKit
// sessions, ssh:// engines, build contexts) is never used by podrun, which speaks to engines over unix and tcp
// sockets only, so it is left out: an inert stand-in takes its place. (podrun's CRI client speaks
// gRPC on Node's own HTTP/2: src/runtime/cri/grpc-h2.ts.)
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import standaloneCode from 'ajv/dist/standalone/index.js';
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

// tar-fs packs build contexts and archives (docker build, putArchive): podrun does neither.
const UNUSED = /^(@grpc\/grpc-js|@grpc\/proto-loader|protobufjs|ssh2|cpu-features|tar-fs)$/;

const leaveOut = {
  name: 'leave-out-unused',
  setup(b) {
    b.onResolve({ filter: UNUSED }, (a) => ({ path: a.path, namespace: 'unused' }));
    // docker-modem's streams, from Node itself (readable-stream is a copy of Node's stream module
    // for old Nodes and browsers): 80 KiB less to parse whenever the engine client loads.
    b.onResolve({ filter: /^readable-stream$/ }, () => ({ path: 'node:stream', external: true }));
    // docker-modem loads Node's TLS stack at start for https:// engines, which podrun does not
    // speak to: loaded on the first such request instead (it is most of the engine client's load).
    b.onResolve({ filter: /^https$/ }, (a) => (/docker-modem/.test(a.importer) ? { path: 'https', namespace: 'lazy-https' } : undefined));
    // commander spawns only for executable subcommands, which podrun has none of: Node's process
    // spawning code is loaded if that ever happens, not at every start.
    b.onResolve({ filter: /^node:child_process$/ }, (a) =>
      /commander/.test(a.importer) ? { path: 'child_process', namespace: 'lazy-child-process' } : undefined,
    );
    // The engine client's zlib (build contexts) and crypto (BuildKit sessions) are Node modules
    // podrun's calls never reach: loaded on first use, not whenever the engine client loads.
    b.onResolve({ filter: /^(zlib|crypto)$/ }, (a) =>
      /[\\/](dockerode|docker-modem)[\\/]/.test(a.importer) ? { path: a.path, namespace: 'lazy-builtin' } : undefined,
    );
    // Its HTTP client too: podrun reads the engine (the list, inspects) over a plain socket
    // (src/runtime/docker/plain-get.ts), so a command that only reads never loads Node's HTTP stack.
    b.onResolve({ filter: /^http$/ }, (a) => (/docker-modem[\\/]lib[\\/]/.test(a.importer) ? { path: a.path, namespace: 'lazy-builtin' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, (a) => ({
      contents: `module.exports = new Proxy({}, { get: (_t, k) => require('node:${a.path}')[k] });`,
      loader: 'js',
    }));
    // The debug package (docker-modem's log) asks whether stderr is a terminal when each logger
    // is made, which makes Node's stderr stream at every start: with DEBUG unset, where nothing
    // is logged, a logger that logs nothing stands in.
    b.onResolve({ filter: /^debug$/ }, (a) =>
      /[\\/](dockerode|docker-modem)[\\/]/.test(a.importer)
        ? { path: require.resolve('debug', { paths: [a.resolveDir] }), namespace: 'lazy-debug' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'lazy-debug' }, (a) => ({
      contents: `const off = () => Object.assign(() => undefined, { enabled: false, extend: off }); module.exports = process.env.DEBUG ? require(${JSON.stringify(a.path)}) : Object.assign(off, { enabled: () => false });`,
      loader: 'js',
      resolveDir: process.cwd(),
    }));
    b.onLoad({ filter: /.*/, namespace: 'lazy-child-process' }, () => ({
      contents: "module.exports = { spawn: (...a) => require('node:child_process').spawn(...a) };",
      loader: 'js',
    }));
    b.onLoad({ filter: /.*/, namespace: 'lazy-https' }, () => ({
      contents:
        "module.exports = { request: (...a) => require('node:https').request(...a), get: (...a) => require('node:https').get(...a), get Agent() { return require('node:https').Agent; }, get globalAgent() { return require('node:https').globalAgent; } };",
      loader: 'js',
    }));
    // Over a unix socket there is no TLS, yet Node's HTTP agent works a TLS server name out of the
    // Host header of every request, which compiles Node's IPv6 pattern on the first one (2-3 ms of
    // each get and apply in a profile). An empty server name is Node's own "none".
    b.onLoad({ filter: /docker-modem[\\/]lib[\\/]modem\.js$/ }, (a) => {
      const text = readFileSync(a.path, 'utf8');
      const at = 'optionsf.socketPath = socketPath;';
      if (!text.includes(at)) throw new Error(`docker-modem changed: no "${at}" in ${a.path}`);
      // It also formats every request with util.inspect for its debug log, on or off (2-3 ms of a
      // get's 21 requests): formatted only when DEBUG=modem asks for the log.
      const sending = "debug('Sending: %s', util.inspect(";
      if (!text.includes(sending)) throw new Error(`docker-modem changed: no "${sending}" in ${a.path}`);
      return { contents: text.replace(at, `${at} optionsf.servername = '';`).replace(sending, `if (debug.enabled) ${sending}`), loader: 'js' };
    });
    // Loaded at import time by dockerode and docker-modem (protobufjs even parses a schema then),
    // so the stand-in must survive any property access, call or construction.
    b.onLoad({ filter: /.*/, namespace: 'unused' }, () => ({
      contents: 'const inert = new Proxy(function () {}, { get: () => inert, apply: () => inert, construct: () => inert }); module.exports = inert;',
      loader: 'js',
    }));
  },
};

// The CommonJS code that commands compile at every start, each run as one CommonJS file with V8's
// code cache beside it (src/base/cached-script.ts; the cache is written by scripts/code-cache.mjs
// from a warm-up), as Node 20 keeps no compile cache for modules: the argument parser, the YAML
// parser, the engine client, and the Pod schema's validator, compiled from the schema now rather
// than at every start (src/manifest/pod-validator.ts compiles the same schema with the same
// options on first use when run unbundled, as in tests).
const ajv = new Ajv({ allErrors: true, strict: false, verbose: true, code: { source: true } });
const validatorSource = standaloneCode.default(ajv, ajv.compile(JSON.parse(readFileSync('schemas/pod.schema.json', 'utf8'))));
const require = createRequire(import.meta.url);
const CACHED_PACKAGES = ['commander', 'js-yaml', 'dockerode'];
// Packages only some commands load (URL sources, --config, the agent's log and metrics), each a
// file of its own so that no start reads them for nothing: undici alone was 46 % of podrun.cjs.
const APART_PACKAGES = ['undici', 'ajv', 'pino', 'prom-client'];
// A package's file in dist/bundle: a scoped name flat (@scope/name → scope-name.cjs).
const fileOf = (pkg) => pkg.replace(/^@/, '').replace(/\//g, '-');
const exportsOf = (pkg) => Object.keys(require(pkg)).filter((n) => n !== 'default' && /^[A-Za-z_$][\w$]*$/.test(n));
const cachedScript = JSON.stringify(`${process.cwd()}/src/base/cached-script.ts`);
const head = `import { fileURLToPath } from 'node:url'; import { runCachedScript } from ${cachedScript}; const here = fileURLToPath(new URL('.', import.meta.url));`;
const codeCached = {
  name: 'code-cached',
  setup(b) {
    b.onResolve({ filter: /\/pod-validator\.js$/ }, () => ({ path: 'pod-validator', namespace: 'code-cached' }));
    b.onResolve({ filter: /\/yaml-lib\.js$/ }, () => ({ path: 'yaml-lib', namespace: 'code-cached' }));
    b.onResolve({ filter: new RegExp(`^(${[...CACHED_PACKAGES, ...APART_PACKAGES].join('|')})$`) }, (a) => ({ path: a.path, namespace: 'code-cached' }));
    b.onLoad({ filter: /.*/, namespace: 'code-cached' }, (a) => ({
      contents:
        a.path === 'pod-validator'
          ? // Loaded on first use: a command that validates nothing does not pay for it.
            `${head} let validate; export function podValidator() { return (validate ??= runCachedScript(here, 'pod-validator').exports); }`
          : a.path === 'yaml-lib'
            ? // js-yaml for src/manifest/yaml-lib.ts, run on first use: an apply of known files parses nothing.
              `${head} let y; export function yamlLib() { return (y ??= runCachedScript(here, 'js-yaml').exports); }`
            : a.path === 'dockerode'
              ? // Run when the first client is made (src/runtime/docker/engine.ts makes it on its first call):
                // a command that only reads the engine over a plain socket never runs it. Only the client's
                // constructor is podrun's to import; a named export would fail the build here, not lie.
                `${head} let D; export default function Docker(...a) { return new (D ??= runCachedScript(here, 'dockerode').exports)(...a); }`
              : `${head} const m = runCachedScript(here, ${JSON.stringify(fileOf(a.path))}).exports; export default m;\n${exportsOf(a.path)
                  .map((n) => `export const ${n} = m.${n};`)
                  .join('\n')}`,
      loader: 'js',
      resolveDir: process.cwd(),
    }));
  },
};

// Chunk names carry content hashes: without this, every build would leave the last one's behind.
rmSync('dist/bundle', { recursive: true, force: true });
const built = await build({
  entryPoints: ['src/cli/main.ts'],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Each command's modules in chunks of their own, loaded when it runs (as main.ts imports them).
  // Two levels below the package root, as dist/cli is, so import.meta.url-relative paths hold.
  splitting: true,
  outdir: 'dist/bundle',
  entryNames: 'podrun',
  chunkNames: '[name]-[hash]',
  outExtension: { '.js': '.mjs' },
  plugins: [leaveOut, codeCached],
  // CommonJS dependencies call require() for Node's own modules. Made on first use: most chunks
  // never call it, and making one for each of them is a measurable part of a start.
  banner: {
    js: "import { createRequire as __podrunRequire } from 'node:module'; let __podrunReq; const require = new Proxy(function () {}, { apply: (_t, _s, a) => (__podrunReq ??= __podrunRequire(import.meta.url))(...a), get: (_t, k) => (__podrunReq ??= __podrunRequire(import.meta.url))[k] });",
  },
  logLevel: 'warning',
  // Fewer bytes to read and parse at every start; names are kept, so stack traces still read.
  minifyWhitespace: true,
  minifySyntax: true,
  // Which module went into which chunk, for the start-up profile in docs/benchmarks.md.
  metafile: Boolean(process.env.BUNDLE_METAFILE),
});

if (process.env.BUNDLE_METAFILE) writeFileSync(process.env.BUNDLE_METAFILE, JSON.stringify(built.metafile));

// The CommonJS files the code-cached modules run, each whole (no require of a package), then their
// caches from a warm-up in a plain `node`, as bin/podrun runs (V8 takes a cache only under the
// flags it was made with).
// js-yaml from its ES module build: its CommonJS build is transpiled for old engines, and object
// spreads through helpers make its parsing slower.
const entryOf = (p) => (p === 'js-yaml' ? `export * from '${p}';` : `module.exports = require('${p}');`);
for (const [name, contents] of [...[...CACHED_PACKAGES, ...APART_PACKAGES].map((p) => [fileOf(p), entryOf(p)]), ['pod-validator', validatorSource]]) {
  await build({
    stdin: { contents, resolveDir: process.cwd(), loader: 'js' },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    minifyWhitespace: true,
    minifySyntax: true,
    plugins: [leaveOut],
    outfile: `dist/bundle/${name}.cjs`,
    logLevel: 'warning',
  });
}
// What bin/podrun runs: the bundle above joined into one CommonJS file, so that a start passes
// through no ES module loader (Node 20 reads, compiles and links each ES module chunk on its own,
// with no cache), run with one V8 code cache; a command's modules still run only when it uses
// them (esbuild keeps each dynamic import a function called on first use). The ES module bundle
// stays what the single executable (scripts/package-sea.mjs) and the code's tests start from.
await build({
  entryPoints: ['dist/bundle/podrun.mjs'],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  outfile: 'dist/bundle/podrun.cjs',
  // import.meta.url-relative paths (the package's files, the code-cached scripts) as from podrun.mjs.
  define: { 'import.meta.url': '__podrunUrl' },
  // A script run by node:vm has no dynamic import (Node's modules loaded on use, as `node:stream`
  // by completion): each becomes a require, which the script has.
  supported: { 'dynamic-import': false },
  banner: { js: "var __podrunUrl = require('node:url').pathToFileURL(require('node:path').join(__dirname, 'podrun.mjs')).href;" },
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});
// A command's own start (bin/podrun runs it instead of the whole bundle for its plain words): one
// CommonJS file, its import.meta.url its own path.
const startFile = (entry, outfile, more = {}) =>
  build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    outfile,
    define: { 'import.meta.url': '__podrunUrl' },
    banner: { js: "var __podrunUrl = require('node:url').pathToFileURL(__filename).href;" },
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: 'warning',
    ...more,
  });
// `podrun version` (src/cli/version-start.ts): the plain `version` and `version --client`.
await startFile('src/cli/version-start.ts', 'dist/bundle/version.cjs');
// `podrun validate PATH...` (src/cli/validate-start.ts), with a code cache of its own; the YAML
// reader and the Pod validator are the same code-cached files the bundle runs. Run by node:vm as
// podrun.cjs is (a URL's client is loaded on use): each dynamic import a require.
await startFile('src/cli/validate-start.ts', 'dist/bundle/validate.cjs', { plugins: [leaveOut, codeCached], supported: { 'dynamic-import': false } });
// The loader bin/podrun (CommonJS) runs it with.
await build({
  entryPoints: ['src/base/cached-script.ts'],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  outfile: 'dist/bundle/cached-script.cjs',
  logLevel: 'warning',
});
execFileSync(process.execPath, ['scripts/code-cache.mjs'], { stdio: 'inherit' });
