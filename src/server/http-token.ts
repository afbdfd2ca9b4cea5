/**
 * The bearer token of the TCP port (`--http-port`). Any local process and any host-network pod
 * can reach 127.0.0.1, so what carries a pod's spec, env or events (/pods, /events, /gc) is served
 * there only to a request that shows this token; the kubelet's main port authenticates the same
 * way (pkg/kubelet/server/auth.go), its unauthenticated read-only port is off by default.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { closeSync, constants, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** Shorter than this is guessable, or a file written by mistake (an empty one, a newline). */
const MIN_TOKEN_CHARS = 16;

export function defaultTokenPath(stateDir: string): string {
  return join(stateDir, 'http-token');
}

/** Writes a fresh token readable by the agent's user only; never replaces a file that exists. */
function createToken(path: string): void {
  // O_EXCL: two agents racing, or a file planted meanwhile, make this fail rather than follow it.
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, `${randomBytes(32).toString('base64url')}\n`);
  } finally {
    closeSync(fd);
  }
}

/**
 * The token in `path`, made first when `create` (the default path in the state directory) and the
 * file is missing. A file others may read or write is refused: the token would be no secret.
 */
export function loadHttpToken(path: string, create: boolean): string {
  let st;
  try {
    st = statSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || !create) throw new Error(`cannot read the HTTP token file ${path}: ${(err as Error).message}`);
    try {
      createToken(path);
    } catch (e) {
      throw new Error(`cannot create the HTTP token file ${path}: ${(e as Error).message}`);
    }
    st = statSync(path);
  }
  if (!st.isFile()) throw new Error(`the HTTP token file ${path} is not a regular file`);
  const mode = st.mode & 0o777;
  if (mode & 0o077) throw new Error(`the HTTP token file ${path} is open to other users (mode 0${mode.toString(8)}); refusing it (fix: chmod 600 ${path})`);
  if (typeof process.getuid === 'function' && st.uid !== process.getuid() && st.uid !== 0) {
    throw new Error(`the HTTP token file ${path} belongs to uid ${st.uid}, not root or the agent's user; refusing it (fix: chown root ${path})`);
  }
  const token = readFileSync(path, 'utf8').trim();
  if (token.length < MIN_TOKEN_CHARS || /\s/.test(token)) {
    throw new Error(
      `the HTTP token file ${path} must hold one token of at least ${MIN_TOKEN_CHARS} characters without spaces (e.g. from: openssl rand -hex 32)`,
    );
  }
  return token;
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * Whether an Authorization header carries the token: compared in constant time (digests of equal
 * length), so the time of a refusal says nothing of how much of a guess was right.
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return m ? timingSafeEqual(digest(m[1]!), digest(token)) : false;
}
