// A small protobuf (proto3) wire codec driven by plain field tables: the CRI messages and fields
// podrun uses, generated from the vendored api.proto into api-tables.ts, so nothing parses a
// .proto or loads a protobuf library at run time. The runtime on the other end is not trusted to be well-formed: every length is checked
// against the bytes present, varints are bounded, and unknown fields are skipped, not kept.
// This file holds what both directions share (the field tables' shape, the wire types, the
// error); writing is wire-encode.ts, reading (where the untrusted bytes are) wire-decode.ts.

export type ScalarKind = 'string' | 'bytes' | 'bool' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'enum';

export interface FieldSpec {
  /** The field number of the published API (api.proto). */
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

export const VARINT = 0;
export const FIXED64 = 1;
export const LEN = 2;
export const START_GROUP = 3;
export const END_GROUP = 4;
export const FIXED32 = 5;

export const MAX_VARINT_BYTES = 10;
export const UINT64_MASK = (1n << 64n) - 1n;

export function wireTypeOf(f: FieldSpec): number {
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
