import Docker from 'dockerode';
import { EngineRequestError, EngineTimeoutError, EngineUnavailableError } from '../engine-errors.js';
import { formatDuration, timerDelay } from '../../base/duration.js';
import type { EngineOptions, RuntimeOptions } from '../runtime-types.js';

export { EngineRequestError, EngineUnavailableError } from '../engine-errors.js';

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ENOENT', 'EACCES', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND']);

export type { EngineOptions };

/** The engine client and its bounded call (a timeout, an observer, one kind of error), for the role modules. */
export interface EngineCalls {
  readonly docker: Docker;
  readonly endpoint: string;
  readonly options: RuntimeOptions;
  call<T>(what: string, fn: () => Promise<T>, timeoutMs?: number): Promise<T>;
}

export function engineEndpoint(o: EngineOptions): string {
  return o.host ?? process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock';
}

export function connect(o: EngineOptions = {}): Docker {
  const endpoint = engineEndpoint(o);
  if (endpoint.startsWith('unix://')) return new Docker({ socketPath: endpoint.slice('unix://'.length) });
  if (endpoint.startsWith('/')) return new Docker({ socketPath: endpoint });
  const url = new URL(endpoint.replace(/^tcp:/, 'http:'));
  return new Docker({ host: url.hostname, port: Number(url.port || 2375), protocol: url.protocol === 'https:' ? 'https' : 'http' });
}

/** Turns a dockerode failure into one of the two error kinds above, with a readable message. */
export function engineError(err: unknown, what: string, endpoint: string): Error {
  const e = err as { code?: string; statusCode?: number; json?: { message?: string }; message?: string; reason?: string };
  if (e?.code && CONNECTION_CODES.has(e.code)) return new EngineUnavailableError(endpoint, `${e.code}${e.message ? ` (${e.message})` : ''}`, e.code);
  // A streamed answer (a pull) has no parsed body: its text is only in the message, after the status.
  const body = e?.message?.replace(/^\(HTTP code \d+\) [^-]*- /, '').trim();
  const detail = e?.json?.message ?? (body || e?.reason) ?? String(err);
  return new EngineRequestError(`${what}: ${detail.trim()}`, e?.statusCode, undefined, detail.trim());
}

export function isNotFound(err: unknown): boolean {
  return err instanceof EngineRequestError && err.statusCode === 404;
}

/**
 * One engine call as the runtime makes every one: bounded by `timeoutMs`, its failure one of the
 * two error kinds above, and the observer told how long it took.
 */
export async function boundedCall<T>(what: string, fn: () => Promise<T>, timeoutMs: number, endpoint: string, observer: RuntimeOptions['observer']): Promise<T> {
  const t0 = observer ? performance.now() : 0;
  let failed = false;
  let timer: NodeJS.Timeout | undefined;
  try {
    // A request the engine never answers must not hold a pod (or a delete) forever.
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new EngineTimeoutError(what, formatDuration(timeoutMs))), timerDelay(timeoutMs));
      timer.unref();
    });
    return await Promise.race([fn(), timeout]);
  } catch (err) {
    failed = true;
    throw err instanceof EngineTimeoutError ? err : engineError(err, what, endpoint);
  } finally {
    clearTimeout(timer);
    observer?.call?.(what, (performance.now() - t0) / 1000, failed);
  }
}
