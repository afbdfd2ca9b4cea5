import type { Event, Schema } from 'js-yaml';
import { yamlLib, type YamlLib } from './yaml-lib.js';
import type { ManifestIssue } from './errors.js';
import { MAX_EXPANDED_DOCUMENT_BYTES, size } from './limits.js';

export interface Position {
  line: number;
  column: number;
}
export type PathSegment = string | number;

/** Where each node of one document starts: values and keys by JSON pointer. */
interface NodeOffsets {
  values: Map<string, number>;
  keys: Map<string, number>;
}

/**
 * Where each node of one document sits in the source, so a validation error on
 * `spec.containers[0].ports[0].containerPort` can name its line and column. Worked out on the
 * first question: a valid manifest (most of them) is never asked, and indexing every node of 20
 * small files was a measurable part of `validate` and `apply`.
 */
export class PositionIndex {
  constructor(
    private readonly offsets: () => NodeOffsets,
    private readonly lines: LineMap,
    readonly documentOffset: number,
  ) {}

  /** The value's position, else its key's, else the nearest ancestor's. */
  locate(path: readonly PathSegment[], preferKey = false): Position {
    const { values, keys } = this.offsets();
    for (let n = path.length; n >= 0; n--) {
      const k = pointer(path.slice(0, n));
      const off = preferKey ? (keys.get(k) ?? values.get(k)) : (values.get(k) ?? keys.get(k));
      if (off !== undefined && off >= 0) return this.lines.position(off);
    }
    return this.lines.position(this.documentOffset);
  }
}

export interface ParsedDocument {
  value: unknown;
  /** 1-based line where the document's content starts. */
  line: number;
  positions: PositionIndex;
}

export function pointer(path: readonly PathSegment[]): string {
  return path.map((s) => '/' + String(s).replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

class LineMap {
  private readonly starts: number[] = [0];
  constructor(text: string) {
    // indexOf runs natively; a loop over charCodeAt ran in the interpreter at every start (2-3 ms
    // of a 20-file validate).
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) this.starts.push(i + 1);
  }
  position(offset: number): Position {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.starts[mid] ?? 0) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - (this.starts[lo] ?? 0) + 1 };
  }
}

interface Frame {
  kind: 'doc' | 'map' | 'seq';
  /** null inside a complex (non-scalar) mapping key, whose contents have no field path. */
  path: PathSegment[] | null;
  index: number;
  expectingKey: boolean;
  key: string | null;
}

/** js-yaml's event kinds, asked of it once per pass: the parser is loaded on first use (yaml-lib.ts). */
type EventIds = YamlLib['EVENT_ID'];

function nodeOffset(e: Event, EVENT_ID: EventIds): number {
  switch (e.type) {
    case EVENT_ID.MAPPING:
    case EVENT_ID.SEQUENCE:
      return e.anchorStart >= 0 ? Math.min(e.anchorStart, e.start) : e.start;
    case EVENT_ID.SCALAR:
      return e.valueStart >= 0 ? e.valueStart : e.tagStart >= 0 ? e.tagStart : e.anchorStart;
    case EVENT_ID.ALIAS:
      return e.anchorStart;
    default:
      return -1;
  }
}

