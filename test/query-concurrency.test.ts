/**
 * The adaptive concurrency controller against simulated services on a simulated clock: deterministic,
 * no timers, no network. Each simulated service answers a request after a delay that depends on how many
 * are in flight, the way a real one does (latency plus bandwidth shared by the requests in flight, or a
 * CPU that serves one at a time, or a cap on requests in flight answered 429).
 */
import { describe, expect, it } from 'vitest';
import {
  AdaptiveConcurrency,
  FAR_ANSWER_MS,
  FixedConcurrency,
  INITIAL_LIMIT,
} from '../src/query/concurrency.js';

interface Service {
  /** Ms until the answer of a request started with `inFlight` requests (itself included) in flight. */
  duration(inFlight: number, now: number): number;
  /** Refuses a request (429) when this many are in flight (itself included). */
  refuses?(inFlight: number, now: number): boolean;
  /** Ms until an accepted request's answer headers come (the controller is told: `answered`). */
  readonly firstByte?: number;
}

interface Run {
  limits: { at: number; limit: number }[];
  refusedAt: number[];
  bytesPerMs: number;
  finishedAt: number;
  requests: number;
}

const PAGE = 2_000_000;

/**
 * Reads `pages` pages through the controller. A refused request is answered 429 after 40 ms and, as the
 * client does, asked again after the `Retry-After` (1 s) under the same slot.
 */
function simulate(
  controller: AdaptiveConcurrency | FixedConcurrency,
  service: Service,
  pages: number,
  consumer: { readonly holds?: (now: number) => boolean } = {},
): Run {
  let now = 0;
  let started = 0;
  let done = 0;
  let requests = 0;
  // `level`: requests at the server when it was sent, itself included (what the scheduler reports for a 429).
  type Event = { seq: number; at: number; kind: 'done' | 'refused' | 'retry' | 'answered'; level: number };
  const events: Event[] = [];
  let inFlight = 0; // requests holding a slot (a refused one waiting for its retry included)
  let atServer = 0;
  const limits: Run['limits'] = [{ at: 0, limit: controller.limit }];
  const refusedAt: number[] = [];
  const send = (seq: number) => {
    atServer++;
    requests++;
    const refused = service.refuses?.(atServer, now) ?? false;
    events.push({
      seq,
      at: now + (refused ? 40 : service.duration(atServer, now)),
      kind: refused ? 'refused' : 'done',
      level: atServer,
    });
    if (!refused && service.firstByte !== undefined) {
      events.push({ seq, at: now + service.firstByte, kind: 'answered', level: atServer });
    }
  };
  while (done < pages) {
    while (inFlight < controller.limit && started < pages) {
      inFlight++;
      started++;
      send(controller.started(now));
    }
    // The consumer waits for the next page, unless it is what holds delivery back (pages wait for it).
    if (!consumer.holds?.(now) && 'starved' in controller) controller.starved();
    events.sort((a, b) => a.at - b.at);
    const event = events.shift()!;
    now = event.at;
    if (event.kind === 'answered') {
      if ('answered' in controller) controller.answered(event.seq, now);
    } else if (event.kind === 'retry') send(event.seq);
    else if (event.kind === 'refused') {
      atServer--;
      refusedAt.push(now);
      controller.congested('throttled', event.level, now);
      events.push({ seq: event.seq, at: now + 1000, kind: 'retry', level: 0 });
    } else {
      atServer--;
      inFlight--;
      controller.succeeded(event.seq, PAGE, now);
      done++;
    }
    if (limits.at(-1)!.limit !== controller.limit) limits.push({ at: now, limit: controller.limit });
  }
  return { limits, refusedAt, bytesPerMs: (pages * PAGE) / now, finishedAt: now, requests };
}

/**
 * The WAN: 40 ms away, 230 ms to run a page, 25 MB/s per connection: 350 ms a page, until the
 * 100 MB/s in all are used (17.5 pages in flight); beyond that requests queue for the bandwidth.
 */
