#!/usr/bin/env node
// Writes src/runtime/cri/api-tables.ts, the field tables of podrun's proto3 codec (wire.ts), from
// the vendored third_party/cri-api/api.proto and the names in cri-messages-used.mjs, so no field
// number is typed by hand. protobufjs parses the proto here, at generation time only: the tables
// are plain objects and podrun loads no protobuf library when it runs (docs/benchmarks.md, issue 43).
//
//   node scripts/cri-messages.mjs           write the file
//   node scripts/cri-messages.mjs --check   exit 1 if the file in the tree is not what it would write
//   node scripts/cri-messages.mjs --print   print it
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import * as prettier from 'prettier';
import { containerdMessages, enums, messages } from './cri-messages-used.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'src/runtime/cri/api-tables.ts');
/** Each vendored proto, its package, and the tables taken from it. */
export const SOURCES = [
  { dir: 'third_party/cri-api', file: 'api.proto', pkg: 'runtime.v1', used: messages },
  { dir: 'third_party/containerd-api', file: 'version.proto', pkg: 'containerd.services.version.v1', used: containerdMessages },
];

/** The codec's kinds (wire.ts ScalarKind) for the proto scalar types it reads; any other type is refused. */
const SCALARS = { string: 'str', bytes: 'bytes', bool: 'bool', int32: 'i32', uint32: 'u32', int64: 'i64', uint64: 'u64' };

function fail(message) {
  throw new Error(`cri-messages: ${message}`);
}

/** One field as the codec's helper call, e.g. `i64s(5)` or `msg(1, () => PodSandboxMetadata)`. */
function fieldCall(type, field, exportOf, text) {
  const where = `${type.name}.${field.name}`;
  if (text) {
    if (field.type !== 'bytes' && field.type !== 'string') fail(`${where}: only a bytes or string field can be read as text`);
    return `${field.repeated ? 'strs' : 'str'}(${field.id})`;
  }
  if (field.map) {
    if (field.keyType !== 'string' || field.type !== 'string') fail(`${where}: only map<string, string> is supported`);
    return `map(${field.id})`;
  }
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Enum) {
    if (field.repeated) fail(`${where}: repeated enums are not supported`);
    return `enm(${field.id})`;
  }
  if (resolved instanceof protobuf.Type) {
    const target = exportOf.get(resolved.fullName);
    if (!target) fail(`${where}: its type ${resolved.name} is not listed in cri-messages-used.mjs`);
    return `${field.repeated ? 'msgs' : 'msg'}(${field.id}, () => ${target})`;
  }
  const helper = SCALARS[field.type];
  if (!helper) fail(`${where}: type ${field.type} is not supported by the codec`);
  if (!field.repeated) return `${helper}(${field.id})`;
  if (helper !== 'str' && helper !== 'i64') fail(`${where}: repeated ${field.type} is not supported`);
  return `${helper}s(${field.id})`;
}

/** What a field is on the wire, to hold messages that share one table to the same bytes. */
function signature(field) {
  return JSON.stringify([field.id, field.type, field.keyType ?? null, !!field.repeated]);
}

/** The proto's types by name, resolved; only what is looked up is resolved, so imports (google.protobuf.Empty) need not be. */
function parseProto(dir, file, pkg) {
  const { root } = protobuf.parse(readFileSync(join(ROOT, dir, file), 'utf8'), { keepCase: false });
  return (name, what) => {
    const found = root.lookup(`${pkg}.${name}`);
    if (!found) fail(`${what} ${name} is not in ${dir}/${file}`);
    if (found instanceof protobuf.Type) found.resolveAll();
    return found;
  };
}

/** Export name → the proto types its table stands for, the fields it keeps, and those read as text. */
export function tableEntries() {
  return SOURCES.flatMap(({ dir, file, pkg, used }) => {
    const lookup = parseProto(dir, file, pkg);
    return Object.entries(used).map(([name, entry]) => {
      const from = Array.isArray(entry) ? [name] : (entry.from ?? [name]);
      const fields = Array.isArray(entry) ? entry : entry.fields;
      const text = new Set(Array.isArray(entry) ? [] : (entry.text ?? []));
      for (const f of text) if (!fields.includes(f)) fail(`${name}: text field ${f} is not listed`);
      const types = from.map((t) => lookup(t, 'message'));
      const label = from.length > 1 ? name : pkg === 'runtime.v1' ? from[0] : `${pkg}.${from[0]}`;
      return { name, types, fields, text, label, lookup };
    });
  });
}

