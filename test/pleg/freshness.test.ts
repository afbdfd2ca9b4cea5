import { describe, expect, it } from 'vitest';
import { lookIsNewer } from '../../src/pleg/freshness.js';
import type { ContainerState, EngineContainer } from '../../src/runtime/observed.js';

// Which read of one container is the newer when a list and the worker's own look were both under
// way: the container's life orders them (made, running, ended), and only where it can.

const rec = (state: ContainerState, engineRestarting?: true): EngineContainer => ({
  kind: 'container',
  id: 'c',
  name: 'c',
  image: 'i',
  labels: {},
  created: 0,
  state,
  ...(state === 'exited' ? { exitCode: 1 } : {}),
  ...(engineRestarting ? { engineRestarting } : {}),
});

const restarting = rec('unknown', true);

describe('lookIsNewer', () => {
  it('takes a look that saw the container further along its life than the list did', () => {
    expect(lookIsNewer(rec('created'), rec('running'))).toBe(true);
    expect(lookIsNewer(rec('created'), rec('exited'))).toBe(true);
    expect(lookIsNewer(rec('running'), rec('exited'))).toBe(true);
  });

  it("keeps the list's word where the look saw it no further: the same stage, or an earlier one", () => {
    for (const s of ['created', 'running', 'exited'] as const) expect(lookIsNewer(rec(s), rec(s))).toBe(false);
    expect(lookIsNewer(rec('running'), rec('created'))).toBe(false);
    expect(lookIsNewer(rec('exited'), rec('created'))).toBe(false);
    expect(lookIsNewer(rec('exited'), rec('running'))).toBe(false);
  });

  it("keeps the list's word where either read is unknown: nothing places it in the container's life", () => {
    for (const s of ['created', 'running', 'exited'] as const) {
      expect(lookIsNewer(rec('unknown'), rec(s))).toBe(false);
      expect(lookIsNewer(rec(s), rec('unknown'))).toBe(false);
    }
  });

  it('places an engine-restarting read after a create only: its runs come round again', () => {
    expect(lookIsNewer(rec('created'), restarting)).toBe(true);
    expect(lookIsNewer(restarting, rec('created'))).toBe(false);
    for (const s of ['running', 'exited'] as const) {
      expect(lookIsNewer(rec(s), restarting)).toBe(false);
      expect(lookIsNewer(restarting, rec(s))).toBe(false);
    }
    expect(lookIsNewer(restarting, restarting)).toBe(false);
    expect(lookIsNewer(rec('unknown'), restarting)).toBe(false);
    expect(lookIsNewer(restarting, rec('unknown'))).toBe(false);
  });
});
