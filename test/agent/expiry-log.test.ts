import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ExpiryLog } from '../../src/agent/expiry-log.js';
import type { Logger } from '../../src/log/logger.js';
import type { SetExpiry } from '../../src/sources/source.js';

describe('the log of expired signed sets', () => {
  let lines: string[];
  let sets: SetExpiry[];
  let watch: ExpiryLog;
  const log: Logger = { debug: () => undefined, info: () => undefined, error: () => undefined, warn: (m) => lines.push(m) };

  beforeEach(() => {
    vi.useFakeTimers({ now: Date.parse('2027-01-01T00:00:00Z') });
    lines = [];
    sets = [];
    watch = new ExpiryLog({ expiries: () => sets, log });
  });
  afterEach(() => {
    watch.stop();
    vi.useRealTimers();
  });

  it('warns once when a set in force expires, naming the source and the time, with no source change to wake it', () => {
    sets = [
      { origin: 'url:https://fleet.example/pods.yaml', expires: new Date('2027-01-01T00:00:30Z'), version: 7 },
      { origin: 'dir:/etc/podrun/a.yaml', expires: new Date('2027-06-01T00:00:00Z') },
    ];
    watch.check();
    vi.advanceTimersByTime(29_000);
    expect(lines).toEqual([]);
    vi.advanceTimersByTime(2_000);
    expect(lines).toEqual([
      'signed set url:https://fleet.example/pods.yaml (version 7) expired at 2027-01-01T00:00:30.000Z: its pods keep running (expiry is reported, not enforced) until a newer signed set is published',
    ]);
    // Polls, source changes and time passing say nothing more.
    for (let i = 0; i < 20; i++) {
      watch.check();
      vi.advanceTimersByTime(60_000);
    }
    expect(lines).toHaveLength(1);
  });

  it('warns at once for a set already expired when the agent starts, and again only for a newer set that expires', () => {
    sets = [{ origin: 'url:u', expires: new Date('2026-12-31T00:00:00Z'), version: 1 }];
    watch.check();
    watch.check();
    expect(lines).toEqual([expect.stringContaining('signed set url:u (version 1) expired at 2026-12-31T00:00:00.000Z')]);
    sets = [{ origin: 'url:u', expires: new Date('2027-01-01T00:01:00Z'), version: 2 }];
    watch.check();
    vi.advanceTimersByTime(61_000);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain('signed set url:u (version 2) expired at 2027-01-01T00:01:00.000Z');
  });

  it('says nothing after stop', () => {
    sets = [{ origin: 'url:u', expires: new Date('2027-01-01T00:00:10Z') }];
    watch.check();
    watch.stop();
    vi.advanceTimersByTime(20_000);
    expect(lines).toEqual([]);
  });
});
