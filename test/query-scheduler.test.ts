/**
 * `RequestScheduler`: each page request one p-queue task, the controller's limit the queue's concurrency.
 * Driven with hand-made requests and an injected clock: no network.
 */
import { describe, expect, it } from 'vitest';
import { AdaptiveConcurrency, FixedConcurrency } from '../src/query/concurrency.js';
import { PRIORITY_AGAIN, type RequestHandle, RequestScheduler } from '../src/query/scheduler.js';

/** A request that waits until told: its handle, and functions that read its body or settle it. */
function pending() {
  let handle: RequestHandle | undefined;
  let settle!: (value: string) => void;
  const result = new Promise<string>((r) => {
    settle = r;
  });
  return {
    send: (h: RequestHandle) => {
      handle = h;
      return result;
    },
    get handle() {
      return handle;
    },
    settle,
  };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('RequestScheduler', () => {
  it('runs at most `limit` requests, first come first served, and tells listeners of changes', async () => {
    let now = 0;
    const scheduler = new RequestScheduler(new FixedConcurrency(2), () => now);
    const changes: number[] = [];
    scheduler.onChange((c) => changes.push(c.limit));
    const reqs = [pending(), pending(), pending(), pending()];
    const results = reqs.map((r) => scheduler.request(r.send));
    await turn();
    expect(reqs.map((r) => r.handle !== undefined)).toEqual([true, true, false, false]);
    expect(scheduler.active).toBe(2);
    expect(scheduler.room).toBe(false);
    reqs[0]!.handle!.congested('throttled');
    expect(changes).toEqual([1]);
    reqs[0]!.settle('a');
    await turn();
    expect(reqs[2]!.handle).toBeUndefined(); // limit 1, and b is still out
    reqs[1]!.settle('b');
    await turn();
    expect(reqs[2]!.handle).toBeDefined();
    reqs[2]!.settle('c');
    await turn();
    reqs[3]!.settle('d');
    expect(await Promise.all(results)).toEqual(['a', 'b', 'c', 'd']);
    expect(scheduler.active).toBe(0);
    now += 1;
  });

  it("frees a request's slot once its body is read, before its result settles (the page still decodes)", async () => {
    const scheduler = new RequestScheduler(new FixedConcurrency(1));
    const [a, b] = [pending(), pending()];
    const ra = scheduler.request(a.send);
    const rb = scheduler.request(b.send);
    await turn();
    expect(b.handle).toBeUndefined();
    a.handle!.answered(1000);
    a.handle!.delivered(1e6);
    a.handle!.bodyRead(1e6);
    await turn();
    expect(b.handle).toBeDefined(); // sent while a is still being decoded
    a.settle('a');
    b.settle('b');
    expect([await ra, await rb]).toEqual(['a', 'b']);
  });

  it('judges a 429 by the requests out when the refused one was sent; a burst is one level', async () => {
    let now = 0;
    const c = new AdaptiveConcurrency();
    c.firstPage({ waitMs: 210, bodyMs: 7 }, 0); // 16
    const scheduler = new RequestScheduler(c, () => now);
    // 8 sent together: the service saw them in any order, so the 2nd one sent, refused, says 8 were out.
    const burst = Array.from({ length: 8 }, () => pending());
    const running = burst.map((r) => scheduler.request(r.send));
    await turn();
    now += 80;
    burst[1]!.handle!.congested('throttled');
    expect(scheduler.limit).toBe(7);
    burst[4]!.handle!.congested('throttled'); // a second refusal of the same burst: 7 out, so 6
    expect(scheduler.limit).toBe(6);
    for (const r of burst) r.settle('x');
    await Promise.all(running);
    // Sent on its own later, with 1 out: a refusal of it says 1.
    now += 1000;
    const alone = pending();
    const done = scheduler.request(alone.send);
    await turn();
    alone.handle!.congested('throttled');
    expect(scheduler.limit).toBe(1);
    alone.settle('y');
    await done;
  });

  it('a later request of a page goes before pages planned after it (priority)', async () => {
    const scheduler = new RequestScheduler(new FixedConcurrency(1));
    const held = pending();
    const order: string[] = [];
    const first = scheduler.request(held.send);
    const track = (name: string, priority?: number) =>
      scheduler.request(
        async () => {
          order.push(name);
          return name;
        },
        undefined,
        priority,
      );
    const later = [track('new page'), track('again', PRIORITY_AGAIN)];
    await turn();
    held.settle('held');
    await Promise.all([first, ...later]);
    expect(order).toEqual(['again', 'new page']);
  });

  it("a request aborted while it waits leaves with the signal's reason; once sent, it keeps its slot", async () => {
    const scheduler = new RequestScheduler(new FixedConcurrency(1));
    const held = pending();
    const controller = new AbortController();
    const first = scheduler.request(held.send, controller.signal);
    const waiting = new AbortController();
    const second = scheduler.request(async () => 'never', waiting.signal);
    waiting.abort(new Error('stop'));
    await expect(second).rejects.toMatchObject({ code: 'DQS_ABORTED' });
    // The first is out: its signal is its own to answer, and its slot stays taken until it settles.
    controller.abort(new Error('stop'));
    await turn();
    expect(scheduler.active).toBe(1);
    expect(scheduler.room).toBe(false);
    held.settle('done');
    expect(await first).toBe('done');
    await turn();
    expect(scheduler.active).toBe(0);
    expect(scheduler.room).toBe(true);
  });

  it('calls onRoom listeners when a request ends and when the limit rises', async () => {
    let now = 0;
    const c = new AdaptiveConcurrency();
    const scheduler = new RequestScheduler(
      c,
      () => now,
      () => 0,
    );
    let woken = 0;
    const off = scheduler.onRoom(() => woken++);
    const reqs = Array.from({ length: 4 }, () => pending());
    const running = reqs.map((r) => scheduler.request(r.send));
    await turn();
    expect(scheduler.room).toBe(false);
    now = 100;
    reqs[0]!.handle!.answered(1000); // every slot taken, the loop idle: startup grows
    expect(scheduler.limit).toBe(6);
    await turn();
    expect(woken).toBeGreaterThanOrEqual(1);
    expect(scheduler.room).toBe(true);
    const before = woken;
    for (const r of reqs) r.settle('x');
    await Promise.all(running);
    await turn();
    expect(woken).toBeGreaterThan(before);
    off();
  });
});
