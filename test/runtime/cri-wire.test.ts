import { describe, expect, it } from 'vitest';
import * as M from '../../src/runtime/cri/messages.js';
import { WireError, type MessageSpec } from '../../src/runtime/cri/wire.js';
import { decode } from '../../src/runtime/cri/wire-decode.js';
import { encode } from '../../src/runtime/cri/wire-encode.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const bytes = (h: string): Uint8Array => new Uint8Array(Buffer.from(h.replace(/\s+/g, ''), 'hex'));

const Nums: MessageSpec = {
  name: 'Nums',
  fields: {
    i32: { no: 1, kind: 'int32' },
    u32: { no: 2, kind: 'uint32' },
    i64: { no: 3, kind: 'int64' },
    u64: { no: 4, kind: 'uint64' },
    flag: { no: 5, kind: 'bool' },
    list: { no: 6, kind: 'int64', repeated: true },
    e: { no: 7, kind: 'enum' },
  },
};

describe('CRI wire codec', () => {
  it('writes the bytes of the published encoding (tags, varints, length-delimited strings)', () => {
    expect(hex(encode(M.PortMapping, { protocol: 1, containerPort: 80, hostPort: 8080, hostIp: '127.0.0.1' }))).toBe(
      '0801' + '1050' + '18903f' + '2209' + Buffer.from('127.0.0.1').toString('hex'),
    );
    // Field 18 needs a two-byte tag: (18 << 3 | 2) = 146 = 0x92 0x01.
    expect(hex(encode(M.ImageSpec, { image: 'a', userSpecifiedImage: 'b' }))).toBe('0a0161' + '92010162');
    // Defaults are left out, as protoc's code does.
    expect(hex(encode(M.PortMapping, { protocol: 0, containerPort: 0, hostIp: '' }))).toBe('');
  });

  it('round-trips a ContainerConfig: nested messages, repeated messages and strings, maps, 64-bit numbers', () => {
    const config = {
      metadata: { name: 'main', attempt: 3 },
      image: { image: 'docker.io/library/busybox:1', annotations: { a: 'b' } },
      command: ['sh', '-c'],
      args: ['echo héllo ✓'],
      workingDir: '/w',
      envs: [
        { key: 'A', value: '1' },
        { key: 'B', value: '' },
      ],
      mounts: [{ containerPath: '/data', hostPath: '/srv/data', readonly: true, propagation: M.MountPropagation.HOST_TO_CONTAINER }],
      labels: { 'io.kubernetes.pod.uid': 'u-1', empty: '' },
      annotations: { 'podrun.io/hash': 'x'.repeat(300) },
      logPath: 'main/3.log',
      linux: {
        resources: { memoryLimitInBytes: 2n ** 40n, cpuQuota: -1, oomScoreAdj: -998, unified: { 'memory.high': 'max' } },
        securityContext: {
          runAsUser: { value: 65534 },
          supplementalGroups: [1, 2n ** 33n, -5],
          capabilities: { dropCapabilities: ['ALL'] },
          readonlyRootfs: true,
        },
      },
    };
    const back = decode(M.ContainerConfig, encode(M.ContainerConfig, config));
    expect(back.metadata).toEqual({ name: 'main', attempt: 3 });
    expect(back.command).toEqual(['sh', '-c']);
    expect(back.args).toEqual(['echo héllo ✓']);
    expect(back.envs).toEqual([
      { key: 'A', value: '1' },
      { key: 'B', value: '' },
    ]);
    expect(back.mounts).toEqual([
      { containerPath: '/data', hostPath: '/srv/data', readonly: true, selinuxRelabel: false, propagation: 1, recursiveReadOnly: false },
    ]);
    expect({ ...(back.labels as object) }).toEqual({ 'io.kubernetes.pod.uid': 'u-1', empty: '' });
    expect({ ...(back.annotations as object) }).toEqual({ 'podrun.io/hash': 'x'.repeat(300) });
    const linux = back.linux as { resources: Record<string, unknown>; securityContext: Record<string, unknown> };
    expect(linux.resources.memoryLimitInBytes).toBe(2n ** 40n);
    expect(linux.resources.cpuQuota).toBe(-1n);
    expect(linux.resources.oomScoreAdj).toBe(-998n);
    expect(linux.securityContext.runAsUser).toEqual({ value: 65534n });
    expect(linux.securityContext.supplementalGroups).toEqual([1n, 2n ** 33n, -5n]);
    expect(linux.securityContext.capabilities).toEqual({ addCapabilities: [], dropCapabilities: ['ALL'], addAmbientCapabilities: [] });
  });

  it('fills proto3 defaults for absent fields; an absent message is undefined', () => {
    const st = decode(M.ContainerStatus, new Uint8Array(0));
    expect(st.id).toBe('');
    expect(st.state).toBe(0);
    expect(st.createdAt).toBe(0n);
    expect(st.metadata).toBeUndefined();
    expect(st.mounts).toEqual([]);
    expect({ ...(st.labels as object) }).toEqual({});
  });

  it('varint edge cases: 0, 127/128, 2^31, 2^53+1, 2^64-1, negative int32/int64 as ten bytes', () => {
    const cases: [Record<string, number | bigint | boolean>, string][] = [
      [{ u32: 127 }, '107f'],
      [{ u32: 128 }, '108001'],
      [{ u32: 2 ** 31 }, '1080808080 08'],
      [{ u32: 2 ** 32 - 1 }, '10ffffffff0f'],
      [{ i32: -1 }, '08ffffffffffffffffff01'],
      [{ i64: -1n }, '18ffffffffffffffffff01'],
      [{ i64: 2n ** 53n + 1n }, '1881808080808080 10'],
      [{ u64: 2n ** 64n - 1n }, '20ffffffffffffffffff01'],
      [{ flag: true }, '2801'],
    ];
    for (const [v, h] of cases) {
      expect(
        hex(encode(Nums, v)),
        JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x)),
      ).toBe(h.replace(/\s+/g, ''));
      const back = decode(Nums, bytes(h));
      const [k, want] = Object.entries(v)[0] as [string, number | bigint | boolean];
      expect(back[k]).toBe(typeof want === 'number' && (k === 'i64' || k === 'u64') ? BigInt(want) : want);
    }
    // int32 decodes from the low 32 bits, whatever the sender put above them.
    expect(decode(Nums, bytes('08ffffffff0f')).i32).toBe(-1);
    expect(decode(Nums, bytes('0800')).i32).toBe(0);
  });

  it('refuses a varint longer than ten bytes, a truncated varint, and a length past the end', () => {
    expect(() => decode(Nums, bytes('08ffffffffffffffffffff01'))).toThrow(WireError);
    expect(() => decode(Nums, bytes('08ff'))).toThrow(/truncated varint/);
    expect(() => decode(M.VersionResponse, bytes('0a05616263'))).toThrow(/runs past the end/);
    // A length that would overflow a 32-bit int.
    expect(() => decode(M.VersionResponse, bytes('0affffffffffffffff7f'))).toThrow(WireError);
  });

  it('skips unknown fields of every wire type, groups included, and keeps the known ones', () => {
    const known = '0a0476312e30' + '12 0a636f6e7461696e657264'; // version "v1.0", runtimeName "containerd"
    const unknown = [
      '4896 01', // field 9 varint
      '51 0102030405060708', // field 10 fixed64
      '5d 01020304', // field 11 fixed32
      '62 03 616263', // field 12 bytes
      '6b 0801 73 74 6c', // field 13 group holding a varint and an empty nested group (14)
    ].join('');
    const v = decode(M.VersionResponse, bytes(unknown + known + '8807 01'));
    expect(v).toEqual({ version: 'v1.0', runtimeName: 'containerd', runtimeVersion: '', runtimeApiVersion: '' });
  });

  it('a known field with the wrong wire type is an error naming the field (a different API, not silently zero)', () => {
    // runtimeName (field 2) sent as a varint.
    expect(() => decode(M.VersionResponse, bytes('1005'))).toThrow(/VersionResponse\.runtimeName \(field 2\): wire type 0, expected 2/);
    expect(() => decode(M.VersionResponse, bytes('0005'))).toThrow(/field number 0/);
    expect(() => decode(M.VersionResponse, bytes('4f'))).toThrow(/field 9: unknown wire type 7/);
  });

  it('maps: entries with a missing key or value, a duplicate key (last wins), and __proto__ as a plain key', () => {
    const entry = (k: string | undefined, v: string | undefined): string => {
      const kb = k === undefined ? '' : '0a' + Buffer.from([k.length]).toString('hex') + Buffer.from(k).toString('hex');
      const vb = v === undefined ? '' : '12' + Buffer.from([v.length]).toString('hex') + Buffer.from(v).toString('hex');
      const body = kb + vb;
      return '3a' + Buffer.from([body.length / 2]).toString('hex') + body; // PodSandboxConfig.annotations: field 7, wire type 2
    };
    const buf = bytes(entry('a', '1') + entry('a', '2') + entry(undefined, 'nokey') + entry('novalue', undefined) + entry('__proto__', 'x'));
    const cfg = decode(M.PodSandboxConfig, buf);
    const ann = cfg.annotations as Record<string, string>;
    expect(Object.getPrototypeOf(ann)).toBeNull();
    expect({ ...ann }).toEqual({ a: '2', '': 'nokey', novalue: '', ['__proto__']: 'x' });
    expect(({} as Record<string, unknown>).x).toBeUndefined();
    expect(cfg.labels).toEqual(Object.create(null));
  });

  it('repeated numbers decode packed and unpacked alike, and encode packed', () => {
    expect(hex(encode(Nums, { list: [1, 300, -1n] }))).toBe('320d' + '01' + 'ac02' + 'ffffffffffffffffff01');
    expect(decode(Nums, bytes('3001 30ac02')).list).toEqual([1n, 300n]);
    expect(decode(Nums, bytes('320301ac02 3005')).list).toEqual([1n, 300n, 5n]);
  });

  it('refuses values of the wrong type on encode instead of writing garbage', () => {
    expect(() => encode(M.PortMapping, { containerPort: 1.5 })).toThrow(/PortMapping\.containerPort: int32 needs an integer/);
    expect(() => encode(M.PortMapping, { hostIp: 5 })).toThrow(WireError);
    expect(() => encode(M.ContainerConfig, { command: 'sh' })).toThrow(/repeated field needs an array/);
    expect(() => encode(M.ContainerConfig, { labels: { a: 1 } as unknown as Record<string, string> })).toThrow(/map value needs a string/);
  });

  it('decodes a ContainerStatusResponse as containerd sends it (timestamps in nanoseconds past 2^53)', () => {
    const status = {
      id: 'c1',
      metadata: { name: 'main', attempt: 2 },
      state: M.ContainerState.EXITED,
      createdAt: 1_764_633_600_123_456_789n,
      startedAt: 1_764_633_600_223_456_789n,
      finishedAt: 1_764_633_601_000_000_001n,
      exitCode: -1,
      reason: 'OOMKilled',
      labels: { 'io.kubernetes.container.name': 'main' },
      logPath: '/var/log/pods/x/main/2.log',
    };
    const res = decode(M.ContainerStatusResponse, encode(M.ContainerStatusResponse, { status, info: { pid: '42' } }));
    const st = res.status as Record<string, unknown>;
    expect(st.finishedAt).toBe(1_764_633_601_000_000_001n);
    expect(st.exitCode).toBe(-1);
    expect(st.reason).toBe('OOMKilled');
    expect(st.state).toBe(2);
    expect({ ...(res.info as object) }).toEqual({ pid: '42' });
  });
});