export async function generate() {
  const entries = tableEntries();
  // The enums podrun names are all CRI's.
  const lookup = entries.find((e) => e.types[0].fullName.startsWith('.runtime.v1.')).lookup;
  const exportOf = new Map();
  for (const e of entries) for (const t of e.types) exportOf.set(t.fullName, e.name);
  const lines = [];
  for (const e of entries) {
    const calls = e.fields.map((f) => {
      const [first, ...others] = e.types.map((t) => t.fields[f] ?? fail(`${t.name} has no field ${f}`));
      for (const o of others) if (signature(o) !== signature(first)) fail(`${e.name}: ${first.parent.name}.${f} and ${o.parent.name}.${f} differ`);
      return `${f}: ${fieldCall(e.types[0], first, exportOf, e.text.has(f))}`;
    });
    lines.push(`export const ${e.name} = spec('${e.label}', { ${calls.join(', ')} });`);
  }

  const enumLines = Object.entries(enums).map(([name, { from = name, prefix = '', suffix = '' }]) => {
    const en = lookup(from, 'enum');
    const values = Object.entries(en.values).map(([k, v]) => {
      if (!k.startsWith(prefix) || !k.endsWith(suffix)) fail(`${from}.${k} does not read ${prefix}…${suffix}`);
      return `${k.slice(prefix.length, k.length - suffix.length)}: ${v}`;
    });
    return `export const ${name} = { ${values.join(', ')} } as const;`;
  });

  const origins = SOURCES.map(({ dir, file }) => `//   ${dir}/${file}: ${readFileSync(join(ROOT, dir, 'VERSION'), 'utf8').trim()}`);
  const text = `// Generated by scripts/cri-messages.mjs from the vendored protos:
${origins.join('\n')}
// Do not edit: change scripts/cri-messages-used.mjs or a vendored proto, then run \`npm run generate\`.
// The field tables (the codec's format, wire.ts) of the messages podrun uses, and the enums.

import type { FieldSpec, MessageSpec } from './wire.js';

const str = (no: number): FieldSpec => ({ no, kind: 'string' });
const strs = (no: number): FieldSpec => ({ no, kind: 'string', repeated: true });
const bytes = (no: number): FieldSpec => ({ no, kind: 'bytes' });
const bool = (no: number): FieldSpec => ({ no, kind: 'bool' });
const i32 = (no: number): FieldSpec => ({ no, kind: 'int32' });
const u32 = (no: number): FieldSpec => ({ no, kind: 'uint32' });
const i64 = (no: number): FieldSpec => ({ no, kind: 'int64' });
const u64 = (no: number): FieldSpec => ({ no, kind: 'uint64' });
const i64s = (no: number): FieldSpec => ({ no, kind: 'int64', repeated: true });
const enm = (no: number): FieldSpec => ({ no, kind: 'enum' });
const map = (no: number): FieldSpec => ({ no, kind: 'map' });
const msg = (no: number, m: () => MessageSpec): FieldSpec => ({ no, kind: 'message', message: m });
const msgs = (no: number, m: () => MessageSpec): FieldSpec => ({ no, kind: 'message', message: m, repeated: true });
// Each table keeps its field names in its type, so the hand-written shapes (message-shapes.ts) can be
// checked against them at compile time (test/runtime/cri-api-tables.test.ts).
const spec = <F extends Record<string, FieldSpec>>(name: string, fields: F): { name: string; fields: F } => ({ name, fields });

${enumLines.join('\n')}

${lines.join('\n')}
`;
  // A helper no table calls is left out, so the file passes tsc's noUnusedLocals.
  const tables = lines.join('\n');
  const pruned = text
    .split('\n')
    .filter((l) => {
      const helper = /^const (\w+) = \(no: number/.exec(l)?.[1];
      return !helper || new RegExp(`\\b${helper}\\(\\d`).test(tables);
    })
    .join('\n');
  const options = await prettier.resolveConfig(OUT);
  return prettier.format(pruned, { ...options, filepath: OUT });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = await generate();
  const mode = process.argv[2];
  if (mode === '--print') process.stdout.write(text);
  else if (mode === '--check') {
    let current = '';
    try {
      current = readFileSync(OUT, 'utf8');
    } catch {
      // A missing file is just out of date.
    }
    if (current !== text) {
      process.stderr.write(`${OUT} is not what scripts/cri-messages.mjs generates from the proto: run \`npm run generate\`\n`);
      process.exit(1);
    }
  } else writeFileSync(OUT, text);
}
