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
  it('removals run while creates hold every slot, in a lane of their own, and hold new creates back while they run', async () => {
    const slots = new Slots(1);
    const order: string[] = [];
    const create = held();
    const running = slots.run(async () => {
      order.push('create 0');
      await create.promise;
    });
    const waitingCreate = slots.run(async () => void order.push('create 1'));
    // Every ordinary slot is a create's: removals do not wait for it, four at once (4 × the limit).
    const removals = [held(), held(), held(), held()];
    const removing = removals.map((r, i) =>
      slots.run(
        async () => {
          order.push(`remove ${i}`);
          await r.promise;
        },
        { urgent: true },
      ),
    );
    const fifth = slots.run(async () => void order.push('remove 4'), { urgent: true });
    await tick();
    expect(order).toEqual(['create 0', 'remove 0', 'remove 1', 'remove 2', 'remove 3']);
    // A removal ends: the fifth goes before the create that waited first.
    removals[0]!.end();
    await tick();
    await tick();
    expect(order.slice(5)).toEqual(['remove 4']);
    // The create's slot is free, but no create begins while removals run.
    create.end();
    await tick();
    await tick();
    expect(order).not.toContain('create 1');
    for (const r of removals) r.end();
    await Promise.all([running, ...removing, fifth, waitingCreate]);
    expect(order.at(-1)).toBe('create 1');
    expect(slots.state).toEqual({ active: 0, waiting: 0 });
  });

  it("a deletion's last look runs while removals fill their lane, and holds new creates back while it runs", async () => {
    const slots = new Slots(1);
    const order: string[] = [];
    const removals = [held(), held(), held(), held()];
    const removing = removals.map((r) => slots.run(() => r.promise, { urgent: true }));
    // The lane (4 × the limit) is full: a fifth removal waits, a look does not.
    const fifth = slots.run(async () => void order.push('remove 4'), { urgent: true });
    const look = held();
    const looking = slots.run(
      async () => {
        order.push('look');
        await look.promise;
      },
      { urgent: true, look: true },
    );
    await tick();
    expect(order).toEqual(['look']);
    // The removals end; the create waits for the look, the fifth removal does not.
    for (const r of removals) r.end();
    const create = slots.run(async () => void order.push('create'));
    await Promise.all(removing);
    await tick();
    await tick();
    expect(order).toEqual(['look', 'remove 4']);
    look.end();
    await Promise.all([looking, fifth, create]);
    expect(order).toEqual(['look', 'remove 4', 'create']);
    expect(slots.state).toEqual({ active: 0, waiting: 0 });
  });

  it('counts a slot granted from the queue at once: the lane holds 4 × the limit, and no create slips in beside the removals', async () => {
    const slots = new Slots(1);
    let now = 0;
    let most = 0;
    const create = held();
    const creating = slots.run(() => create.promise);
    const removals = Array.from({ length: 12 }, () => held());
    const removing = removals.map((r) =>
      slots.run(
        async () => {
          most = Math.max(most, ++now);
          await r.promise;
          now--;
        },
        { urgent: true },
      ),
    );
    let created = false;
    const waitingCreate = slots.run(async () => void (created = true));
    await tick();
    expect(now).toBe(4);
    // Four removals and the create end together: four more removals begin, not all eight, and the
    // waiting create does not begin while they run.
    for (const r of removals.slice(0, 4)) r.end();
    create.end();
    for (let i = 0; i < 5; i++) await tick();
    expect(now).toBe(4);
    expect(created).toBe(false);
    for (const r of removals) r.end();
    await Promise.all([creating, ...removing, waitingCreate]);
    expect(most).toBe(4);
    expect(created).toBe(true);
    expect(slots.state).toEqual({ active: 0, waiting: 0 });
  });

  it('never runs more than the limit of ordinary work', async () => {
    const slots = new Slots(3);
    let now = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 20 }, () =>
        slots.run(async () => {
          most = Math.max(most, ++now);
          await tick();
          now--;
        }),
      ),
    );
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
    const slots = new Slots(1);
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
