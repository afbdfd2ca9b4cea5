import { describe, expect, it, vi } from 'vitest';
import { Cancelled, HOLD_BACK_MS, Slots } from '../../src/runtime/slots.js';

/** A call that runs until the test ends it. */
function held(): { promise: Promise<void>; end: () => void } {
  let end = (): void => undefined;
  const promise = new Promise<void>((r) => (end = r));
  return { promise, end };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('engine slots', () => {
  it('a removal runs while creates hold every slot, goes before creates that wait, and holds new creates back while it runs', async () => {
    const slots = new Slots(2);
    const order: string[] = [];
    const creates = [held(), held()];
    const running = creates.map((c, i) => slots.run(async () => {
      order.push(`create ${i}`);
      await c.promise;
    }));
    const waitingCreate = slots.run(async () => void order.push('create 2'));
    await tick();
    expect(order).toEqual(['create 0', 'create 1']);
    // Every slot is a create's: the removal has the one beyond the limit and does not wait.
    const removal = held();
    const removing = slots.run(async () => {
      order.push('remove 0');
      await removal.promise;
    }, { urgent: true });
    await tick();
    expect(order).toEqual(['create 0', 'create 1', 'remove 0']);
    expect(slots.state).toEqual({ active: 3, waiting: 1 });
    // A second removal waits, and when a create ends it goes before the create that waited first.
    const secondRemoval = slots.run(async () => void order.push('remove 1'), { urgent: true });
    creates[0]!.end();
    await tick();
    await tick();
    expect(order).toEqual(['create 0', 'create 1', 'remove 0', 'remove 1']);
    // Slots are free, but no create begins while a removal runs (the engine's queues stay clear for it).
    creates[1]!.end();
    await tick();
    await tick();
    expect(order).toEqual(['create 0', 'create 1', 'remove 0', 'remove 1']);
    removal.end();
    await Promise.all([...running, removing, secondRemoval, waitingCreate]);
    expect(order).toEqual(['create 0', 'create 1', 'remove 0', 'remove 1', 'create 2']);
    expect(slots.state).toEqual({ active: 0, waiting: 0 });
  });

  it('never runs more than the limit of ordinary work', async () => {
    const slots = new Slots(3);
    let now = 0;
    let most = 0;
    await Promise.all(Array.from({ length: 20 }, () => slots.run(async () => {
      most = Math.max(most, ++now);
      await tick();
      now--;
    })));
    expect(most).toBe(3);
  });

  it('a wait given up by its signal leaves the queue with Cancelled, and the slot goes to the next', async () => {
    const slots = new Slots(1);
    const first = held();
    const running = slots.run(() => first.promise);
    const abort = new AbortController();
    const cancelled = slots.run(async () => 'ran', { signal: abort.signal });
    const next = slots.run(async () => 'next');
    abort.abort();
    await expect(cancelled).rejects.toBeInstanceOf(Cancelled);
    expect(slots.state).toEqual({ active: 1, waiting: 1 });
    first.end();
    await running;
    await expect(next).resolves.toBe('next');
    // Already aborted: refused before it waits at all.
    await expect(slots.run(async () => 'ran', { signal: abort.signal })).rejects.toBeInstanceOf(Cancelled);
    expect(slots.state).toEqual({ active: 0, waiting: 0 });
  });

  it('a removal the engine hangs on holds other work back for HOLD_BACK_MS only', async () => {
    vi.useFakeTimers();
    const slots = new Slots(2);
    const hung = held();
    const removing = slots.run(() => hung.promise, { urgent: true });
    let created = false;
    const creating = slots.run(async () => void (created = true));
    await vi.advanceTimersByTimeAsync(HOLD_BACK_MS - 1);
    expect(created).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(created).toBe(true);
    hung.end();
    await Promise.all([removing, creating]);
    expect(slots.state).toEqual({ active: 0, waiting: 0 });
    vi.useRealTimers();
  });
});
