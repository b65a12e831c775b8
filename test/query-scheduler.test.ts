/**
 * `RequestScheduler`: the slots page requests wait for (a p-queue whose concurrency the controller sets),
 * and the room on the wire a request sent again after pushback waits for. Driven with a fixed controller
 * and an injected clock: no network.
 */
import { describe, expect, it } from 'vitest';
import { AdaptiveConcurrency, FixedConcurrency, INITIAL_LIMIT } from '../src/query/concurrency.js';
import { type Permit, PRIORITY_AGAIN, RequestScheduler } from '../src/query/scheduler.js';

describe('RequestScheduler', () => {
  it('gives at most `limit` slots, first come first served, and tells listeners of changes', async () => {
    let now = 0;
    const scheduler = new RequestScheduler(new FixedConcurrency(2), () => now);
    const changes: number[] = [];
    scheduler.onChange((c) => changes.push(c.limit));
    const a = await scheduler.acquire();
    const b = await scheduler.acquire();
    const order: string[] = [];
    const taken = (name: string) => (p: Permit) => {
      order.push(name);
      return p;
    };
    const c = scheduler.acquire().then(taken('c'));
    const d = scheduler.acquire().then(taken('d'));
    await Promise.resolve();
    expect(scheduler.active).toBe(2);
    expect(order).toEqual([]);
    a.congested('throttled');
    expect(changes).toEqual([1]);
    a.release();
    await Promise.resolve();
    expect(order).toEqual([]); // limit 1, and b still holds a slot
    b.release();
    (await c).release();
    (await d).release();
    expect(order).toEqual(['c', 'd']);
    now += 1;
  });

  it('judges a 429 by the requests on the wire when the refused one was sent, not when refused', async () => {
    let now = 0;
    const scheduler = new RequestScheduler(new AdaptiveConcurrency({ initial: 8 }), () => now);
    const permits = await Promise.all(Array.from({ length: 8 }, () => scheduler.acquire()));
    const ended = permits.map((p) => p.sending());
    // Five pages end while the 7th request's refusal is on its way back: 3 on the wire, 8 slots held.
    for (const end of ended.slice(0, 5)) end();
    now += 100;
    // The 8 went out together: the service saw them in any order, so a refusal says 8 were on the wire
    // (not 3, as when it arrived), and a second one of the same burst 7: it accepts 6.
    permits[6]!.congested('throttled');
    expect(scheduler.limit).toBe(7);
    permits[7]!.congested('throttled');
    expect(scheduler.limit).toBe(6);
    // A page waiting out its Retry-After holds its slot but is not on the wire: a request sent then
    // counts only those sent.
    ended[6]!();
    ended[7]!();
    const again = permits[5]!.sending(); // on the wire: the 6th's first request (still out) and this one
    ended[5]!();
    now += 10_000;
    permits[5]!.congested('throttled');
    expect(scheduler.limit).toBe(1); // it went out 2nd on the wire, whatever the 8 slots held
    again();
    for (const p of permits) p.release();
    expect(scheduler.active).toBe(0);
  });

  it('requests sent together are one level: the second one sent, refused, does not cut the limit to 1', async () => {
    // Regression: each request on a connection of its own (new ones a round trip later), the service saw
    // the 8 of a burst in any order and refused the 2nd one sent; judged by its send order (2 on the
    // wire), the limit went to 1 under a cap of 6 (a 500k-row read took 17 s instead of 5).
    let now = 0;
    const scheduler = new RequestScheduler(new AdaptiveConcurrency({ initial: 8 }), () => now);
    const permits = await Promise.all(Array.from({ length: 8 }, () => scheduler.acquire()));
    const ended = permits.map((p) => p.sending());
    now += 80;
    permits[1]!.congested('throttled');
    permits[4]!.congested('throttled');
    expect(scheduler.limit).toBe(6);
    for (const end of ended) end();
    for (const p of permits) p.release();
  });

  it('a request sent again after pushback waits for room on the wire, first come first served', async () => {
    const scheduler = new RequestScheduler(new FixedConcurrency(3));
    const [a, b, c] = await Promise.all([scheduler.acquire(), scheduler.acquire(), scheduler.acquire()]);
    const endA = a!.sending();
    const endB = b!.sending();
    const endC = c!.sending();
    // a and b are refused: the limit halves to 1 (c is still on the wire); both hold their slots.
    a!.congested('throttled');
    b!.congested('throttled');
    endA();
    endB();
    expect(scheduler.limit).toBe(1);
    const order: string[] = [];
    const resentA = a!.resending().then((end) => {
      order.push('a');
      return end;
    });
    const resentB = b!.resending().then((end) => {
      order.push('b');
      return end;
    });
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual([]); // c is on the wire, at the limit
    endC();
    const againA = await resentA;
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['a']); // one place, one request
    againA();
    (await resentB)();
    expect(order).toEqual(['a', 'b']);
    // With room, it goes at once; an aborted wait leaves with the signal's reason.
    (await c!.resending())();
    const held = c!.sending();
    const controller = new AbortController();
    const waiting = a!.resending(controller.signal);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toMatchObject({ code: 'DQS_ABORTED' });
    held();
    for (const p of [a, b, c]) p!.release();
    expect(scheduler.active).toBe(0);
  });

  it('a waiter whose signal aborts leaves the queue with the signal reason', async () => {
    const scheduler = new RequestScheduler(new FixedConcurrency(1));
    const held = await scheduler.acquire();
    const controller = new AbortController();
    const waiting = scheduler.acquire(controller.signal);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toMatchObject({ code: 'DQS_ABORTED' });
    held.release();
    expect(scheduler.active).toBe(0);
    (await scheduler.acquire()).release();
  });

  it('serves a later request of a page already in the window before pages planned after it (priority)', async () => {
    const scheduler = new RequestScheduler(new FixedConcurrency(1));
    const held = await scheduler.acquire();
    const order: string[] = [];
    const planned = scheduler.acquire().then((p) => {
      order.push('planned');
      return p;
    });
    const again = scheduler.acquire(undefined, PRIORITY_AGAIN).then((p) => {
      order.push('again');
      return p;
    });
    held.release();
    (await again).release();
    (await planned).release();
    expect(order).toEqual(['again', 'planned']);
  });

  it('a permit held while its signal aborts keeps its slot until released (p-queue must not free it)', async () => {
    const scheduler = new RequestScheduler(new FixedConcurrency(1));
    const controller = new AbortController();
    const held = await scheduler.acquire(controller.signal);
    controller.abort(new Error('stop'));
    let granted = false;
    const next = scheduler.acquire().then((p) => {
      granted = true;
      return p;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(granted).toBe(false);
    expect(scheduler.active).toBe(1);
    held.release();
    (await next).release();
    expect(scheduler.active).toBe(0);
  });

  it('tells the controller of `planned` pages after holdMs or the first wave, and never after pushback', async () => {
    // A far service's result planned whole in 16 pages: 8 go out at once, the other 8 only after a
    // refusal of the first 8 would have come back (which ends startup: they never go out).
    const planned = (holdMs: number) => {
      const controller = new AdaptiveConcurrency({ far: 8 });
      controller.prime(100, 11);
      const scheduler = new RequestScheduler(controller);
      const changes: number[] = [];
      scheduler.onChange((c) => changes.push(c.limit));
      scheduler.planned(16, holdMs);
      const granted: Permit[] = [];
      for (let i = 0; i < 16; i++) void scheduler.acquire().then((p) => granted.push(p));
      return { scheduler, changes, granted };
    };
    const turn = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const held = planned(60);
    await turn(5);
    expect(held.changes).toEqual([]);
    expect(held.granted).toHaveLength(8);
    await turn(100);
    expect(held.changes).toEqual([16]); // told when it takes effect
    expect(held.granted).toHaveLength(16);
    // Under a cap of 6: two of the first 8 are refused within the hold; the 8 more never go out.
    const capped = planned(60);
    await turn(5);
    for (const p of capped.granted) p.sending();
    capped.granted[6]!.congested('throttled');
    capped.granted[7]!.congested('throttled');
    expect(capped.scheduler.limit).toBe(6);
    await turn(100);
    expect(capped.scheduler.limit).toBe(6);
    expect(capped.granted).toHaveLength(8);
    // An overload (503) in the hold cuts from the 8 in flight, not from 16.
    const overloaded = planned(60);
    await turn(5);
    overloaded.granted[0]!.congested('unavailable');
    await turn(100);
    expect(overloaded.scheduler.limit).toBe(5);
    expect(overloaded.granted).toHaveLength(8);
    // The first wave answered: the hold ends then. One answer does not end it (the request on the
    // connection already open answers sooner than a refusal on a new one comes back).
    const answered = planned(10_000);
    await turn(5);
    answered.granted[0]!.answered();
    await turn(5);
    expect(answered.granted).toHaveLength(8);
    for (const p of answered.granted.slice(1)) p.answered();
    await turn(5);
    expect(answered.granted).toHaveLength(16);
    // Nothing to hold for a near service, nor once the scheduler has given out a slot.
    const near = new AdaptiveConcurrency({ far: 8 });
    near.prime(5, 11);
    const unmoved = new RequestScheduler(near);
    unmoved.planned(16, 1);
    await turn(10);
    expect(unmoved.limit).toBe(INITIAL_LIMIT);
    const far = new AdaptiveConcurrency({ far: 8 });
    far.prime(100, 11);
    const used = new RequestScheduler(far);
    (await used.acquire()).release();
    used.planned(16, 1);
    await turn(10);
    expect(used.limit).toBe(8);
  });

  it('spreads a paced jump of the limit over paceMs, and a refusal meanwhile stops it', async () => {
    // A controller whose limit jumps 2 -> 10 and that paces jumps over 200 ms (a far service's startup):
    // one slot more at once, then one every 25 ms, instead of 8 requests in one burst.
    const controller = {
      limit: 2,
      paceMs: 200,
      started: () => 0,
      succeeded: () => {},
      congested: () => {},
      answered: () => {
        controller.limit = 10;
      },
    };
    const scheduler = new RequestScheduler(controller);
    const granted: Permit[] = [];
    for (let i = 0; i < 10; i++) void scheduler.acquire().then((p) => granted.push(p));
    await new Promise((r) => setTimeout(r, 5));
    expect(granted).toHaveLength(2);
    granted[0]!.answered();
    await new Promise((r) => setTimeout(r, 5));
    expect(granted.length).toBeGreaterThanOrEqual(3);
    expect(granted.length).toBeLessThan(6);
    await new Promise((r) => setTimeout(r, 300));
    expect(granted).toHaveLength(10);
    // A refusal in the middle of a ramp: the limit falls at once, and the ramp does not lift it again.
    controller.limit = 2;
    const again = new RequestScheduler(controller);
    controller.congested = () => {
      controller.limit = 2;
    };
    const more: Permit[] = [];
    for (let i = 0; i < 10; i++) void again.acquire().then((p) => more.push(p));
    await new Promise((r) => setTimeout(r, 5));
    more[0]!.answered();
    await new Promise((r) => setTimeout(r, 40));
    const before = more.length;
    expect(before).toBeLessThan(10);
    more[1]!.congested('throttled');
    await new Promise((r) => setTimeout(r, 300));
    expect(more).toHaveLength(before);
  });
});
