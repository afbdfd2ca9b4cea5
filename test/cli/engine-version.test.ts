import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { answeringEndpoints } from '../fakes/answering-endpoint.js';
import { engineVersion } from '../../src/cli/engine-version.js';

// `podrun version` asks the engine over a bare socket: what it accepts from whatever answers there.

const sockets = answeringEndpoints('podrun-ev-');
const endpoint = sockets.endpoint;
afterEach(() => sockets.close());

describe('engineVersion', () => {
  it("reads the version and API version from GET /_ping's headers, in one request", async () => {
    const asked: string[] = [];
    const url = await endpoint((s, request) => {
      asked.push(request.split('\r\n')[0] ?? '');
      s.end('HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\nServer: Docker/20.10.24+dfsg1 (linux)\r\nContent-Length: 2\r\n\r\nOK');
    });
    expect(await engineVersion(url)).toEqual({ version: '20.10.24+dfsg1', apiVersion: '1.41' });
    expect(asked).toEqual(['GET /_ping HTTP/1.0']);
    // Podman's compatible API names itself Libpod.
    const podman = await endpoint((s) => s.end('HTTP/1.1 200 OK\r\nAPI-Version: 1.41\r\nLibpod-API-Version: 4.3.1\r\nServer: Libpod/4.3.1 (linux)\r\n\r\nOK'));
    expect(await engineVersion(podman)).toEqual({ version: '4.3.1', apiVersion: '1.41' });
  });

  it('asks GET /version when the ping does not say (an older engine, a proxy that drops the headers)', async () => {
    const asked: string[] = [];
    const url = await endpoint((s, request) => {
      asked.push(request.split('\r\n')[0] ?? '');
      s.end('HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"Version":"27.1.0","ApiVersion":"1.46","Os":"linux"}');
    });
    expect(await engineVersion(url)).toEqual({ version: '27.1.0', apiVersion: '1.46' });
    expect(asked).toEqual(['GET /_ping HTTP/1.0', 'GET /version HTTP/1.0']);
  });

  it('reads a chunked answer, counting chunk sizes in bytes', async () => {
    const json = Buffer.from('{"Version":"ünï","ApiVersion":"1.41"}');
    const url = await endpoint((s) => {
      s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
      s.write(`${(10).toString(16)}\r\n`);
      s.write(Buffer.concat([json.subarray(0, 10), Buffer.from('\r\n')]));
      s.write(`${(json.length - 10).toString(16)}\r\n`);
      s.end(Buffer.concat([json.subarray(10), Buffer.from('\r\n0\r\n\r\n')]));
    });
    expect(await engineVersion(url)).toEqual({ version: 'ünï', apiVersion: '1.41' });
  });

  it('refuses an error status, a body that is not JSON, and fields that are not strings', async () => {
    const bad = await endpoint((s) => s.end('HTTP/1.0 500 Internal Server Error\r\n\r\n{"Version":"1"}'));
    await expect(engineVersion(bad)).rejects.toThrow(/unexpected answer/);
    const html = await endpoint((s) => s.end('HTTP/1.0 200 OK\r\n\r\n<html>'));
    await expect(engineVersion(html)).rejects.toThrow(/unexpected answer/);
    const odd = await endpoint((s) => s.end('HTTP/1.0 200 OK\r\n\r\n{"Version":{"x":1},"ApiVersion":7}'));
    expect(await engineVersion(odd)).toEqual({ version: '?', apiVersion: '?' });
  });

  it('stops reading an endpoint that streams without end, and one that never answers', async () => {
    const flood = await endpoint((s) => {
      s.write('HTTP/1.0 200 OK\r\n\r\n');
      const chunk = Buffer.alloc(16 * 1024, 0x61);
      const pump = (): void => {
        while (!s.destroyed && s.write(chunk));
        if (!s.destroyed) s.once('drain', pump);
      };
      pump();
    });
    await expect(engineVersion(flood)).rejects.toThrow(/over 64 KiB/);
    const silent = await endpoint(() => undefined);
    await expect(engineVersion(silent, 200)).rejects.toThrow(/no answer .* within 0.2s/);
  });

  it('says why when nothing listens', async () => {
    await expect(engineVersion(`unix://${join(tmpdir(), 'podrun-no-such-engine.sock')}`)).rejects.toThrow(/ENOENT/);
  });
});
