// The runtime.v1 messages podrun uses. Their field tables and enums are generated from the
// published CRI API (third_party/cri-api/api.proto, by scripts/cri-messages.mjs) into
// api-tables.ts; fields podrun does not use are left out, and the codec skips them when a runtime
// sends them. This module is the one name callers import for the CRI API: the tables, the
// TypeScript shapes (message-shapes.ts) and the codec that joins them.

import type { MessageSpec, WireObject } from './wire.js';
import { decode } from './wire-decode.js';
import { encode } from './wire-encode.js';

export * from './api-tables.js';
// The TypeScript shapes of these messages (what decode returns, what encode accepts) live in
// message-shapes.ts; they are re-exported so callers keep one name for the CRI API.
export type * from './message-shapes.js';

/** A message's serializer and deserializer for gRPC, typed by the shape podrun gives it. */
export interface Codec<In, Out> {
  spec: MessageSpec;
  serialize(v: In): Buffer;
  deserialize(b: Buffer): Out;
}

export function codec<In, Out>(s: MessageSpec): Codec<In, Out> {
  return {
    spec: s,
    // The shapes (message-shapes.ts) are written to match the tables; the cast is the one place they meet.
    serialize: (v: In) => Buffer.from(encode(s, v as unknown as WireObject)),
    deserialize: (b: Buffer) => decode(s, b) as unknown as Out,
  };
}
