// A stand-in Docker engine for the build's warm-up (scripts/code-cache.mjs): it answers the calls
// a Docker `apply --no-wait` of a new pod makes (the list, engine info, the image inspect, the
// sandbox's and the container's create and start) as the engine would, so that the warm-up runs
// that apply to its end and the code caches hold what a real one compiles (the sandbox's and the
// container's create options, dockerode's request and answer path, the executor) instead of only a
// failed connection's. It makes nothing. Node's own HTTP server answers: its code is in no cache.
import { createServer } from 'node:http';

const id = (c) => c.repeat(64);
let made = 0;

function answer(method, path) {
  if (method === 'GET' && path.startsWith('/containers/json')) return [200, []];
  if (method === 'GET' && path === '/info') return [200, { LoggingDriver: 'json-file', CgroupDriver: 'cgroupfs', CgroupVersion: '2' }];
  if (method === 'GET' && /^\/images\/[^?]+\/json$/.test(path))
    return [200, { Id: `sha256:${id('c')}`, RepoTags: ['warm-up:1'], Size: 1, Config: { User: '' } }];
  if (method === 'POST' && path.startsWith('/containers/create')) return [201, { Id: id(made++ % 2 ? 'b' : 'a'), Warnings: [] }];
  if (method === 'POST' && /^\/containers\/[0-9a-f]{64}\/start$/.test(path)) return [204, undefined];
  return [404, { message: `the warm-up's stand-in engine has no answer to ${method} ${path}` }];
}

/** Listens on `socket` until the returned function is called. */
export function dockerStandIn(socket) {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const [status, body] = answer(req.method ?? 'GET', (req.url ?? '/').replace(/^\/v[0-9.]+\//, '/'));
      if (body === undefined) return void res.writeHead(status).end();
      const text = JSON.stringify(body);
      res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => resolve(() => server.close()));
  });
}
