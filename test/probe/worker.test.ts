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

  it("keeps one tick waiting while a probe runs, as Go's ticker: a hung probe slower than its period fails at the kubelet's time", async () => {
    // kubeadm's etcd: timeout 15 s, period 10 s, failureThreshold 8; the etcd hangs.
    const starts: number[] = [];
    const exec = async (_id: string, _cmd: string[], timeoutMs: number): Promise<'timeout'> => {
      starts.push(Date.now() - 1_000_000);
      await new Promise((r) => setTimeout(r, timeoutMs));
      return 'timeout';
    };
    let failedAt: number | undefined;
    const m = new ProbeManager(exec, (e) => {
      if (!e.ok) failedAt ??= Date.now() - 1_000_000;
    });
    m.sync('u', [
      {
        uid: 'u',
        namespace: 'n',
        pod: 'p',
        containerId: 'x',
        defaultHost: '127.0.0.1',
        container: container({ periodSeconds: 10, timeoutSeconds: 15, failureThreshold: 8 }),
      },
    ]);
    await vi.advanceTimersByTimeAsync(200_000);
    m.stop();
    // Each probe starts as the last ends (the tick that fell meanwhile was waiting): 8 × 15 s.
    expect(starts).toEqual([0, 15_000, 30_000, 45_000, 60_000, 75_000, 90_000, 105_000]);
    expect(failedAt).toBe(120_000);
  });

  it('keeps one tick at most: those after it that fell while a probe ran are dropped', async () => {
    // One probe of 25 s (ticks at 10 s and 20 s fall while it runs), then quick ones.
    const starts: number[] = [];
    const exec = async (): Promise<{ exitCode: number; output: string }> => {
      starts.push(Date.now() - 1_000_000);
      if (starts.length === 1) await new Promise((r) => setTimeout(r, 25_000));
      return { exitCode: 0, output: '' };
    };
    const m = new ProbeManager(exec, () => undefined);
    m.sync('u', [
      { uid: 'u', namespace: 'n', pod: 'p', containerId: 'x', defaultHost: '127.0.0.1', container: container({ periodSeconds: 10, timeoutSeconds: 30 }) },
    ]);
    await vi.advanceTimersByTimeAsync(45_000);
    m.stop();
    // The 10 s tick runs at 25 s; the 20 s one was dropped; then the grid again.
    expect(starts).toEqual([0, 25_000, 30_000, 40_000]);
  });

  it('a failure whose telling throws still counts toward the kill, and is logged', async () => {
    const errors: string[] = [];
    const events: ProbeEvent[] = [];
    const exec = async (): Promise<{ exitCode: number; output: string }> => ({ exitCode: 1, output: 'down' });
    const log = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: (m: string) => errors.push(m) };
    const m = new ProbeManager(
      exec,
      (e) => events.push(e),
      undefined,
      log,
      () => {
        throw new Error('the event ring broke');
      },
    );
    m.sync('u', [
      { uid: 'u', namespace: 'n', pod: 'p', containerId: 'x', defaultHost: '127.0.0.1', container: container({ periodSeconds: 1, failureThreshold: 3 }) },
    ]);
    await vi.advanceTimersByTimeAsync(2500);
    m.stop();
    expect(events.map((e) => [e.kind, e.ok])).toEqual([['liveness', false]]);
    expect(errors).toEqual(Array(3).fill('pod n/p: container c liveness probe: the event ring broke'));
  });
});
