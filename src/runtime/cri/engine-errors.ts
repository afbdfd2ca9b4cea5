import { EngineRequestError, EngineUnavailableError, type EngineErrorKind } from '../engine-errors.js';
import { CriDeadlineError, CriError, CriNotFoundError, CriNotRuntimeError, CriNotSupportedError, CriUnreachableError } from './errors.js';

// CRI failures as the two kinds the rest of podrun tells apart (engine-errors.ts): the runtime
// unreachable (the cache waits and reconnects, the CLI exits 3 with advice) or one request refused.

/** The runtime at a CRI endpoint cannot be used at all: nothing there, not a runtime, or its CRI plugin off. */
export class CriUnavailableError extends EngineUnavailableError {
  constructor(readonly criError: CriError) {
    super(criError.endpoint, criError.message, criError instanceof CriUnreachableError ? criError.code : 'ENOTCRI');
    // The CRI error's own words: it names the runtime, not the Docker engine.
    this.message = criError.message;
    this.name = 'CriUnavailableError';
  }
}

function kindOf(err: CriError): EngineErrorKind {
  if (err instanceof CriNotFoundError) return 'not-found';
  if (err instanceof CriNotSupportedError) return 'unsupported';
  if (err instanceof CriDeadlineError) return 'failing';
  return 'refused';
}

/** Any failure of a CRI call as podrun's engine error, with `what` said (errors that are not the CRI's pass). */
export function criEngineError(err: unknown, what: string): Error {
  if (err instanceof CriUnreachableError || err instanceof CriNotRuntimeError) return new CriUnavailableError(err);
  if (err instanceof CriError) {
    const kind = kindOf(err);
    // The statuses the Docker-shaped callers still read (roles.ts): 404 gone, 504 stuck.
    const status = kind === 'not-found' ? 404 : kind === 'failing' ? 504 : kind === 'unsupported' ? 501 : 500;
    return new EngineRequestError(`${what}: ${err.message}`, status, kind);
  }
  return err instanceof Error ? err : new Error(String(err));
}

export function isCriNotFound(err: unknown): boolean {
  return err instanceof CriNotFoundError || (err instanceof EngineRequestError && err.kind === 'not-found');
}
