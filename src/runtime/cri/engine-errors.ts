import { EngineRequestError, EngineUnavailableError } from '../engine-errors.js';
import { CriError, CriNotRuntimeError, CriUnreachableError } from './errors.js';

// CRI failures as the two kinds the rest of podrun tells apart (engine-errors.ts): the runtime
// unreachable (the cache waits and reconnects, the CLI exits 3 with advice) or one request refused.

/** The runtime at a CRI endpoint cannot be used at all: nothing there, not a runtime, or its CRI plugin off. */
export class CriUnavailableError extends EngineUnavailableError {
  constructor(readonly criError: CriError) {
    super(criError.endpoint, criError.message, criError instanceof CriUnreachableError ? criError.code : 'ENOTCRI', 'the container runtime');
    // The CRI error's own words: they name the runtime and, where it can tell, the fix.
    this.message = criError.message;
    this.name = 'CriUnavailableError';
  }
}

/** Any failure of a CRI call as podrun's engine error, with `what` said (errors that are not the CRI's pass). */
export function criEngineError(err: unknown, what: string): Error {
  if (err instanceof CriUnreachableError || err instanceof CriNotRuntimeError) return new CriUnavailableError(err);
  if (err instanceof CriError) return new EngineRequestError(`${what}: ${err.message}`, err.kind, { engine: runtimeAt(err.endpoint), detail: err.message });
  return err instanceof Error ? err : new Error(String(err));
}

/** The CRI runtime as a message names it. */
export function runtimeAt(endpoint: string): string {
  return `the container runtime at ${endpoint}`;
}

export function isCriNotFound(err: unknown): boolean {
  return (err instanceof CriError || err instanceof EngineRequestError) && err.kind === 'NotFound';
}
