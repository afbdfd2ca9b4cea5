// The engine's two kinds of failure, in a module of their own: the CLI tells them apart without
// loading the engine client.

/** The engine could not be reached at all (as opposed to refusing one request). */
export class EngineUnavailableError extends Error {
  constructor(readonly endpoint: string, cause: string) {
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
