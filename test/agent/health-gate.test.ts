import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HealthGate } from '../../src/agent/health-gate.js';
import type { DesiredPod, Pod } from '../../src/manifest/types.js';

const dirs: string[] = [];
const gates: HealthGate[] = [];
afterEach(() => {
  for (const g of gates.splice(0)) g.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const none = (): undefined => undefined;
const log = { debug: none, info: none, warn: none, error: none };

function declared(v: string, after = '4s'): DesiredPod {
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default', annotations: { 'podrun.io/rollback-after': after } },
    spec: { containers: [{ name: 'app', image: 'busybox', env: [{ name: 'V', value: v }] }] },
  };
  return { key: 'default/web', uid: 'uid-web', pod, origin: { source: 'file:/m/web.yaml', file: '/m/web.yaml', line: 1 } };
}

/** A gate on a state dir of its own, with clocks the test moves. */
function setup(stateDir = mkdtempSync(join(tmpdir(), 'podrun-gate-'))): {
  gate: HealthGate;
  clock: { wall: number; mono: number };
  rolledBack: string[];
  stateDir: string;
} {
  dirs.push(stateDir);
  const clock = { wall: Date.parse('2026-11-30T10:00:00Z'), mono: 1000 };
  const rolledBack: string[] = [];
  const gate = new HealthGate({
    stateDir,
    defaultMs: 0,
    log,
    engineUp: () => true,
    due: none,
    rolledBack: (_p, m) => void rolledBack.push(m),
    clock: { wall: () => clock.wall, mono: () => clock.mono },
  });
  gate.load();
  gates.push(gate);
  return { gate, clock, rolledBack, stateDir };
}

const failing = { ready: false, reason: 'container app: readiness probe failed: no' } as const;

describe('the health gate in the agent', () => {
  it('a deadline longer than a timer can hold does not wake the pod at once, over and over', async () => {
    vi.useFakeTimers();
    try {
      const stateDir = mkdtempSync(join(tmpdir(), 'podrun-gate-'));
      dirs.push(stateDir);
      const woken: string[] = [];
      const gate = new HealthGate({ stateDir, defaultMs: 0, log, engineUp: () => true, due: (uid) => void woken.push(uid), rolledBack: none });
      gates.push(gate);
      const v1 = declared('one', '1000h');
      gate.gate(v1, { version: gate.versionOf(v1), readiness: { ready: true } });
      gate.gate(declared('bad', '1000h'));
      await vi.advanceTimersByTimeAsync(1000);
      expect(woken).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('counts a deadline on a clock that does not jump: a wall clock stepped a day ahead rolls nothing back', () => {
    const { gate, clock, rolledBack } = setup();
    const v1 = declared('one');
    const v2 = declared('bad');
    gate.gate(v1, { version: gate.versionOf(v1), readiness: { ready: true } });
    expect(gate.gate(v2)).toBe(v2);
    clock.wall += 24 * 3600_000; // NTP steps the clock
    clock.mono += 1000;
    expect(gate.gate(v2, { version: gate.versionOf(v2), readiness: failing })).toBe(v2);
    expect(rolledBack).toEqual([]);
    clock.mono += 3000;
    expect(gate.gate(v2, { version: gate.versionOf(v2), readiness: failing }).pod).toBe(v1.pod);
    expect(rolledBack).toEqual([expect.stringContaining('was not Ready within 4s: container app: readiness probe failed: no')]);
  });

  it('after a restart, counts the time already spent when the wall clock says something plausible, and gives the whole deadline again when not', () => {
    const first = setup();
    const v1 = declared('one');
    const v2 = declared('bad');
    first.gate.gate(v1, { version: first.gate.versionOf(v1), readiness: { ready: true } });
    first.gate.gate(v2);
    const since = first.clock.wall;

    // Restarted 3 s later: 1 s of the deadline is left.
    const plausible = setup(first.stateDir);
    plausible.clock.wall = since + 3000;
    expect(plausible.gate.gate(v2, { version: plausible.gate.versionOf(v2), readiness: failing })).toBe(v2);
    plausible.clock.mono += 1000;
    expect(plausible.gate.gate(v2, { version: plausible.gate.versionOf(v2), readiness: failing }).pod).toEqual(v1.pod);

    // Restarted on a box whose clock went back to 1970: the whole 4 s again, not a rollback at once or never.
    const again = setup(mkdtempSync(join(tmpdir(), 'podrun-gate-')));
    again.gate.gate(v1, { version: again.gate.versionOf(v1), readiness: { ready: true } });
    again.gate.gate(v2);
    const rebooted = setup(again.stateDir);
    rebooted.clock.wall = Date.parse('1970-01-01T00:00:10Z');
    expect(rebooted.gate.gate(v2, { version: rebooted.gate.versionOf(v2), readiness: failing })).toBe(v2);
    rebooted.clock.mono += 3999;
    expect(rebooted.gate.gate(v2, { version: rebooted.gate.versionOf(v2), readiness: failing })).toBe(v2);
    rebooted.clock.mono += 1;
    expect(rebooted.gate.gate(v2, { version: rebooted.gate.versionOf(v2), readiness: failing }).pod).toEqual(v1.pod);
  });
});