/** Every node's offset, one NodeOffsets per document, from the parser's event stream. */
function indexDocuments(text: string, events: readonly Event[]): NodeOffsets[] {
  const { EVENT_ID, getScalarValue } = yamlLib();
  const out: NodeOffsets[] = [];
  const stack: Frame[] = [];
  let values = new Map<string, number>();
  let keys = new Map<string, number>();

  for (const e of events) {
    if (e.type === EVENT_ID.DOCUMENT) {
      stack.push({ kind: 'doc', path: [], index: 0, expectingKey: false, key: null });
      values = new Map();
      keys = new Map();
      continue;
    }
    if (e.type === EVENT_ID.POP) {
      const frame = stack.pop();
      if (frame?.kind === 'doc') out.push({ values, keys });
      continue;
    }
    const top = stack[stack.length - 1];
    if (!top) continue;
    const offset = nodeOffset(e, EVENT_ID);
    const isCollection = e.type === EVENT_ID.MAPPING || e.type === EVENT_ID.SEQUENCE;

    if (top.kind === 'map' && top.expectingKey) {
      top.expectingKey = false;
      if (e.type === EVENT_ID.SCALAR && top.path) {
        top.key = getScalarValue(text, e);
        keys.set(pointer([...top.path, top.key]), offset);
      } else {
        top.key = null;
        if (isCollection) stack.push({ kind: e.type === EVENT_ID.MAPPING ? 'map' : 'seq', path: null, index: 0, expectingKey: true, key: null });
      }
      continue;
    }

    let path: PathSegment[] | null = null;
    if (top.path) {
      if (top.kind === 'doc') path = [];
      else if (top.kind === 'seq') path = [...top.path, top.index];
      else if (top.key !== null) path = [...top.path, top.key];
    }
    if (top.kind === 'seq') top.index++;
    if (top.kind === 'map') top.expectingKey = true;
    if (path) values.set(pointer(path), offset);
    if (isCollection) stack.push({ kind: e.type === EVENT_ID.MAPPING ? 'map' : 'seq', path, index: 0, expectingKey: true, key: null });
  }
  return out;
}

/** Where each document's content starts (its first placed node), one per document, in one cheap pass. */
function documentOffsets(events: readonly Event[]): number[] {
  const { EVENT_ID } = yamlLib();
  const out: number[] = [];
  let looking = false;
  for (const e of events) {
    if (e.type === EVENT_ID.DOCUMENT) {
      out.push(0);
      looking = true;
    } else if (looking && e.type !== EVENT_ID.POP) {
      const offset = nodeOffset(e, EVENT_ID);
      if (offset >= 0) {
        out[out.length - 1] = offset;
        looking = false;
      }
    }
  }
  return out;
}

export type ParseResult = { ok: true; documents: ParsedDocument[] } | { ok: false; issue: ManifestIssue };

function anchorName(text: string, start: number, end: number): string {
  return text.slice(start, end).replace(/^[&*]/, '');
}

/**
 * The offset of the first node at which a document, with its aliases expanded, grows past the
 * limit; -1 when none does. Works on the event stream, before anything is built, so an alias
 * bomb costs what its text costs. A node weighs its scalar text plus one per node.
 */
function expansionOverflow(text: string, events: Event[]): number {
  const { EVENT_ID } = yamlLib();
  const anchors = new Map<string, number>();
  const open: { weight: number; anchor: string | undefined }[] = [];
  let total = 0;
  const add = (w: number): void => {
    const top = open[open.length - 1];
    if (top) top.weight += w;
  };
  for (const e of events) {
    switch (e.type) {
      case EVENT_ID.DOCUMENT:
        total = 0;
        open.length = 0;
        anchors.clear();
        open.push({ weight: 0, anchor: undefined });
        continue;
      case EVENT_ID.MAPPING:
      case EVENT_ID.SEQUENCE:
        total += 1;
        open.push({ weight: 1, anchor: e.anchorStart >= 0 ? anchorName(text, e.anchorStart, e.anchorEnd) : undefined });
        break;
      case EVENT_ID.POP: {
        const done = open.pop();
        if (done?.anchor !== undefined) anchors.set(done.anchor, done.weight);
        if (done) add(done.weight);
        continue;
      }
      case EVENT_ID.SCALAR: {
        const w = 1 + Math.max(0, e.valueEnd - e.valueStart);
        total += w;
        if (e.anchorStart >= 0) anchors.set(anchorName(text, e.anchorStart, e.anchorEnd), w);
        add(w);
        break;
      }
      case EVENT_ID.ALIAS: {
        const w = anchors.get(anchorName(text, e.anchorStart, e.anchorEnd)) ?? 1;
        total += w;
        add(w);
        if (total > MAX_EXPANDED_DOCUMENT_BYTES) return e.anchorStart;
        break;
      }
    }
    if (total > MAX_EXPANDED_DOCUMENT_BYTES) return nodeOffset(e, EVENT_ID);
  }
  return -1;
}

export type DecodeResult = { ok: true; text: string } | { ok: false; issue: ManifestIssue };

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * Manifest bytes to text. Invalid UTF-8 is refused at its line and column, never replaced by
 * U+FFFD (an env value would silently change).
 */
