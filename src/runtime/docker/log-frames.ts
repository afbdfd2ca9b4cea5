import { Writable } from 'node:stream';

// How a container's log reaches the reader: at the reader's pace (constant memory for a log of
// any size), demultiplexed, and without what the engine reads twice across a rotation.

/**
 * Demultiplexes a followed, timestamped log stream (8-byte frame headers), dropping any frame
 * older than one already written: the engine's follow can jump back across a rotation.
 */
export class FollowedFrames extends Writable {
  private pending: Buffer = Buffer.alloc(0);
  private last: [string, string] = ['', ''];
  private lastPayload: Buffer = Buffer.alloc(0);

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly err: NodeJS.WritableStream,
    private readonly keepTimestamps: boolean,
  ) {
    super();
  }

  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    let i = 0;
    const full = new Set<NodeJS.WritableStream>();
    while (i + 8 <= this.pending.length) {
      const len = this.pending.readUInt32BE(i + 4);
      if (i + 8 + len > this.pending.length) break;
      const to = this.pending[i] === 2 ? this.err : this.out;
      if (!this.frame(to, this.pending.subarray(i + 8, i + 8 + len))) full.add(to);
      i += 8 + len;
    }
    this.pending = this.pending.subarray(i);
    afterDrain([...full], done);
  }

  /** Writes one frame; false when the destination asks to wait. */
  private frame(to: NodeJS.WritableStream, payload: Buffer): boolean {
    const space = payload.indexOf(0x20);
    const ts = space > 0 ? payload.subarray(0, space).toString('latin1') : '';
    // RFC 3339 with trailing zeros trimmed: compare the seconds as text, then the fraction padded.
    const m = /^([^.Z]+)(?:\.(\d+))?Z$/.exec(ts);
    if (m) {
      const at: [string, string] = [m[1] ?? '', (m[2] ?? '').padEnd(9, '0')];
      if (at[0] < this.last[0] || (at[0] === this.last[0] && at[1] < this.last[1])) return true;
      // The same time again is a replay when the bytes are the same too (parts of one long line share a time).
      if (at[0] === this.last[0] && at[1] === this.last[1] && payload.equals(this.lastPayload)) return true;
      this.last = at;
      this.lastPayload = Buffer.from(payload);
    }
    return to.write(this.keepTimestamps || !m ? payload : payload.subarray(space + 1));
  }
}

/** Calls `done` once every stream that asked to wait has drained (a slow reader slows the engine's stream). */
function afterDrain(streams: NodeJS.WritableStream[], done: () => void): void {
  let waiting = streams.length;
  if (!waiting) return done();
  for (const s of streams) s.once('drain', () => --waiting === 0 && done());
}

/** Passes a TTY log through at the reader's pace, without ending the destination. */
export class Paced extends Writable {
  constructor(private readonly out: NodeJS.WritableStream) {
    super();
  }

  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    afterDrain(this.out.write(chunk) ? [] : [this.out], done);
  }
}
