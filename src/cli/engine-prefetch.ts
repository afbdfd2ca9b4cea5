// `apply`'s engine, asked before anything else: its own module, so that the command can start the
// engine's loading and list before the apply module (the plan, the driver, the applied sets) is
// evaluated, which then runs beside the connection's setup and the list's round trip.

import type { EngineRecord } from '../runtime/observed.js';
import type { PodEngine } from '../runtime/roles.js';
import { makeRuntime, type GlobalOptions, type Io } from './context.js';

export interface EnginePrefetch {
  rt: Promise<PodEngine>;
  listed: Promise<EngineRecord[]>;
  sent: Promise<void>;
  drop: () => void;
}

/**
 * The engine's client loaded and its list asked while the manifests are read: the list changes
 * nothing, so the engine is still only changed once every file is valid, and a bad file is still
 * what a failed apply tells (the engine's own failure then goes unsaid). The connection's setup and
 * the list's round trip run behind the parse instead of after it.
 */
export function prefetchEngine(g: GlobalOptions, io: Io): EnginePrefetch {
  const rt = makeRuntime(g, io);
  // One list for the plan and for the driver's first look (a list costs the engine O(every container it holds)).
  const listed = rt.then((r) => r.listContainers());
  listed.catch(() => undefined);
  // The list on its way before the parse, which is synchronous: else its request (on a CRI runtime,
  // the connection's setup too) waits for the parse to end, and the round trip follows the parse. A
  // runtime that cannot say when its requests left (Docker's client) is given the event loop's next
  // turn, in which its connection completes and the request is written.
  const ignore = (): void => undefined;
  const nextTurn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));
  const sent = rt.then((r) => (r.requestsSent ? Promise.race([r.requestsSent(), listed]).then(ignore, ignore) : nextTurn()), ignore);
  // Nothing to apply: the engine's connection must not keep the process alive.
  const drop = (): void => void listed.finally(() => rt.then((r) => (r as { close?: () => void }).close?.())).catch(() => undefined);
  return { rt, listed, sent, drop };
}
