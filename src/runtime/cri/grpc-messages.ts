// gRPC's framing of messages on a stream (PROTOCOL-HTTP2.md: a compressed flag, a 4-byte length,
// the message), read out of the chunks HTTP/2 delivers. grpc-h2.ts turns what it refuses into the
// call's status.

/**
 * gRPC's length-prefixed messages out of a stream's chunks (HTTP/2 DATA frames, 16 KB each by
 * default). Chunks are kept as they come and a message is copied out once, when all of it is in:
 * joining them chunk by chunk would copy a 40 MB answer's first bytes 2,500 times.
 */
export class MessageReader {
  private chunks: Buffer[] = [];
  private held = 0;
  /** The length of the message being read, once its prefix is in. */
  private want: number | undefined;

  constructor(private readonly maxMessageBytes: number) {}

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.held += chunk.length;
  }

  /** Whether a message has begun and not ended: an answer that stops here is cut. */
  get partial(): boolean {
    return this.want !== undefined || this.held > 0;
  }

  /**
   * The next whole message, or undefined until all of it is in; 'compressed' for a compressed one,
   * and the length for a prefix over the cap (refused before its body comes). Either ends the call.
   */
  next(): Buffer | 'compressed' | number | undefined {
    if (this.want === undefined) {
      if (this.held < 5) return undefined;
      const prefix = this.take(5);
      if (prefix[0] !== 0) return 'compressed';
      this.want = prefix.readUInt32BE(1);
      if (this.want > this.maxMessageBytes) return this.want;
    }
    if (this.held < this.want) return undefined;
    const m = this.take(this.want);
    this.want = undefined;
    return m;
  }

  /** The next `n` bytes (`n` ≤ held): a view of one chunk when they lie in it, else one copy. */
  private take(n: number): Buffer {
    const first = this.chunks[0];
    if (n === 0 || !first) return Buffer.alloc(0);
    this.held -= n;
    if (first.length >= n) {
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let at = 0;
    while (at < n) {
      const c = this.chunks[0]!;
      const k = Math.min(c.length, n - at);
      c.copy(out, at, 0, k);
      at += k;
      if (k === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(k);
    }
    return out;
  }
}
