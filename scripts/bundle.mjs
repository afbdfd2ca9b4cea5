// Bundles the CLI for bin/podrun: start-up is mostly module loading, and a few files load faster
// than hundreds. The Docker engine client's gRPC, protobuf, ssh and tar code (BuildKit
// sessions, ssh:// engines, build contexts) is never used by podrun, which speaks to engines over unix and tcp
// sockets only, so it is left out: an inert stand-in takes its place. (gRPC itself is bundled
// for podrun's CRI client, in the chunk loaded only on a CRI runtime.)
import { readFileSync, rmSync } from 'node:fs';
import { Ajv } from 'ajv';
import standaloneCode from 'ajv/dist/standalone/index.js';
import { build } from 'esbuild';

// tar-fs packs build contexts and archives (docker build, putArchive): podrun does neither.
const UNUSED = /^(@grpc\/grpc-js|@grpc\/proto-loader|protobufjs|ssh2|cpu-features|tar-fs)$/;

const leaveOut = {
  name: 'leave-out-unused',
  setup(b) {
    // podrun's own CRI client (src/runtime/cri) needs gRPC: only the dependencies' imports of it
    // are left out. It is loaded in a chunk of its own, only with --container-runtime-endpoint.
    b.onResolve({ filter: UNUSED }, (a) => (a.path === '@grpc/grpc-js' && !a.importer.includes('/node_modules/') ? undefined : { path: a.path, namespace: 'unused' }));
    // Loaded at import time by dockerode and docker-modem (protobufjs even parses a schema then),
    // so the stand-in must survive any property access, call or construction.
    b.onLoad({ filter: /.*/, namespace: 'unused' }, () => ({
      contents: 'const inert = new Proxy(function () {}, { get: () => inert, apply: () => inert, construct: () => inert }); module.exports = inert;',
      loader: 'js',
    }));
  },
};

// The Pod schema's validator, compiled now rather than at every start (src/manifest/pod-validator.ts
// compiles the same schema with the same options on first use when run unbundled, as in tests).
const ajv = new Ajv({ allErrors: true, strict: false, verbose: true, code: { source: true, esm: true } });
const validate = ajv.compile(JSON.parse(readFileSync('schemas/pod.schema.json', 'utf8')));
const source = standaloneCode.default(ajv, validate);
const entry = /export default (\w+)/.exec(source)?.[1];
if (!entry) throw new Error('ajv standalone code has no default export');
const precompiled = {
  name: 'precompiled-pod-validator',
  setup(b) {
    b.onResolve({ filter: /\/pod-validator\.js$/ }, (a) => ({ path: a.path, namespace: 'precompiled' }));
    b.onLoad({ filter: /.*/, namespace: 'precompiled' }, () => ({
      contents: `${source}\nexport function podValidator() { return ${entry}; }\n`,
      loader: 'js',
      resolveDir: process.cwd(),
    }));
  },
};

// Chunk names carry content hashes: without this, every build would leave the last one's behind.
rmSync('dist/bundle', { recursive: true, force: true });
await build({
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
  plugins: [leaveOut, precompiled],
  // CommonJS dependencies call require() for Node's own modules.
  banner: { js: "import { createRequire as __podrunRequire } from 'node:module'; const require = __podrunRequire(import.meta.url);" },
  logLevel: 'warning',
});