export function decodeManifest(bytes: Uint8Array, file: string): DecodeResult {
  try {
    return { ok: true, text: strictUtf8.decode(bytes) };
  } catch {
    const bad = firstInvalidUtf8(bytes);
    const before = strictUtf8.decode(bytes.subarray(0, bad));
    const pos = new LineMap(before).position(before.length);
    const byte = bytes[bad] ?? 0;
    return {
      ok: false,
      issue: {
        file,
        line: pos.line,
        column: pos.column,
        field: '',
        message: `invalid UTF-8 (byte 0x${byte.toString(16).padStart(2, '0')}); manifests must be UTF-8 text`,
        severity: 'error',
      },
    };
  }
}

/** Offset of the first byte that starts an invalid UTF-8 sequence (RFC 3629: no overlongs, surrogates or > U+10FFFF). */
function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i] ?? 0;
    let n = 0;
    let min = 0;
    if (c < 0x80) {
      i++;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) [n, min] = [1, 0x80];
    else if (c >= 0xe0 && c <= 0xef) [n, min] = [2, 0x800];
    else if (c >= 0xf0 && c <= 0xf4) [n, min] = [3, 0x10000];
    else return i;
    let cp = c & (0x3f >> n);
    for (let k = 1; k <= n; k++) {
      const x = b[i + k];
      if (x === undefined || (x & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (x & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += n + 1;
  }
  return b.length;
}

let schema: Schema | undefined;

/**
 * YAML 1.2's core schema with YAML 1.1 integers, as Kubernetes reads manifests (go-yaml v2 under
 * sigs.k8s.io/yaml): `defaultMode: 0644` is octal 420, not decimal 644 (0400 read as 400 would be
 * mode 0620, group-writable). Booleans stay 1.2's: `on` is the string it looks like. Made on the
 * first parse, with the parser.
 */
function manifestSchema(): Schema {
  const { CORE_SCHEMA, intYaml11Tag } = yamlLib();
  return (schema ??= CORE_SCHEMA.withTags(intYaml11Tag));
}

/**
 * Parses YAML or JSON text (JSON is read as YAML 1.2) into documents with source positions.
 * Empty documents (a stray `---`) are dropped.
 */
export function parseManifestText(text: string, file: string): ParseResult {
  const lines = new LineMap(text);
  const { parseEvents, constructFromEvents, YAMLException } = yamlLib();
  try {
    const events = parseEvents(text, { filename: file });
    const overflow = expansionOverflow(text, events);
    if (overflow >= 0) {
      const pos = lines.position(overflow);
      return {
        ok: false,
        issue: {
          file,
          line: pos.line,
          column: pos.column,
          field: '',
          message: `document is larger than ${size(MAX_EXPANDED_DOCUMENT_BYTES)} with its aliases expanded (an alias bomb?)`,
          severity: 'error',
        },
      };
    }
    const values = constructFromEvents(events, { source: text, filename: file, schema: manifestSchema() });
    const starts = documentOffsets(events);
    // The events are kept only until the first question about any of the file's documents.
    let kept: Event[] | undefined = events;
    let offsets: NodeOffsets[] | undefined;
    const offsetsOf = (i: number): NodeOffsets => {
      if (!offsets) {
        offsets = indexDocuments(text, kept ?? []);
        kept = undefined;
      }
      return offsets[i] ?? { values: new Map(), keys: new Map() };
    };
    const documents: ParsedDocument[] = [];
    values.forEach((value, i) => {
      const start = starts[i];
      if (value === null || value === undefined || start === undefined) return;
      documents.push({ value, positions: new PositionIndex(() => offsetsOf(i), lines, start), line: lines.position(start).line });
    });
    return { ok: true, documents };
  } catch (err) {
    if (err instanceof YAMLException) {
      const mark = err.mark;
      return {
        ok: false,
        issue: {
          file,
          line: (mark?.line ?? 0) + 1,
          column: (mark?.column ?? 0) + 1,
          field: '',
          // The parser may quote the input at length; the position already says where.
          message: `invalid YAML: ${err.reason.length > 160 ? `${err.reason.slice(0, 160)}…` : err.reason}`,
          severity: 'error',
        },
      };
    }
    throw err;
  }
}
