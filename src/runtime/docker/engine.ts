import Docker from 'dockerode';
import { EngineRequestError, EngineUnavailableError, type EngineErrorKind } from '../engine-errors.js';
import { formatDuration, timerDelay } from '../../base/duration.js';
import type { EngineOptions, RuntimeOptions } from '../runtime-types.js';
import { plainGet, plainTarget } from '../../base/plain-get.js';

export { EngineRequestError, EngineUnavailableError, isNotFound } from '../engine-errors.js';

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ENOENT', 'EACCES', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND']);

export type { EngineOptions };

/** The engine client and its bounded call (a timeout, an observer, one kind of error), for the role modules. */
export interface EngineCalls {
  readonly docker: Docker;
  readonly endpoint: string;
  readonly options: RuntimeOptions;
  call<T>(what: string, fn: () => Promise<T>, timeoutMs?: number): Promise<T>;
  /** The engine as messages name it: "the Docker engine", or "Podman" once an answer said so. */
  readonly engineName: string;
}

/** The runtime's calls, with the reads it makes most (a pod's relist, an inspect). */
export interface ReadingCalls extends EngineCalls {
  inspect(id: string): Promise<Docker.ContainerInspectInfo>;
  /** Every container the label filters match, stopped ones too. */
  list(label: string[]): Promise<Docker.ContainerInfo[]>;
}

/**
 * The calls, reading without Node's HTTP client where the engine takes plain HTTP (plain-get.ts), else
 * through dockerode. The client is made on its first call (`docker`): a command that only reads (`get`,
 * an `apply` of unchanged pods) never loads dockerode, which is the largest file such a start ran.
 */
export function engineCalls(docker: () => Docker, endpoint: string, options: RuntimeOptions, call: EngineCalls['call']): ReadingCalls {
  let podman = false;
  const reads = plainReads(endpoint, options.requestTimeoutMs ?? 120_000, () => {
    podman = true;
  });
  let client: Docker | undefined;
  const made = (): Docker => (client ??= docker());
  return {
    get docker() {
      return made();
    },
    endpoint,
    options,
    call,
    get engineName() {
      return podman ? PODMAN : DOCKER;
    },
    inspect: (id) => (reads ? reads.inspect(id) : made().getContainer(id).inspect()),
    list: (label) => (reads ? reads.list(label) : made().listContainers({ all: true, filters: JSON.stringify({ label }) })),
  };
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

const DOCKER = 'the Docker engine';
const PODMAN = 'Podman';

/**
 * A Docker API answer with an error status. The status is Docker's own and is read only in
 * src/runtime/docker/; above it, `kind` (kindOfStatus) says what it means.
 */
export class DockerRequestError extends EngineRequestError {
  constructor(
    message: string,
    readonly status: number | undefined,
    facts: { engine: string; detail?: string; kind?: EngineErrorKind },
  ) {
    super(message, facts.kind ?? kindOfStatus(status), facts);
    this.name = 'DockerRequestError';
  }
}

/** A create's 409: the name is taken, which gRPC calls AlreadyExists (elsewhere a 409 is a state that forbids the request). */
export function createRefusal(err: unknown): unknown {
  if (!(err instanceof DockerRequestError) || err.status !== 409) return err;
  return new DockerRequestError(err.message, err.status, { engine: err.engine, detail: err.detail, kind: 'AlreadyExists' });
}

/**
 * What a Docker API status means, in gRPC's words. 304 (a start or stop of a container already
 * so) never gets here: boundedCall takes it as done. 409 is a state that forbids the request
 * now (not running, removal in progress), but to a create (createRefusal).
 */
export function kindOfStatus(status: number | undefined): EngineErrorKind {
  switch (status) {
    case 404:
      return 'NotFound';
    case 409:
      return 'FailedPrecondition';
    case 501:
      return 'Unimplemented';
    case 502:
    case 503:
      return 'Unavailable';
    case 504:
      return 'DeadlineExceeded';
    case undefined:
      return 'Unknown';
  }
  if (status >= 500) return 'Internal';
  return status >= 400 ? 'InvalidArgument' : 'Unknown';
}

/** Turns a dockerode failure into one of the two error kinds, with a readable message naming `engine`. */
export function engineError(err: unknown, what: string, endpoint: string, engine = DOCKER): Error {
  const e = err as { code?: string; statusCode?: number; json?: { message?: string }; message?: string; reason?: string };
  if (e?.code && CONNECTION_CODES.has(e.code)) return new EngineUnavailableError(endpoint, `${e.code}${e.message ? ` (${e.message})` : ''}`, e.code, engine);
  // A streamed answer (a pull) has no parsed body: its text is only in the message, after the status.
  const body = e?.message?.replace(/^\(HTTP code \d+\) [^-]*- /, '').trim();
  const detail = (e?.json?.message ?? (body || e?.reason) ?? String(err)).trim();
  return new DockerRequestError(`${what}: ${detail}`, e?.statusCode, { engine, detail });
}

/** Docker's "not modified": a start or stop of a container already started or stopped. */
function notModified(err: unknown): boolean {
  return (err as { statusCode?: number } | undefined)?.statusCode === 304;
}

/**
 * One engine call as the runtime makes every one: bounded by `timeoutMs`, its failure one of the
 * two error kinds naming the engine (`engineName`, asked when it fails), and the observer told how long it took. A 304 is success: the container is
 * already as asked, which is all a start or stop wants.
 */
export async function boundedCall<T>(
  what: string,
  fn: () => Promise<T>,
  timeoutMs: number,
  endpoint: string,
  observer: RuntimeOptions['observer'],
  engineName: () => string = () => DOCKER,
): Promise<T> {
  const t0 = observer ? performance.now() : 0;
  let failed = false;
  let timer: NodeJS.Timeout | undefined;
  let timedOut: EngineRequestError | undefined;
  try {
    // A request the engine never answers must not hold a pod (or a delete) forever.
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const engine = engineName();
        timedOut = new EngineRequestError(
          `${engine} did not answer within ${formatDuration(timeoutMs)}: ${what} (the engine may be stuck; see its log)`,
          'DeadlineExceeded',
          { engine },
        );
        reject(timedOut);
      }, timerDelay(timeoutMs));
      timer.unref();
    });
    return await Promise.race([fn(), timeout]);
  } catch (err) {
    // Only a start or a stop answers 304, and neither caller reads what it resolves with.
    if (notModified(err)) return undefined as T;
    failed = true;
    // Named once the answer is in: it may be the answer that said which engine this is.
    throw err === timedOut ? err : engineError(err, what, endpoint, engineName());
  } finally {
    clearTimeout(timer);
    observer?.call?.(what, (performance.now() - t0) / 1000, failed);
  }
}

