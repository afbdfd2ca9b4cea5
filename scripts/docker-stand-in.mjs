// A stand-in Docker engine for the build's warm-up (scripts/code-cache.mjs): it answers the calls
// a Docker `apply --no-wait` of a new pod makes (the list, engine info, the image inspect, the
// sandbox's and the container's create and start) as the engine would, so that the warm-up runs
// that apply to its end and the code caches hold what a real one compiles (the sandbox's and the
// container's create options, dockerode's request and answer path, the executor) instead of only a
// failed connection's; and it remembers what it was asked to make, so that a `get pods` after it
// lists and inspects that pod and runs its views (the status, the table). It makes nothing. Node's
// own HTTP server answers: its code is in no cache.
import { createServer } from 'node:http';

const id = (c) => c.repeat(64);
let made = 0;
/** What the stand-in made, by id: the create's body, and whether it was started and when. */
const containers = new Map();

/** A label filter of the list (`{"label":["k=v","k"]}`), as the engine applies it. */
function labelled(c, query) {
  const filters = JSON.parse(new URLSearchParams(query).get('filters') ?? '{}');
  return (filters.label ?? []).every((f) => {
    const [k, v] = f.split('=');
    return v === undefined ? k in c.body.Labels : c.body.Labels[k] === v;
  });
}

const NEVER = '0001-01-01T00:00:00Z';
/** A container's State as the engine says it: created, or running since its start. */
const state = (c) => ({
  Status: c.started ? 'running' : 'created',
  Running: Boolean(c.started),
  Paused: false,
  Restarting: false,
  OOMKilled: false,
  Dead: false,
  Pid: c.started ? 4242 : 0,
  ExitCode: 0,
  Error: '',
  StartedAt: c.started ?? NEVER,
  FinishedAt: NEVER,
});

function listed(c) {
  return {
    Id: c.id,
    Names: [`/${c.name}`],
    Image: c.body.Image,
    ImageID: `sha256:${id('c')}`,
    Command: '',
    Created: Math.floor(Date.parse(c.created) / 1000),
    Labels: c.body.Labels,
    State: state(c).Status,
    Status: c.started ? 'Up 1 second' : 'Created',
    HostConfig: { NetworkMode: c.body.HostConfig?.NetworkMode ?? 'default' },
    NetworkSettings: { Networks: {} },
    Mounts: [],
  };
}

function inspected(c) {
  return {
    Id: c.id,
    Name: `/${c.name}`,
    Created: c.created,
    Image: `sha256:${id('c')}`,
    State: state(c),
    RestartCount: 0,
    Config: { ...c.body, Labels: c.body.Labels, Env: c.body.Env ?? [] },
    HostConfig: c.body.HostConfig ?? {},
    NetworkSettings: { IPAddress: c.body.HostConfig?.NetworkMode === 'host' ? '' : '10.88.0.2', Networks: {} },
    Mounts: [],
  };
}

function answer(method, path, body) {
  const [route, query = ''] = path.split('?');
  if (method === 'GET' && route === '/containers/json') return [200, [...containers.values()].filter((c) => labelled(c, query)).map(listed)];
  if (method === 'GET' && route === '/info') return [200, { LoggingDriver: 'json-file', CgroupDriver: 'cgroupfs', CgroupVersion: '2' }];
  if (method === 'GET' && /^\/images\/[^?]+\/json$/.test(route))
    return [200, { Id: `sha256:${id('c')}`, RepoTags: ['warm-up:1'], Size: 1, Config: { User: '' } }];
  if (method === 'POST' && route === '/containers/create') {
    const c = {
      id: id('abcdef'[made++ % 6]),
      name: new URLSearchParams(query).get('name') ?? '',
      body: JSON.parse(body || '{}'),
      created: new Date().toISOString(),
    };
    c.body.Labels ??= {};
    containers.set(c.id, c);
    return [201, { Id: c.id, Warnings: [] }];
  }
  const one = /^\/containers\/([0-9a-f]{64})\/(start|json)$/.exec(route);
  const c = one && containers.get(one[1]);
  if (method === 'POST' && c && one[2] === 'start') {
    c.started = new Date().toISOString();
    return [204, undefined];
  }
  if (method === 'GET' && c && one[2] === 'json') return [200, inspected(c)];
  return [404, { message: `the warm-up's stand-in engine has no answer to ${method} ${path}` }];
}

/** Listens on `socket` until the returned function is called. */
export function dockerStandIn(socket) {
  const server = createServer((req, res) => {
    let received = '';
    req.on('data', (c) => (received += c));
    req.on('end', () => {
      const [status, body] = answer(req.method ?? 'GET', (req.url ?? '/').replace(/^\/v[0-9.]+\//, '/'), received);
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
