import type { Logger } from '../log/logger.js';
// A manifest URL may carry credentials (`https://user:pass@host/…`, `?token=…`). They are for the
// request only: logs, status files, labels (so `describe` and `get -o yaml`) and caches show the
// URL with them masked.

const SECRET_PARAM = /token|secret|passw(or)?d|pwd|key|sig(nature)?|auth|credential/i;
const MASK = '***';

/** The URL as it may be shown anywhere: password and secret-looking query values masked. */
export function redactUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return redactText(url);
  }
  if (u.password) u.password = MASK;
  for (const name of [...u.searchParams.keys()]) if (SECRET_PARAM.test(name)) u.searchParams.set(name, MASK);
  // URL escapes the mask; show it as typed.
  return u.toString().replaceAll(encodeURIComponent(MASK), MASK);
}

/** Masks `scheme://user:password@` wherever it appears in free text (an error message, a log line). */
export function redactText(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/[^/\s:@]*):[^@/\s]*@/gi, `$1:${MASK}@`);
}

/** A logger whose messages never carry a URL's credentials or tokens. */
export function redacting(log: Logger): Logger {
  return {
    debug: (msg, f) => log.debug(redactText(msg), f),
    info: (msg, f) => log.info(redactText(msg), f),
    warn: (msg, f) => log.warn(redactText(msg), f),
    error: (msg, f) => log.error(redactText(msg), f),
  };
}
