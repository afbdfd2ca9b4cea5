import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { answeringEndpoints } from '../fakes/answering-endpoint.js';
import { plainTarget } from '../../src/base/plain-get.js';
import { engineError, isNotFound, plainReads } from '../../src/runtime/docker/engine.js';
import { EngineUnavailableError, type EngineRequestError } from '../../src/runtime/engine-errors.js';
import { DockerEngine } from '../../src/runtime/docker/docker-engine.js';

// The runtime's list and inspects go over a bare socket: what they accept from whatever answers there,
// and that their failures read as dockerode's did (a 404 is "not found", a dead socket "unavailable").

const sockets = answeringEndpoints('podrun-pg-');
const endpoint = sockets.endpoint;
afterEach(() => sockets.close());

const reads = (url: string, timeoutMs = 5000) => {
  const r = plainReads(url, timeoutMs);
  if (!r) throw new Error('no plain reads');
  return r;
};

describe('plain reads of the engine', () => {
  it('lists with the label filters and inspects by id, in HTTP/1.0', async () => {
    const asked: string[] = [];
    const url = await endpoint((s, request) => {
      asked.push(request.split('\r\n')[0] ?? '');
      const body = request.startsWith('GET /containers/json') ? '[{"Id":"a","Labels":{"x":"ü"}}]' : '{"Id":"a","State":{"Running":true}}';
      s.end(`HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n${body}`);
    });
    expect(await reads(url).list(['io.podrun.instance=abc', 'io.podrun.managed-by=podrun'])).toEqual([{ Id: 'a', Labels: { x: 'ü' } }]);
    expect(await reads(url).inspect('a/../b')).toEqual({ Id: 'a', State: { Running: true } });
    const filters = encodeURIComponent(JSON.stringify({ label: ['io.podrun.instance=abc', 'io.podrun.managed-by=podrun'] }));
    expect(asked).toEqual([`GET /containers/json?all=true&filters=${filters} HTTP/1.0`, 'GET /containers/a%2F..%2Fb/json HTTP/1.0']);
  });

  it('reads a chunked answer, counting chunk sizes in bytes', async () => {
    const json = Buffer.from('[{"Id":"ünï"}]');
    const url = await endpoint((s) => {
      s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
      s.write(Buffer.concat([Buffer.from('5\r\n'), json.subarray(0, 5), Buffer.from('\r\n')]));
      s.end(Buffer.concat([Buffer.from(`${(json.length - 5).toString(16)}\r\n`), json.subarray(5), Buffer.from('\r\n0\r\n\r\n')]));
    });
    expect(await reads(url).list([])).toEqual([{ Id: 'ünï' }]);
  });

  it("fails as dockerode did: the engine's 404 is not found, with its message", async () => {
    const url = await endpoint((s) => s.end('HTTP/1.0 404 Not Found\r\n\r\n{"message":"No such container: gone"}'));
    const err = engineError(
      await reads(url)
        .inspect('gone')
        .catch((e: unknown) => e),
      'inspect container',
      url,
    );
    expect(isNotFound(err)).toBe(true);
    expect(err.message).toBe('inspect container: No such container: gone');
  });

  it('names Podman in its errors once an answer says Libpod, the Docker engine before', async () => {
    const url = await endpoint((s) => s.end('HTTP/1.0 500 Internal Server Error\r\nLibpod-API-Version: 4.3.1\r\n\r\n{"message":"boom"}'));
    const rt = new DockerEngine({ stateDir: '/nonexistent/podrun-plain-get-test', pauseImage: 'pause', host: url });
    const failed = (await rt.listContainers().catch((e: unknown) => e)) as EngineRequestError;
    expect(failed).toMatchObject({ kind: 'Internal', engine: 'Podman', message: 'list containers: boom' });
    const docker = await endpoint((s) => s.end('HTTP/1.0 500 Internal Server Error\r\n\r\n{"message":"boom"}'));
    const other = new DockerEngine({ stateDir: '/nonexistent/podrun-plain-get-test', pauseImage: 'pause', host: docker });
    expect(await other.listContainers().catch((e: unknown) => e)).toMatchObject({ engine: 'the Docker engine' });
  });

  it('refuses what is not an answer: no header end, a body that is not JSON, a list that is not a list', async () => {
    const cut = await endpoint((s) => s.end('HTTP/1.0 200 OK\r\nContent-Type: application/json'));
    await expect(reads(cut).inspect('a')).rejects.toThrow(/unexpected answer/);
    const html = await endpoint((s) => s.end('HTTP/1.0 200 OK\r\n\r\n<html>'));
    await expect(reads(html).inspect('a')).rejects.toThrow(SyntaxError);
    const notList = await endpoint((s) => s.end('HTTP/1.0 200 OK\r\n\r\n{"Id":"a"}'));
    await expect(reads(notList).list([])).rejects.toThrow(/not a list/);
    const badChunk = await endpoint((s) => s.end('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffff\r\n[]\r\n0\r\n\r\n'));
    await expect(reads(badChunk).list([])).rejects.toThrow(/unexpected answer/);
  });

  it('stops reading an endpoint that never answers, and says the engine is unavailable when nothing listens', async () => {
    const silent = await endpoint(() => undefined);
    const timedOut = await reads(silent, 200)
      .inspect('a')
      .catch((e: unknown) => e);
    expect(engineError(timedOut, 'inspect container', silent)).toBeInstanceOf(EngineUnavailableError);
    const nowhere = `unix://${join(tmpdir(), 'podrun-no-such-engine.sock')}`;
    const refused = await reads(nowhere)
      .list([])
      .catch((e: unknown) => e);
    expect(engineError(refused, 'list containers', nowhere)).toBeInstanceOf(EngineUnavailableError);
  });

  it('speaks plain HTTP to unix sockets and tcp://, and leaves TLS endpoints to dockerode', () => {
    expect(plainTarget('unix:///run/docker.sock')).toEqual({ path: '/run/docker.sock' });
    expect(plainTarget('/run/podman.sock')).toEqual({ path: '/run/podman.sock' });
    expect(plainTarget('tcp://127.0.0.1:2375')).toEqual({ host: '127.0.0.1', port: 2375 });
    expect(plainTarget('tcp://[::1]')).toEqual({ host: '::1', port: 2375 });
    expect(plainTarget('https://127.0.0.1:2376')).toBeUndefined();
    expect(plainReads('https://127.0.0.1:2376', 1000)).toBeUndefined();
  });
});
