import type { Logger } from './logger.js';

/**
 * For library use, tests, and `apply` driving pods without an agent: nothing is written. Apart
 * from logger.ts so that importing it does not load pino (its module graph, with worker_threads
 * and assert, was part of every `apply`'s start).
 */
export const silentLogger: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
