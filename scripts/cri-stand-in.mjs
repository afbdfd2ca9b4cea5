// A stand-in CRI runtime for the build's warm-up (scripts/code-cache.mjs): it answers the calls a
// CRI `apply` of a new pod makes (Version, the two lists, ImageStatus, RunPodSandbox,
// CreateContainer, StartContainer) as a runtime would, so that the warm-up runs that apply to its
// end and the code caches hold what a real one compiles (gRPC's answer path, the sandbox's and the
// container's configs, the executor) instead of only a failed connection's. It makes nothing.
// A few lines of gRPC's server side on Node's HTTP/2: a length-prefixed answer and an OK status.
import { createServer } from 'node:http2';
import { rmSync } from 'node:fs';
import { resolve } from 'node:path';

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
  const table = await answers();
  const server = createServer();
  server.on('stream', (stream, headers) => {
    const answer = table[String(headers[':path']).replace(/^\/runtime\.v1\./, '')];
    stream.on('data', () => undefined);
    stream.on('error', () => undefined);
    if (!answer) {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12' }, { endStream: true });
      return;
    }
    const frame = Buffer.alloc(5 + answer.length);
    frame.writeUInt32BE(answer.length, 1);
    answer.copy(frame, 5);
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(frame);
  });
  rmSync(socket, { force: true });
  await new Promise((ok, fail) => server.once('error', fail).listen(socket, ok));
  return () => server.close();
}
