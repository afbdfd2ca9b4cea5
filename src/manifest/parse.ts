import { constructFromEvents, EVENT_ID, getScalarValue, parseEvents, YAMLException, type Event } from 'js-yaml';
import type { ManifestIssue } from './errors.js';

export interface Position { line: number; column: number }
export type PathSegment = string | number;

/**
 * Where each node of one document sits in the source, so a validation error on
 * `spec.containers[0].ports[0].containerPort` can name its line and column.
 */
export class PositionIndex {
  constructor(
    private readonly values: Map<string, number>,
    private readonly keys: Map<string, number>,
    private readonly lines: LineMap,
    readonly documentOffset: number,
  ) {}

  /** The value's position, else its key's, else the nearest ancestor's. */
  locate(path: readonly PathSegment[], preferKey = false): Position {
    for (let n = path.length; n >= 0; n--) {
      const k = pointer(path.slice(0, n));
      const off = preferKey ? (this.keys.get(k) ?? this.values.get(k)) : (this.values.get(k) ?? this.keys.get(k));
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
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) this.starts.push(i + 1);
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

function nodeOffset(e: Event): number {
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

/** Builds one PositionIndex per document from the parser's event stream. */
function indexDocuments(text: string, events: Event[], lines: LineMap): PositionIndex[] {
  const out: PositionIndex[] = [];
  const stack: Frame[] = [];
  let values = new Map<string, number>();
  let keys = new Map<string, number>();
  let docOffset = -1;

  for (const e of events) {
    if (e.type === EVENT_ID.DOCUMENT) {
      stack.push({ kind: 'doc', path: [], index: 0, expectingKey: false, key: null });
      values = new Map();
      keys = new Map();
      docOffset = -1;
      continue;
    }
    if (e.type === EVENT_ID.POP) {
      const frame = stack.pop();
      if (frame?.kind === 'doc') out.push(new PositionIndex(values, keys, lines, Math.max(docOffset, 0)));
      continue;
    }
    const top = stack[stack.length - 1];
    if (!top) continue;
    const offset = nodeOffset(e);
    if (docOffset < 0) docOffset = offset;
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

export type ParseResult = { ok: true; documents: ParsedDocument[] } | { ok: false; issue: ManifestIssue };

/**
 * Parses YAML or JSON text (JSON is read as YAML 1.2) into documents with source positions.
 * Empty documents (a stray `---`) are dropped.
 */
export function parseManifestText(text: string, file: string): ParseResult {
  const lines = new LineMap(text);
  try {
    const events = parseEvents(text, { filename: file });
    const values = constructFromEvents(events, { source: text, filename: file });
    const indexes = indexDocuments(text, events, lines);
    const documents: ParsedDocument[] = [];
    values.forEach((value, i) => {
      const positions = indexes[i];
      if (value === null || value === undefined || !positions) return;
      documents.push({ value, positions, line: lines.position(positions.documentOffset).line });
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
          message: `invalid YAML: ${err.reason}`,
          severity: 'error',
        },
      };
    }
    throw err;
  }
}
