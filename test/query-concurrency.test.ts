/**
 * The controllers: their rules one at a time on a hand-driven clock, then the whole model against a grid
 * of simulated links (test/link-simulator.ts: deterministic, no timers, no network), each read with the
 * defaults and with every fixed pageSize × concurrency of bench/wan.js's grid.
 */
import { describe, expect, it } from 'vitest';
import { AdaptiveConcurrency, FixedConcurrency, UNMEASURED_LIMIT } from '../src/query/concurrency.js';
import { CEILING_PROBE_ROUNDS, INITIAL_WAVE, STARTUP_GROWTH } from '../src/query/link-constants.js';
import { bestFixed, type LinkShape, simulate } from './link-simulator.js';

/** Sends `n` requests at `now`; returns their sequence numbers. */
const send = (c: AdaptiveConcurrency | FixedConcurrency, n: number, now = 0) =>
  Array.from({ length: n }, () => c.sent(now));

/** Reads request `seq`: answered after `waitMs`, its `bytes` body read `bodyMs` later. */
function complete(c: AdaptiveConcurrency, seq: number, at: number, bytes = 1e6, waitMs = 50, bodyMs = 10) {
  c.answered(seq, 1000, at + waitMs, 0, false);
  c.delivered(bytes);
  c.read(seq, bytes, at + waitMs + bodyMs);
}