/** The most of an answer read: an inspect is about 10 KiB, a list of 10,000 containers about 20 MiB. */
const MAX_READ = 256 * 1024 * 1024;

/** The engine's reads that the CLI's starts and the agent's relist make most. */
interface PlainReads {
  inspect(id: string): Promise<Docker.ContainerInspectInfo>;
  /** Every container the label filters match, stopped ones too. */
  list(label: string[]): Promise<Docker.ContainerInfo[]>;
}

/** Plain reads of the engine at `endpoint`, or undefined where they cannot go (TLS). */
export function plainReads(endpoint: string, timeoutMs: number, onPodman?: () => void): PlainReads | undefined {
  const target = plainTarget(endpoint);
  if (!target) return undefined;
  const json = async (path: string): Promise<unknown> => {
    const a = await plainGet(target, path, { maxBytes: MAX_READ, timeoutMs, name: endpoint });
    // Podman's compatible API says which it is on every answer.
    if (a.headers['libpod-api-version'] !== undefined) onPodman?.();
    const text = a.body.toString('utf8');
    if (a.status >= 200 && a.status < 300) return JSON.parse(text) as unknown;
    // Shaped as dockerode's failure, which engineError reads: the status code, and the engine's message.
    let parsed: { message?: string } | undefined;
    try {
      parsed = JSON.parse(text) as { message?: string };
    } catch {
      parsed = undefined;
    }
    throw Object.assign(new Error(`(HTTP code ${a.status}) ${a.reason} - ${parsed?.message ?? text}`), {
      statusCode: a.status,
      reason: a.reason,
      json: parsed,
    });
  };
  return {
    inspect: async (id) => (await json(`/containers/${encodeURIComponent(id)}/json`)) as Docker.ContainerInspectInfo,
    list: async (label) => {
      const list = await json(`/containers/json?all=true&filters=${encodeURIComponent(JSON.stringify({ label }))}`);
      if (!Array.isArray(list)) throw new Error(`unexpected answer from ${endpoint}: the container list is not a list`);
      return list as Docker.ContainerInfo[];
    },
  };
}
