import {
  LEN,
  MAX_VARINT_BYTES,
  VARINT,
  WireError,
  wireTypeOf,
  type FieldSpec,
  type MessageSpec,
  type ScalarKind,
  type WireObject,
  type WireValue,
} from './wire.js';

// Writing CRI requests: podrun's own objects checked against the field tables as they are
// written, so a wrong shape is a WireError here rather than bytes a runtime misreads.

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
