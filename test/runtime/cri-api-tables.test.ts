import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { containerdMessages, messages, type Used } from '../../scripts/cri-messages-used.mjs';
import * as M from '../../src/runtime/cri/messages.js';
import type { FieldSpec, MessageSpec, WireObject, WireValue } from '../../src/runtime/cri/wire.js';
import { decode } from '../../src/runtime/cri/wire-decode.js';
import { encode } from '../../src/runtime/cri/wire-encode.js';

// Issue 43: the CRI field tables come from the official api.proto, never from a hand. Three
// checks: the committed tables are what the generator writes now; no other file under src/ types a
// field number; and every table encodes and decodes as protobufjs does, reading the same proto by
// reflection (a second, independent codec), so one wrong number anywhere fails here.

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '../..');

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(`${dir}/${e.name}`) : [`${dir}/${e.name}`]));
}

/** The proto types each table stands for, by export name (a shared table stands for several). */
function protoTypes(): [string, protobuf.Type[]][] {
  const load = (file: string, pkg: string, used: Used): [string, protobuf.Type[]][] => {
    const { root } = protobuf.parse(readFileSync(join(ROOT, file), 'utf8'), { keepCase: false });
    return Object.entries(used).map(([name, entry]) => {
      const from = Array.isArray(entry) ? [name] : (entry.from ?? [name]);
      return [name, from.map((t) => root.lookupType(`${pkg}.${t}`))];
    });
  };
  return [
    ...load('third_party/cri-api/api.proto', 'runtime.v1', messages),
    ...load('third_party/containerd-api/version.proto', 'containerd.services.version.v1', containerdMessages),
  ];
}

const tables = M as unknown as Record<string, MessageSpec>;

/**
 * A value for every field of a table, each one different from every other (a counter), so a
 * field sent under another's number cannot come back looking right.
 */
function sample(spec: MessageSpec, next: () => number): WireObject {
  const one = (f: FieldSpec): WireValue => {
    const n = next();
    switch (f.kind) {
      case 'string':
        return `s${n}`;
      case 'bytes':
        return new Uint8Array([n & 0xff, 7]);
      case 'bool':
        return true;
      case 'int64':
      case 'uint64':
        return 2n ** 40n + BigInt(n);
      case 'map':
        return { [`k${n}`]: `v${n}`, [`l${n}`]: '' };
      case 'message':
        return sample(f.message!(), next);
      default:
        return n;
    }
  };
  return Object.fromEntries(Object.entries(spec.fields).map(([name, f]) => [name, f.repeated ? [one(f), one(f)] : one(f)]));
}

/** One form for both codecs' output: 64-bit as text, bytes as arrays, text fields sent as proto bytes read back as text. */
function plain(spec: MessageSpec, v: unknown): unknown {
  const o = (v ?? {}) as Record<string, unknown>;
  const one = (f: FieldSpec, x: unknown): unknown => {
    if (f.kind === 'message') return plain(f.message!(), x);
    if (f.kind === 'string' && typeof x !== 'string') return Buffer.from(x as Uint8Array).toString('utf8');
    if (f.kind === 'bytes') return Array.from(x as Uint8Array);
    if (f.kind === 'int64' || f.kind === 'uint64') return String(x);
    if (f.kind === 'map') return { ...(x as Record<string, string>) };
    return x;
  };
  return Object.fromEntries(
    Object.entries(spec.fields).map(([name, f]) => [name, f.repeated ? (o[name] as unknown[]).map((x) => one(f, x)) : one(f, o[name])]),
  );
}

/** The sample as protobufjs takes it: bytes fields as bytes, even those podrun writes as text. */
function forProtobufjs(type: protobuf.Type, v: unknown): unknown {
  if (Array.isArray(v)) return v.map((x) => forProtobufjs(type, x));
  const o = v as Record<string, unknown>;
  return Object.fromEntries(
    Object.entries(o).map(([name, x]) => {
      const f = type.fields[name]!;
      const conv = (y: unknown): unknown =>
        f.resolvedType instanceof protobuf.Type
          ? forProtobufjs(f.resolvedType, y)
          : f.type === 'bytes' && typeof y === 'string'
            ? Buffer.from(y)
            : typeof y === 'bigint'
              ? String(y)
              : y;
      return [name, Array.isArray(x) ? x.map(conv) : conv(x)];
    }),
  );
}

