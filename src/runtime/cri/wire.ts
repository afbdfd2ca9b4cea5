// A small protobuf (proto3) wire codec driven by plain field tables: podrun defines only the CRI
// messages and fields it uses (messages.ts) and needs no .proto files or code generation at run
// time. The runtime on the other end is not trusted to be well-formed: every length is checked
// against the bytes present, varints are bounded, and unknown fields are skipped, not kept.

export type ScalarKind = 'string' | 'bytes' | 'bool' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'enum';

export interface FieldSpec {
  /** The field number of the published API. */
  no: number;
  /** `map` is map<string, string>, the only map type podrun reads or writes. */
  kind: ScalarKind | 'message' | 'map';
  repeated?: boolean;
  /** For `message`: a thunk, so specs can refer to each other in any order. */
  message?: () => MessageSpec;
}

export interface MessageSpec {
  name: string;
  fields: Record<string, FieldSpec>;
}

/** A decoded or to-be-encoded value: 64-bit integers are bigint, maps have a null prototype. */
export type WireValue = string | number | bigint | boolean | Uint8Array | WireObject | WireValue[] | Record<string, string> | undefined;
export interface WireObject {
  [field: string]: WireValue;
}

/** Bytes that do not decode as the message they should be (a different API, a broken peer). */
export class WireError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WireError';
  }
}

const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const START_GROUP = 3;
const END_GROUP = 4;
const FIXED32 = 5;

const MAX_VARINT_BYTES = 10;
const UINT64_MASK = (1n << 64n) - 1n;

function wireTypeOf(f: FieldSpec): number {
  switch (f.kind) {
    case 'string':
    case 'bytes':
    case 'message':
    case 'map':
      return LEN;
    default:
      return VARINT;
  }
}

class Writer {
  private buf = new Uint8Array(64);
  private pos = 0;

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }

  varint(v: number | bigint): void {
    this.ensure(MAX_VARINT_BYTES);
    if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < 2 ** 31) {
      while (v > 0x7f) {
        this.buf[this.pos++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      this.buf[this.pos++] = v;
      return;
    }
    // Negative numbers are their 64-bit two's complement: ten bytes, as the protobuf spec says.
    let b = BigInt.asUintN(64, BigInt(v));
    while (b > 0x7fn) {
      this.buf[this.pos++] = Number(b & 0x7fn) | 0x80;
      b >>= 7n;
    }
    this.buf[this.pos++] = Number(b);
  }

  tag(no: number, wireType: number): void {
    this.varint(((no << 3) | wireType) >>> 0);
  }

  bytes(b: Uint8Array): void {
    this.varint(b.length);
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.pos);
  }
}

function toInteger(v: WireValue, kind: ScalarKind, where: string): number | bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  throw new WireError(`${where}: ${kind} needs an integer, got ${typeof v}`);
}

function isDefault(f: FieldSpec, v: WireValue): boolean {
  if (v === undefined) return true;
  if (f.kind === 'message') return false;
  if (f.kind === 'string') return v === '';
  if (f.kind === 'bytes') return v instanceof Uint8Array && v.length === 0;
  return v === 0 || v === 0n || v === false;
}

function writeScalar(w: Writer, f: FieldSpec, v: WireValue, where: string): void {
  switch (f.kind) {
    case 'string':
      if (typeof v !== 'string') throw new WireError(`${where}: string needs a string, got ${typeof v}`);
      w.bytes(Buffer.from(v, 'utf8'));
      return;
    case 'bytes':
      if (!(v instanceof Uint8Array)) throw new WireError(`${where}: bytes needs a Uint8Array`);
      w.bytes(v);
      return;
    case 'int32':
    case 'enum':
      w.varint(BigInt.asIntN(32, BigInt(toInteger(v, f.kind, where))));
      return;
    case 'uint32':
      w.varint(BigInt.asUintN(32, BigInt(toInteger(v, f.kind, where))));
      return;
    default:
      w.varint(toInteger(v, f.kind as ScalarKind, where));
  }
}

function writeMessage(w: Writer, spec: MessageSpec, obj: WireObject): void {
  for (const [name, f] of Object.entries(spec.fields)) {
    const v = obj[name];
    const where = `${spec.name}.${name}`;
    if (v === undefined) continue;
    if (f.kind === 'map') {
      if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof Uint8Array) throw new WireError(`${where}: map needs an object`);
      for (const [k, val] of Object.entries(v)) {
        if (typeof val !== 'string') throw new WireError(`${where}[${k}]: map value needs a string`);
        const entry = new Writer();
        if (k !== '') {
          entry.tag(1, LEN);
          entry.bytes(Buffer.from(k, 'utf8'));
        }
        if (val !== '') {
          entry.tag(2, LEN);
          entry.bytes(Buffer.from(val, 'utf8'));
        }
        w.tag(f.no, LEN);
        w.bytes(entry.finish());
      }
      continue;
    }
    if (f.repeated) {
      if (!Array.isArray(v)) throw new WireError(`${where}: repeated field needs an array`);
      if (wireTypeOf(f) === VARINT) {
        // proto3 packs repeated numbers by default.
        if (v.length === 0) continue;
        const packed = new Writer();
        for (const item of v) writeScalar(packed, f, item, where);
        w.tag(f.no, LEN);
        w.bytes(packed.finish());
        continue;
      }
      for (const item of v) writeField(w, f, item, where);
      continue;
    }
    if (isDefault(f, v)) continue;
    writeField(w, f, v, where);
  }
}

function writeField(w: Writer, f: FieldSpec, v: WireValue, where: string): void {
  if (f.kind === 'message') {
    if (!f.message) throw new WireError(`${where}: message field without a spec`);
    if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof Uint8Array) throw new WireError(`${where}: message needs an object`);
    const sub = new Writer();
    writeMessage(sub, f.message(), v as WireObject);
    w.tag(f.no, LEN);
    w.bytes(sub.finish());
    return;
  }
  w.tag(f.no, wireTypeOf(f));
  writeScalar(w, f, v, where);
}

/** Encodes `obj` as `spec`; fields at their proto3 default are left out, as protoc's code does. */
export function encode(spec: MessageSpec, obj: WireObject): Uint8Array {
  const w = new Writer();
  writeMessage(w, spec, obj);
  return w.finish();
}

class Reader {
  pos: number;
  constructor(readonly buf: Uint8Array, start: number, readonly end: number) {
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
