import type { Logger } from './logger.js';

// Apart from logger.ts, which loads pino: `apply` runs the agent's pod worker with this logger and
// should not load a JSON log writer it never writes with.

export const silentLogger: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
