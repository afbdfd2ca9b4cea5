// Writes V8's code cache of each CommonJS file the bundle runs through src/base/cached-script.ts
// (dist/bundle/NAME.cache), from a warm-up of podrun's own commands in this process, so that each
// cache holds the functions those commands compile and not only each file's top level. No engine
// is needed: the engine client is warmed against an endpoint where nothing listens, the Docker
// API's and a CRI runtime's (gRPC's client with it).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { createRequire } from 'node:module';
import { criStandIn } from './cri-stand-in.mjs';
import { dockerStandIn } from './docker-stand-in.mjs';

const scripts = new Map();
globalThis[Symbol.for('podrun.code-cache.warm-up')] = scripts;
const dir = resolve('dist/bundle');
// As bin/podrun runs it: the one CommonJS file, through the same loader.
const { runCachedScript } = createRequire(import.meta.url)(join(dir, 'cached-script.cjs'));
const { main } = runCachedScript(dir, 'podrun').exports;
const sink = () => new Writable({ write: (_c, _e, done) => done() });
// What the warm-up's commands told on stderr, said when a warm-up apply that must succeed fails.
const told = [];
const io = { out: () => undefined, err: (s) => void told.push(s), stdout: sink(), stderr: sink(), isTTY: false };
// `podrun validate PATH...`'s own file (src/cli/validate-start.ts), as bin/podrun runs it: first, so that the
// YAML reader's and the validator's caches are made from the bundle's own loading of them, below.
const { validatePlain } = runCachedScript(dir, 'validate').exports;
for (let round = 0; round < 2; round++) {
  for (const paths of [['manifests', 'test/fixtures/static-pods', 'test/fixtures/kitchen-sink.yaml'], ['test/fixtures/invalid']])
    await validatePlain(paths, io);
}
const state = mkdtempSync(join(tmpdir(), 'podrun-code-cache-'));
const nowhere = `unix://${join(state, 'no-engine.sock')}`;
const nowhereCri = `unix://${join(state, 'no-runtime.sock')}`;
// A CRI apply of a new pod to its end, against a stand-in runtime (scripts/cri-stand-in.mjs).
const standInSocket = join(state, 'stand-in.sock');
const stopStandIn = await criStandIn(standInSocket);
// A Docker apply of the same pod to its end, against a stand-in engine (scripts/docker-stand-in.mjs).
const dockerSocket = join(state, 'docker-stand-in.sock');
const stopDocker = await dockerStandIn(dockerSocket);
const standInPod = join(state, 'warm-up-pod.yaml');
writeFileSync(
  standInPod,
  'apiVersion: v1\nkind: Pod\nmetadata: {name: warm-up, namespace: warm-up}\nspec:\n  containers:\n  - {name: c0, image: warm-up:1, command: [sh, -c, exec sleep 3600]}\n',
);
const runs = [
  ['version', '--client'],
  ['version'],
  ['--help'],
  ['apply', '--help'],
  ['get', 'pods', '--help'],
  ['validate', 'manifests', 'test/fixtures/static-pods', 'test/fixtures/kitchen-sink.yaml'],
  ['validate', 'test/fixtures/invalid'],
  ['run', '--print-config'],
  ['get', 'pods'],
  ['apply', '--dry-run', 'manifests'],
  // The engine client (dockerode, run on its first call): a cold apply's image inspects and
  // creates go through it, and get and apply's reads do not (plain GETs).
  ['pull', '-f', standInPod],
];
try {
  for (let round = 0; round < 2; round++) {
    for (const args of runs) await main(['node', 'podrun', '--state-dir', state, '--docker-host', nowhere, '--node-ip', '127.0.0.1', ...args], io);
    for (const args of [
      ['get', 'pods'],
      ['apply', '--dry-run', 'manifests'],
    ])
      await main(['node', 'podrun', '--state-dir', state, '--container-runtime-endpoint', nowhereCri, '--node-ip', '127.0.0.1', ...args], io);
    const cri = [
      '--state-dir',
      state,
      '--container-runtime-endpoint',
      `unix://${standInSocket}`,
      '--pod-logs-dir',
      join(state, 'pod-logs'),
      '--node-ip',
      '127.0.0.1',
    ];
    if ((await main(['node', 'podrun', ...cri, 'apply', '--no-wait', standInPod], io)) !== 0)
      throw new Error(`the warm-up apply on the stand-in CRI runtime failed: ${told.slice(-5).join('; ')}`);
    // A state dir of its own each round: the pod is new to it, as in a cold apply.
    const docker = ['--state-dir', join(state, `docker-${round}`), '--docker-host', `unix://${dockerSocket}`, '--node-ip', '127.0.0.1'];
    if ((await main(['node', 'podrun', ...docker, 'apply', '--no-wait', standInPod], io)) !== 0)
      throw new Error(`the warm-up apply on the stand-in Docker engine failed: ${told.slice(-5).join('; ')}`);
    // The pod just made, listed and inspected: get's views, which a list of nothing never runs.
    let listedPods = '';
    const getIo = { ...io, out: (l) => void (listedPods += `${l}\n`) };
    if ((await main(['node', 'podrun', ...docker, 'get', 'pods', '-n', 'warm-up'], getIo)) !== 0 || !/^warm-up\s+1\/1\s+Running\b/m.test(listedPods))
      throw new Error(`the warm-up get on the stand-in Docker engine did not list its pod: ${listedPods} ${told.slice(-5).join('; ')}`);
  }
} finally {
  stopStandIn();
  stopDocker();
  rmSync(state, { recursive: true, force: true });
}
for (const name of ['podrun', 'commander', 'js-yaml', 'dockerode', 'pod-validator', 'validate']) {
  const script = scripts.get(name);
  if (!script) throw new Error(`the warm-up did not load ${name}`);
  writeFileSync(join(dir, `${name}.cache`), script.createCachedData());
}
// The packages only some commands load (the agent's, --config's, URL sources'): a cache of what
// the warm-up ran of them, if it ran any; without one they compile as any script does.
for (const name of ['undici', 'ajv', 'pino', 'prom-client']) {
  const script = scripts.get(name);
  if (script) writeFileSync(join(dir, `${name}.cache`), script.createCachedData());
}
process.exit(0);
