// The engine's two kinds of failure, in a module of their own: the CLI tells them apart without
// loading the engine client. Each engine maps its own failures into them (the Docker engine its
// HTTP statuses, in src/runtime/docker/; a CRI runtime its gRPC codes, in src/runtime/cri/), so
// nothing above src/runtime/ reads an engine's own status.

/**
 * Why an engine refused a request, as gRPC's status codes name it (the CRI's own words; the
 * Docker engine maps its HTTP statuses into them). `Internal` and `Unknown` are the rest.
 */
export type EngineErrorKind =
  'NotFound' | 'AlreadyExists' | 'Unavailable' | 'DeadlineExceeded' | 'Unimplemented' | 'InvalidArgument' | 'FailedPrecondition' | 'Internal' | 'Unknown';

/** The kinds that are the engine's fault (sick, stuck or lacking), not the request's: the CLI treats them as an engine it cannot use. */
const ENGINE_FAULTS: ReadonlySet<EngineErrorKind> = new Set(['Unavailable', 'DeadlineExceeded', 'Unimplemented', 'Internal']);

export function isEngineFault(kind: EngineErrorKind): boolean {
  return ENGINE_FAULTS.has(kind);
}

/** The engine could not be reached at all (as opposed to refusing one request). */
export class EngineUnavailableError extends Error {
  readonly kind: EngineErrorKind = 'Unavailable';
  /**
   * `engine`: the engine as the message names it ("the Docker engine"); `code`: the connection's
   * error code (ENOENT, EACCES, ECONNREFUSED…), for advice on the fix.
   */
  constructor(
    readonly endpoint: string,
    cause: string,
    readonly code?: string,
    readonly engine = 'the Docker engine',
  ) {
    super(`cannot reach ${engine} at ${endpoint}: ${cause}`);
    this.name = 'EngineUnavailableError';
  }
}

/** What a request error says besides its message. */
export interface EngineRequestFacts {
  /** The engine that refused, as a message names it: "the Docker engine", "Podman", "the container runtime at unix:///…". */
  engine: string;
  /** The engine's own words, without what podrun was doing (default: the message). */
  detail?: string;
}

/** The engine answered a request with an error. */
export class EngineRequestError extends Error {
  /** The engine that refused, as a message names it. */
  readonly engine: string;
  /** The engine's own words, without what podrun was doing (`message` begins with that). */
  readonly detail: string;
  constructor(
    message: string,
    readonly kind: EngineErrorKind,
    facts: EngineRequestFacts,
  ) {
    super(message);
    this.name = 'EngineRequestError';
    this.engine = facts.engine;
    this.detail = facts.detail ?? message;
  }
}

/** Whether `err` is an engine's answer that the thing asked about does not exist. */
export function isNotFound(err: unknown): boolean {
  return err instanceof EngineRequestError && err.kind === 'NotFound';
}
