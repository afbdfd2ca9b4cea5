// The engine's two kinds of failure, in a module of their own: the CLI tells them apart without
// loading the engine client.

/** The engine could not be reached at all (as opposed to refusing one request). */
export class EngineUnavailableError extends Error {
  /** `code`: the connection's error code (ENOENT, EACCES, ECONNREFUSED…), for advice on the fix. */
  constructor(readonly endpoint: string, cause: string, readonly code?: string) {
    super(`cannot reach the Docker engine at ${endpoint}: ${cause}`);
    this.name = 'EngineUnavailableError';
  }
}

/** The engine answered with an error status. */
export class EngineRequestError extends Error {
  constructor(message: string, readonly statusCode: number | undefined) {
    super(message);
    this.name = 'EngineRequestError';
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