const wan: Service = { duration: (n) => Math.max(40 + 230 + PAGE / 25_000, (n * PAGE) / 100_000) };
/** Loopback on a busy machine: one CPU serves the pages one after another, 8 ms each. */
const cpuBound: Service = { duration: (n) => 8 * n };

const maxLimit = (run: Run) => Math.max(...run.limits.map((l) => l.limit));
const lastLimit = (run: Run) => run.limits.at(-1)!.limit;

describe('AdaptiveConcurrency', () => {
  it('grows on a slow link until the bandwidth is used, then settles near the bandwidth-delay product', () => {
    const run = simulate(new AdaptiveConcurrency(), wan, 400);
    expect(maxLimit(run)).toBeGreaterThanOrEqual(18);
    // 100 MB/s is 100_000 bytes per ms; startup included, >= 80 % of it.
    expect(run.bytesPerMs).toBeGreaterThan(0.8 * 100_000);
    // Not parked at the maximum: 17.5 in flight fill the link, more only queue (memory, no gain).
    expect(lastLimit(run)).toBeGreaterThanOrEqual(17);
    expect(lastLimit(run)).toBeLessThanOrEqual(32);
  });

  it('does not grow while the consumer, not the limit, holds requests back (a client warming up)', () => {
    // Loopback in a fresh process: one CPU serves the pages one after another, and rounds get faster by
    // themselves as the code warms up (30 ms a page, then 8). The consumer never waits for a page:
    // growing would only put pages in flight that wait to be decoded.
    const controller = new AdaptiveConcurrency();
    const warming: Service = { duration: (n, now) => n * (now < 300 ? 30 : 8) };
    const run = simulate(controller, warming, 200, { holds: () => true });
    // Where it starts, then the measured product (a probe a quarter above it stays below the start).
    expect(maxLimit(run)).toBe(INITIAL_LIMIT);
    expect(lastLimit(run)).toBeLessThan(INITIAL_LIMIT);
    // The same service with a consumer that waits for pages: startup takes the faster rounds for the link's.
    const bound = simulate(new AdaptiveConcurrency(), warming, 200);
    expect(maxLimit(bound)).toBeGreaterThanOrEqual(2 * INITIAL_LIMIT);
  });

  it('does not grow while the process is busy: its own CPU, not the link, holds delivery back', () => {
    // The warming service and a consumer that waits for pages, as above, but the event loop is 95 % busy
    // in every round (decoding on loopback): growth stops there. At 50 % it grows as on a link.
    const warming: Service = { duration: (n, now) => n * (now < 300 ? 30 : 8) };
    const busy = simulate(new AdaptiveConcurrency({ busy: () => 0.95 }), warming, 200);
    expect(maxLimit(busy)).toBe(INITIAL_LIMIT);
    const idle = simulate(new AdaptiveConcurrency({ busy: () => 0.5 }), warming, 200);
    expect(maxLimit(idle)).toBeGreaterThanOrEqual(2 * INITIAL_LIMIT);
  });

  it('a busy process on a near service ends startup at its first round, not at the end of its warm-up', () => {
    // Loopback warming up (60 ms a page, halved every 150 ms down to 8) with a consumer that waits, the event
    // loop 95 % busy (decoding): each round faster by itself kept startup, and its 4 pages decoded at
    // once, for the whole warm-up (the first ~1 s of the loopback IPC export: its peak RSS, issue #33).
    // The CPU limits: the measured product reads as fast (one CPU serves the pages), fewer pages alive.
    const warming: Service = { duration: (n, now) => n * Math.max(8, 60 * 2 ** (-now / 150)) };
    const controller = new AdaptiveConcurrency({ busy: () => 0.95 });
    const busy = simulate(controller, warming, 200);
    const limitAt = (run: Run, t: number) => run.limits.filter((l) => l.at <= t).at(-1)!.limit;
    expect(limitAt(busy, 250)).toBeLessThan(INITIAL_LIMIT);
    expect(controller.phase).toBe('steady');
    expect(maxLimit(busy)).toBe(INITIAL_LIMIT);
    const idle = simulate(new AdaptiveConcurrency({ busy: () => 0.5 }), warming, 200);
    expect(busy.finishedAt / idle.finishedAt).toBeLessThan(1.05);
  });

  it('answers awaited while the event loop was busy do not grow a far startup (they may be late for that)', () => {
    // Primed far (a loaded machine made a loopback emulator's first answers slow), answers after 270 ms:
    // with the loop 95 % busy meanwhile, their lateness may be the client's own; with it 10 % busy, the
    // service's: startup grows per answer as before.
    const run = (share: number) => {
      const c = new AdaptiveConcurrency({ far: 8, busy: () => share, loopActive: (now) => share * now });
      c.prime(100, 40);
      return simulate(c, { ...wan, firstByte: 270 }, 60);
    };
    const busy = run(0.95);
    const idle = run(0.1);
    const limitAt = (r: Run, t: number) => r.limits.filter((l) => l.at <= t).at(-1)!.limit;
    expect(limitAt(busy, 1000)).toBe(8);
    expect(limitAt(idle, 300)).toBeGreaterThanOrEqual(12);
  });

  it("a far service's startup goes on in a busy process: its answers pace it", () => {
    const far = new AdaptiveConcurrency({ far: 8, busy: () => 0.95 });
    far.prime(100, 40);
    const run = simulate(far, { ...wan, firstByte: 270 }, 60);
    expect(maxLimit(run)).toBeGreaterThanOrEqual(16);
  });

  it('a fixed 2 on the same link is far slower (the reason for adapting)', () => {
    const adaptive = simulate(new AdaptiveConcurrency(), wan, 400);
    const fixed = simulate(new FixedConcurrency(2), wan, 400);
    expect(fixed.finishedAt / adaptive.finishedAt).toBeGreaterThan(4);
  });

  it('holds on a fast link where more requests only queue: comes back down, does not climb', () => {
    const controller = new AdaptiveConcurrency();
    const run = simulate(controller, cpuBound, 400);
    expect(maxLimit(run)).toBeLessThanOrEqual(16);
    expect(lastLimit(run)).toBeLessThanOrEqual(8);
    expect(controller.phase).toBe('steady');
  });

  it('backs off on 429 to what the service accepts, and keeps refusals rare after the first second', () => {
    const cap = 6;
    const run = simulate(new AdaptiveConcurrency(), { ...wan, refuses: (n) => n > cap }, 400);
    expect(lastLimit(run)).toBeLessThanOrEqual(cap);
    const late = run.refusedAt.filter((t) => t > 1000).length;
    expect(late / run.requests).toBeLessThan(0.05);
  });

  it('a hard cap answered 429 costs few refusals: the overshoot of startup and rare probes', () => {
    const cap = 6;
    const run = simulate(new AdaptiveConcurrency(), { ...wan, refuses: (n) => n > cap }, 400);
    const fixed = simulate(new FixedConcurrency(cap), { ...wan, refuses: (n) => n > cap }, 400);
    // Startup overshoots (8 sent at once: the 7th and 8th refused, and the one sent 7th sets the ceiling
    // to 6, so their retries are not refused again); then a probe above the ceiling once in 32 rounds
    // (~12 s here). Here: 6 refusals (2 of startup, 4 of the probe: the simulated service answers the
    // pages of one round at one instant, so the probe's round sends them all while 7 are on the wire)
    // and 1.04x the fixed 6's time. Judging a 429 by the requests in flight when it *arrived* cost 11
    // refusals and 1.09x: pages that ended meanwhile made the cut too deep. A later refusal of the
    // startup overshoot raising the ceiling again (6 -> 7) cost a probe every few rounds.
    expect(run.refusedAt.length).toBeLessThanOrEqual(7);
    expect(new Set(run.refusedAt.filter((t) => t > 2000)).size).toBeLessThanOrEqual(1);
    expect(run.finishedAt / fixed.finishedAt).toBeLessThan(1.08);
  });

  it('a later refusal of one overshoot never raises the ceiling an earlier one set', () => {
    // Before any page has succeeded `recent` is 1 ms: refusals of one overshoot arriving 5 ms apart are
    // judged one by one. The one sent 7th says 6; the one sent 8th must not make it 7.
    const controller = new AdaptiveConcurrency({ initial: 8 });
    for (let i = 0; i < 8; i++) controller.started(0);
    controller.congested('throttled', 7, 230);
    controller.congested('throttled', 8, 235);
    expect(controller.limit).toBe(6);
    // Rounds at the ceiling (short of the 32 before a probe) keep it there.
    let now = 300;
    for (let round = 0; round < 20; round++) {
      now += 500;
      controller.succeeded(controller.started(now - 500), 4e6, now);
      expect(controller.limit).toBeLessThanOrEqual(6);
    }
  });

  it('recovers once the service accepts more again', () => {
    // Refuses above 4 in flight for the first 5 s, then nothing.
    const run = simulate(
      new AdaptiveConcurrency(),
      { ...wan, refuses: (n, now) => now < 5000 && n > 4 },
      600,
    );
    // Within a few rounds of the first refusal it is at the cap (one step per round: the refused
    // requests of one overshoot come back together and count once).
    const limitAt = (t: number) => run.limits.filter((l) => l.at <= t).at(-1)!.limit;
    expect(limitAt(4000)).toBeLessThanOrEqual(4);
    expect(maxLimit({ ...run, limits: run.limits.filter((l) => l.at > 5000) })).toBeGreaterThanOrEqual(12);
  });

  it('starts from `far` when primed with a slow first answer, before any request only', () => {
    const near = new AdaptiveConcurrency({ far: 8 });
    near.prime(5);
    expect(near.limit).toBe(INITIAL_LIMIT);
    near.prime(undefined);
    expect(near.limit).toBe(INITIAL_LIMIT);
    const far = new AdaptiveConcurrency({ far: 8 });
    far.prime(FAR_ANSWER_MS);
    expect(far.limit).toBe(8);
    const started = new AdaptiveConcurrency({ far: 8 });
    started.started(0);
    started.prime(100);
    expect(started.limit).toBe(INITIAL_LIMIT);
    // Metered clients (no `far`) and a low max keep to their range.
    const metered = new AdaptiveConcurrency({ initial: 2 });
    metered.prime(100);
    expect(metered.limit).toBe(2);
    const small = new AdaptiveConcurrency({ far: 8, max: 5 });
    small.prime(100);
    expect(small.limit).toBe(5);
  });

  it("a far service's result planned whole within the byte budget raises the limit to its pages, in startup only", () => {
    const far = new AdaptiveConcurrency({ far: 8 });
    far.prime(100, 11);
    far.started(0);
    far.planned(16);
    expect(far.limit).toBe(16);
    // Answers grow it no further: the whole result is in flight.
    far.answered(far.started(0), 500);
    expect(far.limit).toBe(16);
    const near = new AdaptiveConcurrency({ far: 8 });
    near.prime(5, 11);
    near.planned(16);
    expect(near.limit).toBe(INITIAL_LIMIT);
    // After pushback the service sets the limit: a cap of 6, or an overload, is not raised past.
    const refused = new AdaptiveConcurrency({ far: 8 });
    refused.prime(100, 11);
    refused.congested('throttled', 7, 50);
    refused.planned(16);
    expect(refused.limit).toBe(6);
    const overloaded = new AdaptiveConcurrency({ far: 8 });
    overloaded.prime(100, 11);
    overloaded.congested('unavailable', 8, 50);
    overloaded.planned(16);
    expect(overloaded.limit).toBe(5);
    const small = new AdaptiveConcurrency({ far: 8, max: 12 });
    small.prime(100, 11);
    small.planned(16);
    expect(small.limit).toBe(12);
  });

  it("paces a far service's startup jumps over its quickest page, and nothing else", () => {
    const far = new AdaptiveConcurrency({ far: 8 });
    far.prime(100, 40);
    expect(far.paceMs).toBe(0); // no page yet: nothing to pace by
    const a = far.started(0);
    far.succeeded(a, 4e6, 700);
    expect(far.paceMs).toBe(700);
    far.congested('throttled', 6, 800);
    expect(far.phase).toBe('steady');
    expect(far.paceMs).toBe(0);
    const near = new AdaptiveConcurrency({ far: 8 });
    near.prime(5, 40);
    near.succeeded(near.started(0), 4e6, 30);
    expect(near.paceMs).toBe(0);
  });

  it("paced by a far service's answers: startup doubles per time to first byte, up to the byte budget", () => {
    // The WAN again, its answers' headers told: they come after 270 ms, bodies 80 ms (or more) later.
    const answering: Service = { ...wan, firstByte: 270 };
    const primed = (budget: number) => {
      const c = new AdaptiveConcurrency({ far: 8 });
      c.prime(100, budget);
      return c;
    };
    const perRound = primed(8); // a budget no larger than the start: growth per round only, as before
    const paced = primed(24);
    const before = simulate(perRound, answering, 60);
    const after = simulate(paced, answering, 60);
    // At 1 s it is at the budget (8 -> 16 -> 24 in two answers' times), not still at 8 or 16.
    const limitAt = (run: Run, t: number) => run.limits.filter((l) => l.at <= t).at(-1)!.limit;
    expect(limitAt(after, 1000)).toBe(24);
    expect(limitAt(before, 1000)).toBeLessThan(24);
    expect(maxLimit(after)).toBeLessThanOrEqual(24); // the budget bounds growth per answer
    expect(after.finishedAt).toBeLessThan(0.9 * before.finishedAt);
    // A near service is not paced by answers (its answers come in a few ms; growth follows rounds).
    const near = new AdaptiveConcurrency({ far: 8 });
    near.prime(5, 64);
    near.answered(near.started(0), 1);
    expect(near.limit).toBe(INITIAL_LIMIT);
  });

  it('answers never grow the limit past a ceiling a 429 set', () => {
    // A cap of 6 in flight: the first answers come after the refusals of the startup overshoot.
    const capped: Service = { ...wan, firstByte: 270, refuses: (n) => n > 6 };
    const c = new AdaptiveConcurrency({ far: 8 });
    c.prime(100, 40);
    const run = simulate(c, capped, 60);
    expect(maxLimit({ ...run, limits: run.limits.filter((l) => l.at > 100) })).toBeLessThanOrEqual(7);
    // Refusals: the startup overshoot, and no more than a rare probe after the first second.
    expect(run.refusedAt.filter((t) => t > run.refusedAt[0]! + 1000).length).toBeLessThanOrEqual(2);
  });

  it('stays within min and max', () => {
    const run = simulate(new AdaptiveConcurrency({ initial: 2, max: 5 }), wan, 200);
    expect(maxLimit(run)).toBeLessThanOrEqual(5);
    expect(Math.min(...run.limits.map((l) => l.limit))).toBeGreaterThanOrEqual(1);
  });
});

describe('FixedConcurrency', () => {
  it('halves on pushback and earns the limit back one step per four successes', () => {
    const c = new FixedConcurrency(8);
    c.congested();
    expect(c.limit).toBe(4);
    for (let i = 0; i < 4; i++) c.succeeded();
    expect(c.limit).toBe(5);
    for (let i = 0; i < 100; i++) c.succeeded();
    expect(c.limit).toBe(8);
  });
});
