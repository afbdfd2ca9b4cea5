import type { EngineErrorKind } from '../engine-errors.js';

// What can go wrong talking to a CRI runtime, as types the engine and the CLI can tell apart
// without reading gRPC status codes.

/** gRPC's status codes by number, as podrun's engine errors name them (the rest are Unknown). */
const KINDS: ReadonlyMap<number, EngineErrorKind> = new Map([
  [3, 'InvalidArgument'],
  [4, 'DeadlineExceeded'],
  [5, 'NotFound'],
  [6, 'AlreadyExists'],
  [9, 'FailedPrecondition'],
  [12, 'Unimplemented'],
  [13, 'Internal'],
  [14, 'Unavailable'],
]);

/** What a gRPC status code means to podrun's engine errors. */
export function kindOfGrpcCode(code: number | undefined): EngineErrorKind {
  return (code !== undefined && KINDS.get(code)) || 'Unknown';
}

/** Every CRI failure: the endpoint and the gRPC status code (when the runtime answered with one). */
export class CriError extends Error {
  constructor(
    message: string,
    readonly endpoint: string,
    readonly grpcCode?: number,
  ) {
    super(message);
    this.name = 'CriError';
  }

  get kind(): EngineErrorKind {
    return kindOfGrpcCode(this.grpcCode);
  }
}

/** Nothing answers at the endpoint: no socket, nobody listening, no permission. */
export class CriUnreachableError extends CriError {
  /** `code`: the connection's error code (ENOENT, ECONNREFUSED, EACCES, ENOTSOCK…). */
  constructor(
    endpoint: string,
    cause: string,
    readonly code?: string,
  ) {
    super(`cannot reach the container runtime at ${endpoint}: ${cause}`, endpoint);
    this.name = 'CriUnreachableError';
  }
}

/** Something answers at the endpoint, but it is not a CRI runtime (not gRPC, or no runtime.v1 service). */
export class CriNotRuntimeError extends CriError {
  constructor(endpoint: string, detail: string, grpcCode?: number) {
    super(`${endpoint} is not a CRI runtime (runtime.v1): ${detail}`, endpoint, grpcCode);
    this.name = 'CriNotRuntimeError';
  }
}

/**
 * containerd answers at the endpoint but its CRI plugin is off: the default of the config file
 * Docker's packages install (`disabled_plugins = ["cri"]`), the most common way to meet this.
 */
export class CriPluginDisabledError extends CriNotRuntimeError {
  constructor(
    endpoint: string,
    readonly containerdVersion: string,
  ) {
    super(
      endpoint,
      `containerd ${containerdVersion} answers there, but its CRI plugin is disabled ("unknown service runtime.v1.RuntimeService"): ` +
        'remove "cri" (or "io.containerd.grpc.v1.cri") from disabled_plugins in /etc/containerd/config.toml and restart containerd',
      12,
    );
    this.name = 'CriPluginDisabledError';
  }
}

/** The sandbox, container or image named in the call does not exist (gRPC NotFound). */
export class CriNotFoundError extends CriError {
  constructor(
    endpoint: string,
    readonly method: string,
    readonly detail: string,
  ) {
    super(`${method}: not found: ${detail}`, endpoint, 5);
    this.name = 'CriNotFoundError';
  }
}

/** The runtime did not answer within the call's deadline. */
export class CriDeadlineError extends CriError {
  constructor(
    endpoint: string,
    readonly method: string,
    readonly timeoutMs: number,
  ) {
    super(`the container runtime at ${endpoint} did not answer ${method} within ${timeoutMs} ms (the runtime may be stuck; see its log)`, endpoint, 4);
    this.name = 'CriDeadlineError';
  }
}

/** ExecSync's command ran past its timeout and the runtime ended it (a probe's timeout, not a sick runtime). */
export class CriExecTimeoutError extends CriError {
  constructor(endpoint: string, detail: string) {
    super(`the command ran past its timeout and the runtime ended it: ${detail}`, endpoint, 4);
    this.name = 'CriExecTimeoutError';
  }
}

/** The runtime does not serve this call (gRPC Unimplemented), e.g. GetContainerEvents before containerd 1.7. */
export class CriNotSupportedError extends CriError {
  constructor(
    endpoint: string,
    readonly method: string,
    detail: string,
  ) {
    super(`the container runtime at ${endpoint} does not support ${method}: ${detail}`, endpoint, 12);
    this.name = 'CriNotSupportedError';
  }
}

/** The runtime refused the request (any other gRPC status) or sent an answer that does not decode. */
export class CriRequestError extends CriError {
  constructor(
    endpoint: string,
    readonly method: string,
    readonly detail: string,
    grpcCode?: number,
  ) {
    super(`${method}: ${detail}`, endpoint, grpcCode);
    this.name = 'CriRequestError';
  }
}
