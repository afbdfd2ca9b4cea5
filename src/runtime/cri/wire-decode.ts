import {
  END_GROUP,
  FIXED32,
  FIXED64,
  LEN,
  MAX_VARINT_BYTES,
  START_GROUP,
  UINT64_MASK,
  VARINT,
  WireError,
  wireTypeOf,
  type FieldSpec,
  type MessageSpec,
  type ScalarKind,
  type WireObject,
  type WireValue,
} from './wire.js';

// Reading the runtime's answers: the bytes come from another process and are not trusted, so
// every length is checked against what is there, and nesting goes only as deep as podrun's own
// tables (groups, which the tables never name, are skipped without recursing).

class Reader {
  pos: number;
  constructor(
    readonly buf: Uint8Array,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (let i = 0; i < MAX_VARINT_BYTES; i++) {
      if (this.pos >= this.end) throw new WireError('truncated varint');
      const b = this.buf[this.pos++] as number;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result & UINT64_MASK;
      shift += 7n;
    }
    throw new WireError('varint longer than 10 bytes');
  }

  /** A varint that must fit a small non-negative number (tags, lengths). */
  smallVarint(what: string): number {
    const v = this.varint();
    if (v > 0x7fffffffn) throw new WireError(`${what} out of range: ${v}`);
    return Number(v);
  }

  lengthDelimited(): [number, number] {
    const len = this.smallVarint('length');
    if (len > this.end - this.pos) throw new WireError(`length ${len} runs past the end of the message (${this.end - this.pos} bytes left)`);
    const start = this.pos;
    this.pos += len;
    return [start, this.pos];
  }

  skip(wireType: number, fieldNo: number): void {
    switch (wireType) {
      case VARINT:
        this.varint();
        return;
      case FIXED64:
        this.advance(8);
        return;
      case FIXED32:
        this.advance(4);
        return;
      case LEN:
        this.lengthDelimited();
        return;
      case START_GROUP: {
        // Groups (proto2) nest: skip to the matching end, iteratively so no input can blow the stack.
        let depth = 1;
        while (depth > 0) {
          const tag = this.smallVarint('tag');
          const wt = tag & 7;
          if (wt === START_GROUP) depth++;
          else if (wt === END_GROUP) depth--;
          else this.skip(wt, tag >>> 3);
        }
        return;
      }
      default:
        throw new WireError(`field ${fieldNo}: unknown wire type ${wireType}`);
    }
  }

  private advance(n: number): void {
    if (n > this.end - this.pos) throw new WireError('truncated fixed-width field');
    this.pos += n;
  }
}

function defaultOf(f: FieldSpec): WireValue {
  if (f.kind === 'map') return Object.create(null) as Record<string, string>;
  if (f.repeated) return [];
  switch (f.kind) {
    case 'string':
      return '';
    case 'bytes':
      return new Uint8Array(0);
    case 'bool':
      return false;
    case 'int64':
    case 'uint64':
      return 0n;
    case 'message':
      return undefined;
    default:
      return 0;
  }
}

function scalarFromVarint(kind: ScalarKind, v: bigint): WireValue {
  switch (kind) {
    case 'bool':
      return v !== 0n;
    case 'int32':
    case 'enum':
      return Number(BigInt.asIntN(32, v));
    case 'uint32':
      return Number(BigInt.asUintN(32, v));
    case 'int64':
      return BigInt.asIntN(64, v);
    case 'uint64':
      return v;
    default:
      throw new WireError(`${kind} is not a varint`);
  }
}

const utf8 = new TextDecoder('utf-8');

function readMap(r: Reader, start: number, end: number, into: Record<string, string>): void {
  const e = new Reader(r.buf, start, end);
  let key = '';
  let value = '';
  while (e.pos < e.end) {
    const tag = e.smallVarint('tag');
    const no = tag >>> 3;
    const wt = tag & 7;
    if ((no === 1 || no === 2) && wt === LEN) {
      const [s, t] = e.lengthDelimited();
      const text = utf8.decode(e.buf.subarray(s, t));
      if (no === 1) key = text;
      else value = text;
    } else if (no === 1 || no === 2) {
      throw new WireError(`map entry field ${no}: wire type ${wt}, expected ${LEN}`);
    } else {
      e.skip(wt, no);
    }
  }
  into[key] = value;
}

function readMessage(spec: MessageSpec, buf: Uint8Array, start: number, end: number): WireObject {
  const byNo = fieldsByNumber(spec);
  const out: WireObject = {};
  for (const [name, f] of Object.entries(spec.fields)) out[name] = defaultOf(f);
  const r = new Reader(buf, start, end);
  while (r.pos < r.end) {
    const tag = r.smallVarint('tag');
    const no = tag >>> 3;
    const wt = tag & 7;
    if (no === 0) throw new WireError(`${spec.name}: field number 0`);
    const known = byNo.get(no);
    if (!known) {
      r.skip(wt, no);
      continue;
    }
    const [name, f] = known;
    const where = `${spec.name}.${name} (field ${no})`;
    const expected = wireTypeOf(f);
    if (f.kind === 'map') {
      if (wt !== LEN) throw new WireError(`${where}: wire type ${wt}, expected ${LEN}`);
      const [s, t] = r.lengthDelimited();
      readMap(r, s, t, out[name] as Record<string, string>);
      continue;
    }
    // A repeated number may come packed (one length-delimited run) or one tag per item.
    if (f.repeated && expected === VARINT && wt === LEN) {
      const [s, t] = r.lengthDelimited();
      const p = new Reader(buf, s, t);
      const list = out[name] as WireValue[];
      while (p.pos < p.end) list.push(scalarFromVarint(f.kind as ScalarKind, p.varint()));
      continue;
    }
    if (wt !== expected) throw new WireError(`${where}: wire type ${wt}, expected ${expected}`);
    let value: WireValue;
    if (expected === VARINT) {
      value = scalarFromVarint(f.kind as ScalarKind, r.varint());
    } else {
      const [s, t] = r.lengthDelimited();
      if (f.kind === 'string') value = utf8.decode(buf.subarray(s, t));
      else if (f.kind === 'bytes') value = buf.slice(s, t);
      else if (f.message) value = readMessage(f.message(), buf, s, t);
      else throw new WireError(`${where}: message field without a spec`);
    }
    if (f.repeated) (out[name] as WireValue[]).push(value);
    // A singular field seen twice: the last one wins (protobuf merges messages; no CRI runtime
    // splits one, so the simpler rule loses nothing here).
    else out[name] = value;
  }
  return out;
}

const numberTables = new WeakMap<MessageSpec, Map<number, [string, FieldSpec]>>();

function fieldsByNumber(spec: MessageSpec): Map<number, [string, FieldSpec]> {
  let m = numberTables.get(spec);
  if (!m) {
    m = new Map();
    for (const [name, f] of Object.entries(spec.fields)) {
      if (m.has(f.no)) throw new WireError(`${spec.name}: field number ${f.no} used twice`);
      m.set(f.no, [name, f]);
    }
    numberTables.set(spec, m);
  }
  return m;
}

/** Decodes `buf` as `spec`: every known field present (proto3 defaults filled in), unknown ones skipped. */
export function decode(spec: MessageSpec, buf: Uint8Array): WireObject {
  return readMessage(spec, buf, 0, buf.length);
}