// The hand-written shapes (message-shapes.ts) against the generated tables, at compile time: a
// shape that names a field its table lacks (a typo, a field dropped from the selection) fails
// `npm run typecheck` here, the names it lacks in the error.
type Part<S> = NonNullable<S> extends readonly (infer E)[] ? E : NonNullable<S>;
type Unknown<S, T extends { fields: object }> = Exclude<keyof Part<S>, keyof T['fields']>;
type Known<S, T extends { fields: object }> = [Unknown<S, T>] extends [never] ? true : { fieldsNotInTable: Unknown<S, T> };
type Sandbox = M.PodSandboxConfigInput;
type Ctr = M.ContainerConfigInput;
type CtrSecurity = Part<Part<Ctr['linux']>['securityContext']>;
const shapesKnown = [
  true satisfies Known<M.Metadata, typeof M.PodSandboxMetadata>,
  true satisfies Known<M.MountSpec, typeof M.Mount>,
  true satisfies Known<M.NamespaceOptionInput, typeof M.NamespaceOption>,
  true satisfies Known<M.SecurityProfileInput, typeof M.SecurityProfile>,
  true satisfies Known<M.Int64Input, typeof M.Int64Value>,
  true satisfies Known<Sandbox, typeof M.PodSandboxConfig>,
  true satisfies Known<Sandbox['dnsConfig'], typeof M.DNSConfig>,
  true satisfies Known<Sandbox['portMappings'], typeof M.PortMapping>,
  true satisfies Known<Sandbox['linux'], typeof M.LinuxPodSandboxConfig>,
  true satisfies Known<Part<Sandbox['linux']>['securityContext'], typeof M.LinuxSandboxSecurityContext>,
  true satisfies Known<M.LinuxResourcesInput, typeof M.LinuxContainerResources>,
  true satisfies Known<Ctr, typeof M.ContainerConfig>,
  true satisfies Known<Ctr['metadata'], typeof M.ContainerMetadata>,
  true satisfies Known<Ctr['image'], typeof M.ImageSpec>,
  true satisfies Known<Ctr['envs'], typeof M.KeyValue>,
  true satisfies Known<Ctr['devices'], typeof M.Device>,
  true satisfies Known<Ctr['linux'], typeof M.LinuxContainerConfig>,
  true satisfies Known<CtrSecurity, typeof M.LinuxContainerSecurityContext>,
  true satisfies Known<CtrSecurity['capabilities'], typeof M.Capability>,
  true satisfies Known<M.VersionInfo, typeof M.VersionResponse>,
  true satisfies Known<M.PodSandboxStatusInfo, typeof M.PodSandboxStatus>,
  true satisfies Known<M.PodSandboxStatusInfo['network'], typeof M.PodSandboxNetworkStatus>,
  true satisfies Known<M.PodSandboxItem, typeof M.PodSandbox>,
  true satisfies Known<M.ContainerItem, typeof M.Container>,
  true satisfies Known<M.ContainerStatusInfo, typeof M.ContainerStatus>,
  true satisfies Known<M.ExecSyncResult, typeof M.ExecSyncResponse>,
  true satisfies Known<M.ImageInfo, typeof M.Image>,
  true satisfies Known<M.FilesystemUsageInfo, typeof M.FilesystemUsage>,
  true satisfies Known<M.ContainerStatsInfo, typeof M.ContainerStatsSpec>,
  true satisfies Known<M.ContainerStatsInfo['cpu'], typeof M.CpuUsage>,
  true satisfies Known<M.ContainerStatsInfo['memory'], typeof M.MemoryUsage>,
  true satisfies Known<M.ContainerEvent, typeof M.ContainerEventResponse>,
  true satisfies Known<M.AuthConfigInput, typeof M.AuthConfig>,
];
void shapesKnown;

describe('CRI field tables generated from api.proto', () => {
  it('are, as committed, what scripts/cri-messages.mjs writes from the vendored protos', () => {
    // --check exits 1 (execFileSync throws, with the script's message) when they differ.
    expect(execFileSync(process.execPath, ['scripts/cri-messages.mjs', '--check'], { cwd: ROOT, encoding: 'utf8' })).toBe('');
  });

  it('leave no field number typed by hand anywhere else under src/', () => {
    // A field spec's `no: 1`, or a table helper's call `str(1)` (a method such as `w.bytes(6)` is not one).
    const handTyped = /\bno:\s*\d|(?<![.\w])(?:str|strs|bytes|bool|i32|u32|i64|u64|i64s|enm|map|msg|msgs)\(\d/;
    const found = sources('src')
      .filter((f) => f.endsWith('.ts') && f !== 'src/runtime/cri/api-tables.ts')
      .filter((f) => handTyped.test(readFileSync(join(ROOT, f), 'utf8')));
    expect(found).toEqual([]);
  });

  const cases = protoTypes().flatMap(([name, types]) => types.map((type) => ({ name, type })));

  it('cover every table messages.ts exports', () => {
    const exported = Object.keys(tables).filter((k) => typeof tables[k] === 'object' && 'fields' in tables[k]);
    expect(new Set(cases.map((c) => c.name))).toEqual(new Set(exported));
  });

  it.each(cases)('$name encodes and decodes as protobufjs does with $type.name of the proto', ({ name, type }) => {
    type.resolveAll();
    const spec = tables[name]!;
    let n = 0;
    const value = sample(spec, () => ++n);
    const asProto = { longs: String, enums: Number, bytes: Array, defaults: false };

    // podrun writes, protobufjs reads: every field lands under the proto's name for it.
    const read = type.toObject(type.decode(encode(spec, value)), asProto);
    expect(plain(spec, read)).toEqual(plain(spec, value));

    // protobufjs writes, podrun reads.
    const written = type.encode(type.fromObject(forProtobufjs(type, value) as Record<string, unknown>)).finish();
    expect(plain(spec, decode(spec, written))).toEqual(plain(spec, value));
  });
});
