// A stand-in CRI runtime for the build's warm-up (scripts/code-cache.mjs): it answers the calls a
// CRI `apply` of a new pod makes (Version, the two lists, ImageStatus, RunPodSandbox,
// CreateContainer, StartContainer) as a runtime would, so that the warm-up runs that apply to its
// end and the code caches hold what a real one compiles (gRPC's answer path, the sandbox's and the
// container's configs, the executor) instead of only a failed connection's. It makes nothing.
// gRPC's server is node_modules' own copy, not the bundle's: its functions stay out of the cache.
import { createRequire } from 'node:module';
import { resolve } from 'node:path';

const require = createRequire(import.meta.url);
const { Server, ServerCredentials } = require('@grpc/grpc-js');

/** runtime.v1's answers, written with podrun's own codecs (the tsc build in dist/). */
async function answers() {
  const M = await import(resolve('dist/runtime/cri/messages.js'));
  const id = (c) => c.repeat(64);
  return {
    'RuntimeService/Version': M.codec(M.VersionResponse).serialize({ version: '0.1.0', runtimeName: 'warm-up', runtimeVersion: '1', runtimeApiVersion: 'v1' }),
    'RuntimeService/ListPodSandbox': Buffer.alloc(0),
    'RuntimeService/ListContainers': Buffer.alloc(0),
    'ImageService/ImageStatus': M.codec(M.ImageStatusResponse).serialize({ image: { id: `sha256:${id('c')}`, repoTags: ['warm-up:1'], size: 1 } }),
    'RuntimeService/RunPodSandbox': M.codec(M.RunPodSandboxResponse).serialize({ podSandboxId: id('a') }),
    'RuntimeService/CreateContainer': M.codec(M.CreateContainerResponse).serialize({ containerId: id('b') }),
    'RuntimeService/StartContainer': Buffer.alloc(0),
  };
}

/** Listens on `socket` until the returned function is called. */
export async function criStandIn(socket) {
  const server = new Server();
  const raw = (b) => b;
  for (const [method, answer] of Object.entries(await answers()))
    server.register(`/runtime.v1.${method}`, (_call, done) => done(null, answer), raw, raw, 'unary');
  await new Promise((ok, fail) => server.bindAsync(`unix://${socket}`, ServerCredentials.createInsecure(), (err) => (err ? fail(err) : ok())));
  return () => server.forceShutdown();
}
