import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Container } from '../../src/manifest/types.js';
import { ProbeManager, type ProbeEvent } from '../../src/probe/manager.js';

// The probe worker's clock, after pkg/kubelet/prober/worker.go, with fake timers.
beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(1_000_000);
});
afterEach(() => vi.useRealTimers());

function container(probe: Record<string, unknown>): Container {
  return { name: 'c', image: 'i', livenessProbe: { exec: { command: ['check'] }, ...probe } } as Container;
}

describe('the probe worker', () => {
  it('probes on a ticker: a slow probe does not stretch the period', async () => {
    const starts: number[] = [];
    const exec = async (): Promise<{ exitCode: number; output: string }> => {
      starts.push(Date.now() - 1_000_000);
      await new Promise((r) => setTimeout(r, 700));
      return { exitCode: 0, output: '' };
    };
    const m = new ProbeManager(exec, () => undefined);
    m.sync('u', [
      { uid: 'u', namespace: 'n', pod: 'p', containerId: 'x', defaultHost: '127.0.0.1', container: container({ periodSeconds: 1, timeoutSeconds: 5 }) },
    ]);
    await vi.advanceTimersByTimeAsync(3500);
    m.stop();
    expect(starts).toEqual([0, 1000, 2000, 3000]);
  });

  it("counts initialDelaySeconds from the container's start, not from when the worker was made", async () => {
    const starts: number[] = [];
    const exec = async (): Promise<{ exitCode: number; output: string }> => {
      starts.push(Date.now() - 1_000_000);
      return { exitCode: 0, output: '' };
    };
    const m = new ProbeManager(exec, () => undefined);
    // Started 8 s ago (an agent restart adopting it), initial delay 10 s: first probe in 2 s.
    m.sync('u', [
      {
        uid: 'u',
        namespace: 'n',
        pod: 'p',
        containerId: 'x',
        defaultHost: '127.0.0.1',
        startedAt: 1_000_000 - 8000,
        container: container({ periodSeconds: 5, initialDelaySeconds: 10 }),
      },
    ]);
    await vi.advanceTimersByTimeAsync(8000);
    m.stop();
    expect(starts).toEqual([2000, 7000]);
  });

  it('throws away prober errors instead of counting them as failures', async () => {
    let calls = 0;
    const events: ProbeEvent[] = [];
    const exec = async (): Promise<{ exitCode: number; output: string }> => {
      calls++;
      throw new Error('engine: exec create: 500');
    };
    const m = new ProbeManager(exec, (e) => events.push(e));
    m.sync('u', [
      { uid: 'u', namespace: 'n', pod: 'p', containerId: 'x', defaultHost: '127.0.0.1', container: container({ periodSeconds: 1, failureThreshold: 1 }) },
    ]);
    await vi.advanceTimersByTimeAsync(3500);
    expect(m.state('x')?.failed).toBeUndefined();
    m.stop();
    expect(calls).toBe(4);
    expect(events).toEqual([]);
  });

  it('a report that throws is logged and probing goes on, not an unhandled rejection', async () => {
    let calls = 0;
    const errors: string[] = [];
    const exec = async (): Promise<{ exitCode: number; output: string }> => {
      calls++;
      return { exitCode: 1, output: 'down' };
    };
    const log = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: (m: string) => errors.push(m) };
    const m = new ProbeManager(
      exec,
      () => {
        throw new Error('the agent broke');
      },
      undefined,
      log,
    );
    m.sync('u', [
      {
        uid: 'u',
        namespace: 'n',
        pod: 'p',
        containerId: 'x',
        defaultHost: '127.0.0.1',
        container: { name: 'c', image: 'i', readinessProbe: { exec: { command: ['check'] }, periodSeconds: 1, failureThreshold: 1 } } as Container,
      },
    ]);
    await vi.advanceTimersByTimeAsync(3500);
    m.stop();
    expect(calls).toBe(4);
    expect(errors[0]).toBe('pod n/p: container c readiness probe: the agent broke');
  });
});