describe('AdaptiveConcurrency', () => {
  it("the first wave: one connection's worth of the query's first page, within 2 and INITIAL_WAVE", () => {
    const sized = (waitMs: number, bodyMs: number) => {
      const c = new AdaptiveConcurrency();
      c.firstPage({ waitMs, bodyMs }, 0);
      return c.limit;
    };
    expect(new AdaptiveConcurrency().limit).toBe(UNMEASURED_LIMIT);
    expect(sized(90, 17)).toBe(7); // the WAN bench: (90 + 17) / 17, rounded up
    expect(sized(2, 4)).toBe(2); // loopback: the body is most of a page's time
    expect(sized(210, 7)).toBe(INITIAL_WAVE); // a far service, narrow rows
    // Metered: two requests, whatever the first page; and only before any request.
    const metered = new AdaptiveConcurrency({ metered: () => true });
    metered.firstPage({ waitMs: 210, bodyMs: 7 }, 0);
    expect(metered.limit).toBe(2);
    const late = new AdaptiveConcurrency();
    late.sent(0);
    late.firstPage({ waitMs: 210, bodyMs: 7 }, 0);
    expect(late.limit).toBe(UNMEASURED_LIMIT);
  });

  it('a client idle past its estimates starts again from startup; its ceiling stays', () => {
    const c = new AdaptiveConcurrency();
    c.firstPage({ waitMs: 210, bodyMs: 7 }, 0); // 16
    c.congested('throttled', 11, 0); // ceiling 10
    const [seq] = send(c, 1, 10);
    complete(c, seq!, 10);
    expect(c.phase).toBe('steady');
    // A query 5 s later: the estimates hold, the first page sizes nothing.
    c.firstPage({ waitMs: 2, bodyMs: 4 }, 5_000);
    expect(c.phase).toBe('steady');
    // One 20 s later: startup again, from the first wave its first page sizes, under the ceiling.
    c.firstPage({ waitMs: 210, bodyMs: 7 }, 20_000);
    expect(c.phase).toBe('startup');
    expect(c.limit).toBe(10);
    // A stream with no first page after an idle spell restarts at its first request.
    const d = new AdaptiveConcurrency();
    d.firstPage({ waitMs: 210, bodyMs: 7 }, 0);
    const [first] = send(d, 1, 0);
    complete(d, first!, 0);
    d.congested('unavailable', 16, 100);
    expect(d.phase).toBe('steady');
    d.sent(30_000);
    expect(d.phase).toBe('startup');
  });

  it('startup grows per answer, only while every slot was taken and the loop had room', () => {
    const c = new AdaptiveConcurrency();
    const [a, b, d, e] = send(c, 4);
    c.answered(a!, 1000, 100, 0, true);
    expect(c.limit).toBe(4 + STARTUP_GROWTH);
    // A slot was free (the window or the consumer held requests back): nothing to grow.
    c.answered(b!, 1000, 100, 0, false);
    expect(c.limit).toBe(4 + STARTUP_GROWTH);
    // The loop was busy through the wait: the answer may be late only for that.
    c.answered(d!, 1000, 100, 90, true);
    expect(c.limit).toBe(4 + STARTUP_GROWTH);
    c.answered(e!, 1000, 100, 80, true);
    expect(c.limit).toBe(4 + 2 * STARTUP_GROWTH);
    // Metered, it never grows.
    const metered = new AdaptiveConcurrency({ metered: () => true });
    metered.answered(metered.sent(0), 1000, 100, 0, true);
    expect(metered.limit).toBe(2);
  });

  it('startup ends once the link rate stops growing; steady keeps twice the bandwidth-delay product', () => {
    const c = new AdaptiveConcurrency();
    let now = 0;
    // Each round: 4 pages of 1 MB whose flight saw 40 MB/s; the rate does not grow from round to round.
    for (let round = 0; round <= 2 && c.phase === 'startup'; round++) {
      const seqs = send(c, 4, now);
      for (const seq of seqs) {
        c.answered(seq, 1000, now + 50, 0, false);
        c.delivered(1e6);
      }
      for (const seq of seqs) c.read(seq, 1e6, now + 100);
      now += 100;
    }
    expect(c.phase).toBe('steady');
    // 4 MB over 100 ms: 40,000 bytes a ms; a page unloaded: 50 ms + 1 MB at the best body's rate.
    const bdp = c.link.bdpPages(now)!;
    expect(c.limit).toBe(Math.round(2 * bdp));
  });

  it('a 429 makes a ceiling one below the requests out when the refused one was sent, the lowest of them', () => {
    const c = new AdaptiveConcurrency({ max: 64 });
    c.congested('throttled', 8, 0);
    expect(c.limit).toBe(4); // below the ceiling already
    expect(c.capped).toBe(true);
    const up = new AdaptiveConcurrency();
    up.firstPage({ waitMs: 210, bodyMs: 7 }, 0); // 16
    up.congested('throttled', 9, 0);
    expect(up.limit).toBe(8);
    up.congested('throttled', 12, 1); // sent before the cut, at a higher count: changes nothing
    expect(up.limit).toBe(8);
    up.congested('throttled', 7, 2); // a lower one tells more
    expect(up.limit).toBe(6);
  });

  it('probes one above a 429 ceiling after CEILING_PROBE_ROUNDS rounds, twice as long after a refusal', () => {
    const c = new AdaptiveConcurrency();
    c.firstPage({ waitMs: 210, bodyMs: 7 }, 0);
    c.congested('throttled', 7, 0); // ceiling 6
    const round = (n: number) => {
      for (let i = 0; i < n; i++) {
        const [seq] = send(c, 1, i);
        complete(c, seq!, i);
      }
    };
    const limits: number[] = [];
    for (let i = 0; i < CEILING_PROBE_ROUNDS; i++) {
      round(1);
      limits.push(c.limit);
    }
    expect(Math.max(...limits.slice(0, -1))).toBeLessThanOrEqual(6);
    expect(limits.at(-1)).toBe(7); // the probe
    c.congested('throttled', 7, 1000); // refused
    expect(c.limit).toBeLessThanOrEqual(6);
    const after: number[] = [];
    for (let i = 0; i < 2 * CEILING_PROBE_ROUNDS; i++) {
      round(1);
      after.push(c.limit);
    }
    expect(after.indexOf(7)).toBe(2 * CEILING_PROBE_ROUNDS - 1);
  });

  it('a 503 or a timeout cuts to 70 %, once a round', () => {
    const c = new AdaptiveConcurrency();
    c.firstPage({ waitMs: 210, bodyMs: 7 }, 0); // 16
    c.congested('unavailable', 16, 0);
    expect(c.limit).toBe(11);
    c.congested('timeout', 11, 1); // the same overload, the same round
    expect(c.limit).toBe(11);
  });

  it('stays within min and max', () => {
    const c = new AdaptiveConcurrency({ min: 2, max: 5 });
    c.firstPage({ waitMs: 210, bodyMs: 7 }, 0);
    expect(c.limit).toBe(5);
    c.congested('throttled', 1, 0);
    expect(c.limit).toBe(2);
  });
});

