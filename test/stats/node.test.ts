import { describe, expect, it } from 'vitest';
import { DEFAULT_EVICTION_HARD, nodeConditions, parseEvictionThresholds, type Observations } from '../../src/stats/node.js';

const Gi = 2 ** 30;
const healthy: Observations = {
  'memory.available': { available: 8 * Gi, capacity: 16 * Gi },
  'nodefs.available': { available: 50 * Gi, capacity: 100 * Gi },
  'nodefs.inodesFree': { available: 5e6, capacity: 6e6 },
  'imagefs.available': { available: 50 * Gi, capacity: 100 * Gi },
  'imagefs.inodesFree': { available: 5e6, capacity: 6e6 },
  'pid.available': { available: 4e6, capacity: 4194304 },
};

describe('eviction thresholds', () => {
  it('reads the kubelet form, quantities and percentages', () => {
    expect([...parseEvictionThresholds(DEFAULT_EVICTION_HARD)]).toEqual([
      ['memory.available', { quantity: 100 * 2 ** 20 }],
      ['nodefs.available', { percent: 10 }],
      ['nodefs.inodesFree', { percent: 5 }],
      ['imagefs.available', { percent: 15 }],
      ['imagefs.inodesFree', { percent: 5 }],
    ]);
    expect(() => parseEvictionThresholds('memory.free<1Gi')).toThrow('unknown eviction signal "memory.free"');
    expect(() => parseEvictionThresholds('memory.available>1Gi')).toThrow('invalid eviction threshold "memory.available>1Gi"');
    expect(() => parseEvictionThresholds('nodefs.available<200%')).toThrow('invalid percentage');
    expect(() => parseEvictionThresholds('memory.available<lots')).toThrow('invalid quantity');
  });
});

describe('node conditions', () => {
  const t = parseEvictionThresholds(`${DEFAULT_EVICTION_HARD},pid.available<1000`);

  it('are Ready and without pressure on a healthy node', () => {
    const c = nodeConditions(healthy, t, true, 'T1');
    expect(c.map((x) => [x.type, x.status, x.reason])).toEqual([
      ['Ready', 'True', 'KubeletReady'],
      ['MemoryPressure', 'False', 'KubeletHasSufficientMemory'],
      ['DiskPressure', 'False', 'KubeletHasNoDiskPressure'],
      ['PIDPressure', 'False', 'KubeletHasSufficientPID'],
    ]);
  });

  it('turn on the pressure each signal decides, and Ready off without the engine', () => {
    const low: Observations = {
      ...healthy,
      'memory.available': { available: 50 * 2 ** 20, capacity: 16 * Gi },
      'imagefs.available': { available: 10 * Gi, capacity: 100 * Gi },
      'pid.available': { available: 500, capacity: 4194304 },
    };
    const c = nodeConditions(low, t, false, 'T1');
    expect(c.map((x) => [x.type, x.status])).toEqual([
      ['Ready', 'False'],
      ['MemoryPressure', 'True'],
      ['DiskPressure', 'True'],
      ['PIDPressure', 'True'],
    ]);
    expect(c[2]?.message).toBe('node has disk pressure (imagefs.available below its threshold)');
    expect(c[0]?.message).toContain('container runtime is down');
  });

  it('keep lastTransitionTime while the status holds, and move it when it changes', () => {
    const first = nodeConditions(healthy, t, true, 'T1');
    const same = nodeConditions(healthy, t, true, 'T2', first);
    expect(same.every((c) => c.lastTransitionTime === 'T1' && c.lastHeartbeatTime === 'T2')).toBe(true);
    const changed = nodeConditions({ ...healthy, 'memory.available': { available: 1, capacity: 16 * Gi } }, t, true, 'T3', same);
    expect(changed.find((c) => c.type === 'MemoryPressure')?.lastTransitionTime).toBe('T3');
    expect(changed.find((c) => c.type === 'Ready')?.lastTransitionTime).toBe('T1');
  });
});
