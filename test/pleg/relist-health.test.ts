import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Logger } from '../../src/log/logger.js';
import { PodCache } from '../../src/pleg/cache.js';
import { goDuration, RelistHealth, relistThresholdFor, RELIST_THRESHOLD_MS } from '../../src/pleg/relist-health.js';
import { FakeEngine } from '../fakes/fake-engine.js';

// The kubelet's PLEG health check (generic.go Healthy) on a clock the test moves: unhealthy before
// any relist succeeded, and once the last successful relist began more than 3 min ago, whether
// none ran since or the one under way takes that long.

const dirs: string[] = [];
const caches: PodCache[] = [];
afterEach(() => {
  for (const c of caches.splice(0)) c.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the relist health check', () => {
  it('says why, as the kubelet does: none yet, then the age of the last against the threshold', () => {
    let now = 1000;
    const h = new RelistHealth(RELIST_THRESHOLD_MS, () => now);
    expect(h.problem()).toBe('pleg has yet to be successful');
    h.listed(now);
    now += RELIST_THRESHOLD_MS;
    expect(h.problem()).toBeUndefined();
    now += 1;
    expect(h.problem()).toBe('pleg was last seen active 3m0.001s ago; threshold is 3m0s');
    // A relist that began earlier but finished later does not make the check younger.
    h.listed(1000 - 5);
    expect(h.problem()).toMatch(/last seen active 3m0.001s/);
    expect(goDuration(45_000)).toBe('45s');
    expect(goDuration(3_725_500)).toBe('1h2m5.5s');
  });

  it("keeps the kubelet's 3 min, or more when podrun relists more seldom than that", () => {
    expect(relistThresholdFor(1000)).toBe(RELIST_THRESHOLD_MS);
    expect(relistThresholdFor(60_000)).toBe(RELIST_THRESHOLD_MS);
    expect(relistThresholdFor(10 * 60_000)).toBeGreaterThan(2 * 10 * 60_000);
  });

  it('a cache whose relist hangs turns unhealthy past the threshold, and a relist that took too long leaves it so until a quick one', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'podrun-relist-health-'));
    dirs.push(stateDir);
    const engine = new FakeEngine({ stateDir });
    let now = 0;
    const said: string[] = [];
    const log: Logger = { warn: (m) => said.push(m), info: (m) => said.push(m), debug: () => undefined, error: () => undefined };
    const cache = new PodCache(engine, () => undefined, { relistMs: 60_000, clock: () => now, log });
    caches.push(cache);
    await cache.start();
    expect(cache.judgeHealth()).toBeUndefined();

    let release!: () => void;
    engine.listHold = new Promise<void>((r) => (release = r));
    const slow = cache.relist();
    now += 2 * 60_000;
    expect(cache.judgeHealth()).toBeUndefined();
    now += 60_000 + 1;
    expect(cache.judgeHealth()).toBe('pleg was last seen active 3m0.001s ago; threshold is 3m0s');
    now += 5000;
    expect(cache.judgeHealth()).toBe('pleg was last seen active 3m5.001s ago; threshold is 3m0s');
    // The slow relist ends: it began 3 min ago, so it does not make the cache healthy.
    engine.listHold = undefined;
    release();
    await slow;
    expect(cache.judgeHealth()).toMatch(/^pleg was last seen active/);
    await cache.relist();
    expect(cache.judgeHealth()).toBeUndefined();
    // Said once as it turned, and once as it came back.
    expect(said).toEqual(['PLEG is not healthy: pleg was last seen active 3m0.001s ago; threshold is 3m0s', 'PLEG is healthy again']);

    engine.down = true;
    engine.dropEvents();
    // The engine unreachable is its own answer (the relist's age says nothing then).
    expect(cache.judgeHealth()).toBe('engine unreachable: fake at fake://: the fake event stream ended');
  });
});
