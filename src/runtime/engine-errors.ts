// The engine's two kinds of failure, in a module of their own: the CLI tells them apart without
// loading the engine client.

/** The engine could not be reached at all (as opposed to refusing one request). */
export class EngineUnavailableError extends Error {
  /** `code`: the connection's error code (ENOENT, EACCES, ECONNREFUSED…), for advice on the fix. */
  constructor(
    readonly endpoint: string,
    cause: string,
    readonly code?: string,
  ) {
    super(`cannot reach the Docker engine at ${endpoint}: ${cause}`);
    this.name = 'EngineUnavailableError';
  }
}

/**
 * What kind of refusal, in podrun's words, whichever engine refused (an HTTP status from the
 * Docker API, a gRPC code from a CRI runtime): `failing` is the engine's fault, not the request's.
 */
export type EngineErrorKind = 'not-found' | 'unchanged' | 'conflict' | 'unsupported' | 'failing' | 'refused';

/** The kind of a Docker API status. */
export function kindOfStatus(status: number | undefined): EngineErrorKind {
  if (status === 404) return 'not-found';
  if (status === 304) return 'unchanged';
  if (status === 409) return 'conflict';
  if (status === 501) return 'unsupported';
  return (status ?? 0) >= 500 ? 'failing' : 'refused';
}

/** The engine answered with an error status. */
export class EngineRequestError extends Error {
  /** `statusCode`: the engine's own (Docker's HTTP status), read only inside the runtime; above it, `kind`. */
  readonly kind: EngineErrorKind;
  /** The engine's own words, without what podrun was doing (`message` begins with that). */
  readonly detail: string;
  constructor(
    message: string,
    readonly statusCode: number | undefined,
    kind?: EngineErrorKind,
    detail?: string,
  ) {
    super(message);
    this.name = 'EngineRequestError';
    this.kind = kind ?? kindOfStatus(statusCode);
    this.detail = detail ?? message;
  }
}

/**
 * The engine took the request but never answered (seen with Docker 20.10 losing a container's
 * exit: its stop and inspect then wait forever). Reported as a gateway timeout: the engine is
 * failing, not the request wrong.
 */
export class EngineTimeoutError extends EngineRequestError {
  constructor(what: string, timeout: string) {
    super(`the Docker engine did not answer within ${timeout}: ${what} (the engine may be stuck; see its log)`, 504);
    this.name = 'EngineTimeoutError';
  }
}
