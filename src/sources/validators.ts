// When a URL poll may be conditional. Pure: the URL source feeds it what it holds.
//
// A 304 is only as good as the validator it answers. Common static servers make theirs from the
// file's mtime in whole seconds (python's http.server: Last-Modified and an If-Modified-Since
// `<=`; busybox httpd and nginx: Last-Modified and an ETag of hex mtime and size), so a second
// write in the same second, of the same length, keeps every validator: trusted, each poll is a
// 304 and the node runs the old set for good. The kubelet sends no validators at all; it
// downloads every period and compares bytes (`pkg/kubelet/config/http.go`).
//
// podrun keeps conditional requests where they are safe and pays for a full GET where not:
// - Last-Modified is trusted only when it is at least 60 s before the response's own Date (the
//   client's rule in RFC 7232 §2.2.2: a file served a minute after its last write cannot have been
//   written again within that second; the minute, not the second, allows for the mtime and the
//   Date coming from different clocks, an NFS writer's and the server's). An ETag that came with
//   a Last-Modified is held to the same rule: it cannot be told from an mtime-and-size one.
// - An ETag alone is used as it is (nothing says how it was made).
// - Whatever the validators, every FULL_GET_EVERY-th poll and the first one after a start are
//   plain GETs whose bytes are compared with the set in force: validators can still lie (a file
//   copied with its old mtime, `rsync -a` or `tar x`; python answers 304 to any older mtime), and
//   after a restart the cached validators are as old as the cache.

/** How long before its Date a Last-Modified must be to be trusted (RFC 7232 §2.2.2). */
export const SETTLED_MS = 60_000;
/** One poll in this many is a plain GET however good the validators (20 s polls: every 5 min). */
export const FULL_GET_EVERY = 15;

/** What a 200 carried, as received. */
export interface Validators {
  etag?: string;
  lastModified?: string;
  /** The response's Date header, the server's clock when it answered. */
  date?: string;
}

/** The validators a request sends; none makes it a plain GET. */
export interface Conditional {
  etag?: string;
  lastModified?: string;
}

/** Whether a response's validators can tell the body it came with from a later one. */
export function judgeValidators(v: Validators): { trusted: Conditional } | { weak: string } {
  if (v.lastModified === undefined) {
    return v.etag === undefined ? { weak: 'the server sends no ETag or Last-Modified' } : { trusted: { etag: v.etag } };
  }
  const modified = Date.parse(v.lastModified);
  const date = v.date === undefined ? NaN : Date.parse(v.date);
  if (Number.isNaN(modified)) return { weak: `Last-Modified ${JSON.stringify(v.lastModified)} is not an HTTP date` };
  if (Number.isNaN(date))
    return { weak: v.date === undefined ? 'the response has no Date to judge its Last-Modified by' : `Date ${JSON.stringify(v.date)} is not an HTTP date` };
  if (date - modified < SETTLED_MS) {
    return {
      weak: `Last-Modified (${v.lastModified}) is less than ${SETTLED_MS / 1000} s before the response's Date (${v.date}): a second write within that second would keep the same validators`,
    };
  }
  return { trusted: { lastModified: v.lastModified, ...(v.etag !== undefined ? { etag: v.etag } : {}) } };
}

export interface PollState {
  /** Those of the last 200 taken (from the cache before the first one). */
  validators?: Validators;
  /** Whether a 200 has been read since the source started. */
  fullSinceStart: boolean;
  /** Polls answered 304 since the last 200. */
  notModifiedInARow: number;
}

/** What the next poll sends, and why it is a plain GET when it is one. */
export function planPoll(s: PollState): { conditional: Conditional; full?: string } {
  if (!s.fullSinceStart) return { conditional: {}, full: 'the first poll since the start' };
  if (s.notModifiedInARow >= FULL_GET_EVERY - 1) return { conditional: {}, full: `one poll in ${FULL_GET_EVERY}` };
  const judged = judgeValidators(s.validators ?? {});
  if ('weak' in judged) return { conditional: {}, full: judged.weak };
  return { conditional: judged.trusted };
}
