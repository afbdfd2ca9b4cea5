import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { netDev, readCgroup, type ReadFile } from '../../src/runtime/cgroup-stats.js';
import { memoryOf } from '../../src/stats/summary.js';

// Readings from cgroup trees: v1 recorded from a container on this machine, v2 in the kernel's
// format for a systemd-driven Docker on a unified hierarchy.

const ID = 'c0ffee';
const tree = (files: Record<string, string>): ReadFile => (p) => files[p];

/** A tree recorded on this machine (Debian 12, Docker 20.10, cgroup v1, cgroupfs driver): `== path` then the file. */
function recorded(name: string, id: string): Record<string, string> {
  const text = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../fixtures/cgroup', name), 'utf8');
  const out: Record<string, string> = {};
  for (const part of text.split(/^== /m).filter(Boolean)) {
    const nl = part.indexOf('\n');
    out[`/sys/fs/cgroup/${part.slice(0, nl).replace('/ID/', `/${id}/`)}`] = part.slice(nl + 1);
  }
  return out;
}

const V1 = recorded('v1-docker-cgroupfs.txt', ID);

// cgroup v2 as the kernel writes these files (Documentation/admin-guide/cgroup-v2.rst), for a
// systemd-driven Docker: this machine has no unified hierarchy to record one from.
const V2: Record<string, string> = {
  [`/sys/fs/cgroup/system.slice/docker-${ID}.scope/cpu.stat`]: 'usage_usec 2503318\nuser_usec 2120000\nsystem_usec 383318\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n',
  [`/sys/fs/cgroup/system.slice/docker-${ID}.scope/memory.current`]: '10485760\n',
  [`/sys/fs/cgroup/system.slice/docker-${ID}.scope/memory.max`]: '268435456\n',
  [`/sys/fs/cgroup/system.slice/docker-${ID}.scope/memory.stat`]: 'anon 5242880\nfile 4096000\nkernel_stack 16384\ninactive_anon 0\nactive_anon 5242880\ninactive_file 1048576\nactive_file 3047424\npgfault 1234\npgmajfault 2\n',
  [`/sys/fs/cgroup/system.slice/docker-${ID}.scope/pids.current`]: '3\n',
};

const at = new Date('2026-12-01T10:00:00.000Z');

describe('readings from cgroupfs', () => {
  it('cgroup v1, cgroupfs driver: CPU in ns (user/system from ticks), memory with the working set the kubelet counts, pids', () => {
    const s = readCgroup({ version: 1, driver: 'cgroupfs', root: '/sys/fs/cgroup' }, ID, tree(V1), at);
    expect(s).toMatchObject({
      read: '2026-12-01T10:00:00.000Z',
      source: 'cgroup',
      cpu_stats: { cpu_usage: { total_usage: 412135245, usage_in_usermode: 310_000_000, usage_in_kernelmode: 90_000_000 } },
      memory_stats: { usage: 21471232, limit: 268435456 },
      pids_stats: { current: 1 },
    });
    // 20 MB written to a file: page cache, mostly inactive, so out of the working set.
    expect(memoryOf(s!)).toMatchObject({ usageBytes: 21471232, workingSetBytes: 21471232 - 19570688, rssBytes: 53248, pageFaults: 1209, majorPageFaults: 1 });
  });

  it('cgroup v2, systemd driver: the same figures from cpu.stat, memory.current and memory.stat', () => {
    const s = readCgroup({ version: 2, driver: 'systemd', root: '/sys/fs/cgroup' }, ID, tree(V2), at);
    expect(s).toMatchObject({
      cpu_stats: { cpu_usage: { total_usage: 2503318000, usage_in_usermode: 2_120_000_000, usage_in_kernelmode: 383_318_000 } },
      memory_stats: { usage: 10485760, limit: 268435456 },
      pids_stats: { current: 3 },
    });
    expect(memoryOf(s!)).toMatchObject({ workingSetBytes: 10485760 - 1048576, rssBytes: 5242880 });
  });

  it('finds Podman\'s cgroups too, and nothing where there is no cgroup (the caller asks the engine)', () => {
    const podman = Object.fromEntries(Object.entries(V2).map(([k, v]) => [k.replace(`system.slice/docker-${ID}.scope`, `machine.slice/libpod-${ID}.scope`), v]));
    expect(readCgroup({ version: 2, driver: 'systemd', root: '/sys/fs/cgroup' }, ID, tree(podman), at)?.memory_stats.usage).toBe(10485760);
    expect(readCgroup({ version: 1, driver: 'cgroupfs', root: '/sys/fs/cgroup' }, ID, tree(V2), at)).toBeUndefined();
    expect(readCgroup({ version: 2, driver: 'cgroupfs', root: '/sys/fs/cgroup' }, 'other', tree(V2), at)).toBeUndefined();
  });

  it('reads a namespace\'s interfaces from /proc/<pid>/net/dev, loopback left out', () => {
    const text = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     840      10    0    0    0     0          0         0      840      10    0    0    0     0       0          0
  eth0: 1234567    4321    1    2    0     0          0         0   765432    2345    3    4    0     0       0          0
`;
    expect(netDev(text)).toEqual({ eth0: { rx_bytes: 1234567, rx_packets: 4321, rx_errors: 1, rx_dropped: 2, tx_bytes: 765432, tx_packets: 2345, tx_errors: 3, tx_dropped: 4 } });
    expect(netDev(undefined)).toBeUndefined();
  });
});
