import { connect, createServer, type Server } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The requests a podrun process made to the Docker engine, read by a proxy on a unix socket of its
// own (DOCKER_HOST) in front of the engine's, and how many round trips they took one after
// another: as grpc-trace.ts counts CRI calls, a request's round is one more than the deepest
// request answered before it began, so requests made together share a round.

export interface DockerCall {
  /** `POST /containers/create`, without the API version, the query or an id. */
  call: string;
  round: number;
}

const ID = /\/[0-9a-f]{64}(?=\/|$)/;

/** How late the proxy hands podrun each answer (see dockerTrace). */
const ANSWER_DELAY_MS = 50;

/** A request line shortened to what it asks: the method and the path, the API version, the query and ids left out. */
function callOf(method: string, path: string): string {
  const bare = (path.split('?')[0] ?? '').replace(/^\/v[0-9.]+(?=\/)/, '').replace(ID, '/{id}');
  return `${method} ${decodeURIComponent(bare)}`;
}

export interface DockerTrace {
  /** unix:///… for DOCKER_HOST. */
  host: string;
  calls: () => DockerCall[];
  close: () => Promise<void>;
}

/** A proxy to `engine` (a socket path) that notes every request and when its answer began. */
export async function dockerTrace(engine = '/var/run/docker.sock'): Promise<DockerTrace> {
  const dir = mkdtempSync(join(tmpdir(), 'podrun-docker-trace-'));
  const path = join(dir, 'docker.sock');
  const calls: (DockerCall & { answered: boolean })[] = [];
  const server: Server = createServer((client) => {
    const upstream = connect(engine);
    // Requests on this connection not answered yet, oldest first (HTTP/1.1 answers in order).
    const open: (DockerCall & { answered: boolean })[] = [];
    client.on('data', (chunk: Buffer) => {
      for (const m of chunk.toString('latin1').matchAll(/(?:^|\r\n)(GET|POST|PUT|DELETE|HEAD) (\S+) HTTP\/1\.[01]\r\n/g)) {
        let round = 1;
        for (const c of calls) if (c.answered) round = Math.max(round, c.round + 1);
        const c = { call: callOf(m[1]!, m[2]!), round, answered: false };
        calls.push(c);
        open.push(c);
      }
      upstream.write(chunk);
    });
    // Each answer reaches podrun ANSWER_DELAY_MS late, and counts as answered from then: a request
    // podrun sends beside another, without waiting for it, leaves before it could have read that
    // one's answer even when the scheduler holds it a few milliseconds between the two writes (on a
    // loaded machine the engine's answer to GET /info came first, and the create read a round late).
    upstream.on('data', (chunk: Buffer) => {
      setTimeout(() => {
        for (const _ of chunk.toString('latin1').matchAll(/(?:^|\r\n)HTTP\/1\.[01] \d{3} /g)) {
          const c = open.shift();
          if (c) c.answered = true;
        }
        client.write(chunk);
      }, ANSWER_DELAY_MS);
    });
    client.on('end', () => upstream.end());
    upstream.on('end', () => setTimeout(() => client.end(), ANSWER_DELAY_MS));
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return {
    host: `unix://${path}`,
    calls: () => calls.map(({ call, round }) => ({ call, round })),
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `GET /containers/json; POST /containers/create ‖ GET /info`: the calls round by round, each round's sorted. */
export function dockerRounds(calls: DockerCall[]): string {
  const by = new Map<number, string[]>();
  for (const c of calls) by.set(c.round, [...(by.get(c.round) ?? []), c.call]);
  return [...by.keys()]
    .sort((a, b) => a - b)
    .map((r) => by.get(r)!.sort().join(' ‖ '))
    .join('; ');
}
