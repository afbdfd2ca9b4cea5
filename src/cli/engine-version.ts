import { plainGet, plainTarget, type PlainAnswer } from '../base/plain-get.js';

/** The most of an answer read: /version is about 1 KiB; an endpoint that streams more is not an engine. */
const MAX_ANSWER = 64 * 1024;

/**
 * The engine's version from one plain GET /version: `podrun version` should not pay for loading
 * the whole engine client to print two strings, nor Node's HTTP client (its first request costs
 * more than the engine takes to answer).
 */
export async function engineVersion(endpoint: string, timeoutMs = 5000): Promise<{ version: string; apiVersion: string }> {
  const target = plainTarget(endpoint);
  if (!target) throw new Error(`${endpoint}: podrun version asks the engine without TLS`);
  const o = { maxBytes: MAX_ANSWER, timeoutMs, name: endpoint };
  // GET /_ping's headers say both, answered at once; /version runs `runc --version` and
  // `docker-init --version` for its Components (6-26 ms on this machine, against 0.5 ms).
  const ping = pingVersion(await plainGet(target, '/_ping', o));
  if (ping) return ping;
  const answer = await plainGet(target, '/version', o);
  try {
    return versionOf(answer);
  } catch {
    throw new Error(`unexpected answer from ${endpoint}/version`);
  }
}

/**
 * `podrun version`'s line for a Docker engine: at --docker-host's address, else DOCKER_HOST's, else
 * the default socket. Never rejects: an engine that cannot be asked is a line too.
 */
export function dockerEngineLine(dockerHost: string | undefined): Promise<string> {
  return engineVersion(dockerHost ?? process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock').then(
    (v) => `engine ${v.version} (API ${v.apiVersion})`,
    (err: unknown) => `engine unreachable (${(err as Error).message})`,
  );
}

/**
 * The two strings from an answer to GET /_ping: `Server: Docker/27.1.0 (linux)` (Podman's
 * compatible API: `Libpod/4.3.1 (linux)`) and `Api-Version`; undefined when it lacks either (an
 * older engine, a proxy in between), for /version to say.
 */
function pingVersion(answer: PlainAnswer): { version: string; apiVersion: string } | undefined {
  const version = /^[^/\s]+\/(\S+)/.exec(answer.headers.server ?? '')?.[1];
  const apiVersion = answer.headers['api-version'];
  return answer.status === 200 && version && apiVersion ? { version, apiVersion } : undefined;
}

/** The two strings from an answer to GET /version; throws on anything else. */
function versionOf(answer: PlainAnswer): { version: string; apiVersion: string } {
  if (answer.status !== 200) throw new Error(`status ${answer.status}`);
  const v = JSON.parse(answer.body.toString('utf8')) as { Version?: unknown; ApiVersion?: unknown };
  const str = (x: unknown): string => (typeof x === 'string' ? x : '?');
  return { version: str(v.Version), apiVersion: str(v.ApiVersion) };
}