describe('FixedConcurrency', () => {
  it('halves on pushback and earns the limit back one step per four pages read', () => {
    const c = new FixedConcurrency(8);
    c.congested();
    expect(c.limit).toBe(4);
    for (let i = 0; i < 4; i++) c.read(c.sent(i), 1e6, i + 1);
    expect(c.limit).toBe(5);
    for (let i = 0; i < 100; i++) c.read(c.sent(i), 1e6, i + 1);
    expect(c.limit).toBe(8);
  });
});

describe('the defaults against the best fixed setting, on simulated links', () => {
  // The bench's WAN: 40 ms away, 30 ms + 0.02 ms a row, 25 MB/s per connection, 100 MB/s in all, a client
  // that reads 150 MB/s at most; 500,000 rows of 420 bytes.
  const WAN = {
    rttMs: 40,
    pageMs: 30,
    rowMs: 0.02,
    connection: 25_000,
    link: 100_000,
    client: 150_000,
    rows: 500_000,
    bytesPerRow: 420,
  };
  const SHAPES: LinkShape[] = [
    { name: 'the WAN bench', ...WAN },
    { name: 'rows half as wide', ...WAN, bytesPerRow: 170, rows: 193_000 },
    { name: 'rows twice as wide', ...WAN, bytesPerRow: 840, rows: 250_000 },
    { name: 'a far, slow service', ...WAN, rttMs: 80, pageMs: 50, rowMs: 0.08 },
    { name: 'a service 10x dearer per row', ...WAN, rowMs: 0.2 },
    { name: 'the same, 100,000 rows', ...WAN, rowMs: 0.2, rows: 100_000 },
    { name: 'a near, fast link', ...WAN, rttMs: 5, rowMs: 0.004, connection: 60_000, link: 400_000 },
    { name: 'a link ten times slower', ...WAN, connection: 2_500, link: 10_000, rows: 100_000 },
    {
      name: 'farther and slower (150 ms, 20 MB/s)',
      ...WAN,
      rttMs: 150,
      connection: 5_000,
      link: 20_000,
      rows: 200_000,
    },
    { name: 'a slower client (60 MB/s)', ...WAN, client: 60_000 },
    { name: 'loopback', ...WAN, rttMs: 0.2, pageMs: 1, rowMs: 0.0005, connection: 1e6, link: 1e6 },
    { name: 'a cap of 6 in flight', ...WAN, maxInFlight: 6 },
  ];

  it.each(SHAPES.map((s) => [s.name, s] as const))(
    '%s: at least 0.9 of the best fixed setting',
    (_, shape) => {
      const auto = simulate(shape);
      const best = bestFixed(shape);
      const ratio = best.run.ms / auto.ms;
      expect(
        ratio,
        `defaults ${auto.ms.toFixed(0)} ms, best fixed ${best.contender.pageSize} x ${best.contender.concurrency} ${best.run.ms.toFixed(0)} ms`,
      ).toBeGreaterThanOrEqual(0.9);
    },
  );

  it('under a cap of 6 in flight: refusals only in the first wave, none after', () => {
    const run = simulate({ name: 'cap', ...WAN, maxInFlight: 6 });
    expect(run.refused).toBeLessThanOrEqual(2);
  });
});
