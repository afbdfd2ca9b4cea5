/**
 * The agent's log: levels, and fields (pod, container, source) a log pipeline can index. JSON
 * lines (pino) by default when stderr is not a terminal, as journald and log shippers want them;
 * one readable line per record on a terminal or with `--log-format text`.
 */
import pino from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, string | number | boolean | undefined>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** The kubelet's `--v`: 0–3 is info, 4 and up is debug. */
export function levelFromVerbosity(v: number): LogLevel {
  return v >= 4 ? 'debug' : 'info';
}

export interface LoggerOptions {
  level: LogLevel;
  format: 'json' | 'text';
  /** Where lines go (stderr by default); text mode writes whole lines here. */
  write?: (line: string) => void;
}

function defined(fields: LogFields | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(fields ?? {})) if (v !== undefined) out[k] = v;
  return out;
}

export function createLogger(o: LoggerOptions): Logger {
  const rank = LOG_LEVELS.indexOf(o.level);
  if (o.format === 'text') {
    const write = o.write ?? ((line: string) => void process.stderr.write(`${line}\n`));
    const at =
      (level: LogLevel) =>
      (msg: string, _fields?: LogFields): void => {
        // The message already names the pod and container in words; fields are for machines.
        if (LOG_LEVELS.indexOf(level) >= rank) write(`${new Date().toISOString()} ${level.toUpperCase().padEnd(5)} ${msg}`);
      };
    return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  }
  const write = o.write;
  const p = pino(
    {
      level: o.level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    write ? { write: (s: string) => write(s.replace(/\n$/, '')) } : pino.destination({ fd: 2, sync: true }),
  );
  return {
    debug: (msg, fields) => p.debug(defined(fields), msg),
    info: (msg, fields) => p.info(defined(fields), msg),
    warn: (msg, fields) => p.warn(defined(fields), msg),
    error: (msg, fields) => p.error(defined(fields), msg),
  };
}

/** Plain lines to a function, at every level: what embedders that passed `log(line)` used to get. */
export function lineLogger(write: (line: string) => void): Logger {
  const at = (msg: string): void => write(msg);
  return { debug: at, info: at, warn: at, error: at };
}
