/**
 * The link model's estimator on its own (no clock, no network): the service's cost from the quickest
 * wait of each page size, the rates, the bandwidth-delay product and the page size that follow.
 */
import { describe, expect, it } from 'vitest';
import { ESTIMATE_WINDOW_MS, PAGE_ROWS_UNIT } from '../src/query/link-constants.js';
import { LinkModel, onLadder, ServiceCost } from '../src/query/link-model.js';

describe('ServiceCost', () => {
  it('fits fixed + per row through the quickest wait of each size, once two sizes answered twice', () => {
    const cost = new ServiceCost();
    cost.add(1000, 90, 0);
    cost.add(2000, 110, 0);
    expect(cost.fit(0)).toBeUndefined(); // one answer of a size is no quickest
    cost.add(1000, 150, 0); // queued behind others: only ever later
    expect(cost.fit(0)).toBeUndefined();
    cost.add(2000, 300, 0);
    expect(cost.fit(0)).toEqual({ fixedMs: 70, perRowMs: 0.02 });
    // Sizes less than twice apart tell nothing of the cost per row.
    const close = new ServiceCost();
    for (const rows of [1000, 1500, 1000, 1500]) close.add(rows, 100 + rows * 0.02, 0);
    expect(close.fit(0)).toBeUndefined();
  });

  it('fits every size by least squares, and never a negative cost', () => {
    const cost = new ServiceCost();
    for (const rows of [1000, 2000, 4000, 8000])
      for (let i = 0; i < 2; i++) cost.add(rows, 50 + rows * 0.1, 0);
    const fit = cost.fit(0)!;
    expect(fit.fixedMs).toBeCloseTo(50, 6);
    expect(fit.perRowMs).toBeCloseTo(0.1, 9);
    // Bigger pages answered sooner (a cache, noise): no cost per row, the quickest as the fixed cost.
    const odd = new ServiceCost();
    for (const [rows, ms] of [
      [1000, 20],
      [1000, 20],
      [4000, 10],
      [4000, 10],
    ] as const)
      odd.add(rows, ms, 0);
    expect(odd.fit(0)).toEqual({ fixedMs: 10, perRowMs: 0 });
  });

  it('forgets a quickest wait older than the window: the next answer of that size replaces it', () => {
    const cost = new ServiceCost();
    cost.add(1000, 10, 0);
    cost.add(1000, 10, 0);
    expect(cost.quickest(1000, ESTIMATE_WINDOW_MS)).toBe(10);
    expect(cost.quickest(1000, ESTIMATE_WINDOW_MS + 1)).toBeUndefined();
    cost.add(1000, 40, ESTIMATE_WINDOW_MS + 1); // the service became slower
    expect(cost.quickest(1000, ESTIMATE_WINDOW_MS + 1)).toBe(40);
  });
});

describe('LinkModel', () => {
  it('keeps the waits of requests that opened a connection apart: a handshake is not a cost per row', () => {
    const link = new LinkModel();
    // Open connections: 70 ms + 0.02 ms a row. The larger size seen only on new ones (+40 ms).
    link.answered(1000, 90, 0);
    link.answered(1000, 90, 0);
    link.answered(2000, 150, 0, true);
    link.answered(2000, 150, 0, true);
    expect(link.fit(0)).toBeUndefined(); // mixed, they would say 0.06 ms a row
    link.answered(1000, 130, 0, true);
    link.answered(1000, 130, 0, true);
    expect(link.fit(0)).toEqual({ fixedMs: 110, perRowMs: 0.02 }); // new connections: fixed + handshake
    link.answered(2000, 110, 0);
    link.answered(2000, 110, 0);
    expect(link.fit(0)).toEqual({ fixedMs: 70, perRowMs: 0.02 }); // open ones tell, once they can
  });

  it('rates: one body at its best, all bodies over a flight, at least one connection', () => {
    const link = new LinkModel();
    expect(link.linkRate(0)).toBe(0);
    link.completed(
      { rows: 1000, bytes: 500_000, waitMs: 90, bodyMs: 20, flightBytes: 500_000, flightMs: 110 },
      0,
    );
    expect(link.connectionRate(0)).toBe(25_000);
    expect(link.linkRate(0)).toBe(25_000); // the flight's own rate is lower: a connection's is the floor
    link.completed(
      { rows: 1000, bytes: 500_000, waitMs: 90, bodyMs: 50, flightBytes: 11e6, flightMs: 110 },
      1,
    );
    expect(link.connectionRate(1)).toBe(25_000); // the best body
    expect(link.linkRate(1)).toBe(100_000); // every body's bytes over the flight
    expect(link.linkRate(ESTIMATE_WINDOW_MS + 2)).toBe(0);
  });

  it('the bandwidth-delay product in pages: the link rate x a page latency unloaded / its bytes', () => {
    const link = new LinkModel();
    for (let i = 0; i < 2; i++) {
      link.answered(1000, 90, 0);
      link.answered(4000, 150, 0);
    }
    // 4,000 rows, 1.6 MB: unloaded 150 ms + 1.6 MB at 25 MB/s (64 ms) = 214 ms; at 100 MB/s, 13.4 pages.
    link.completed(
      { rows: 4000, bytes: 1.6e6, waitMs: 150, bodyMs: 64, flightBytes: 21.4e6, flightMs: 214 },
      0,
    );
    expect(link.bdpPages(0)).toBeCloseTo((100_000 * 214) / 1.6e6, 6);
  });

  it('held back by the client (its loop busy), the product follows the rate pages were read at', () => {
    const link = new LinkModel();
    const page = {
      rows: 8000,
      bytes: 3.4e6,
      waitMs: 2,
      bodyMs: 3,
      flightBytes: 50e6,
      flightMs: 5,
      busyShare: 1,
    };
    // One page every 20 ms: the client reads 170 MB/s, though bodies come at 1 GB/s and a flight saw more.
    for (let at = 0; at <= 200; at += 20) link.completed(page, at);
    expect(link.clientBound(200)).toBe(true);
    expect(link.bdpPages(200)).toBeLessThan(1);
  });

  it('bodies share a bottleneck once the median of the last five is a RATE_GAIN below the best', () => {
    const link = new LinkModel();
    const body = (bodyMs: number, at: number) =>
      link.completed(
        { rows: 1000, bytes: 500_000, waitMs: 90, bodyMs, flightBytes: 500_000, flightMs: 90 + bodyMs },
        at,
      );
    for (let i = 0; i < 5; i++) body(20, i); // 25 MB/s each: one connection's best
    expect(link.shared(5)).toBe(false);
    body(40, 5);
    body(40, 6); // two slow bodies of five: the median is still the best
    expect(link.shared(7)).toBe(false);
    body(30, 7); // three of five at 12.5-16.7 MB/s: they share the link (or the reader)
    expect(link.shared(8)).toBe(true);
  });

  it('page rows: the service time of its rows the fixed time, on the ladder, within the byte bounds', () => {
    const link = new LinkModel();
    expect(link.pageRows(430, 0)).toBeUndefined(); // the cost is not known yet
    for (let i = 0; i < 2; i++) {
      link.answered(1000, 90, 0);
      link.answered(2000, 110, 0);
    }
    expect(link.pageRows(430, 0)).toBe(4000); // 70 / 0.02 = 3,500 rows: 4,000 on the ladder
    expect(link.pageRows(4300, 0)).toBe(1000); // the byte bound: 1,046 rows, 1,000 on the ladder
    expect(link.pageRows(20_000, 0)).toBe(225); // below one ladder step: the bound itself
    expect(link.pageRows(50, 0)).toBe(8000); // never under PAGE_BYTES_MIN: 5,243 rows, 8,000 on the ladder
  });

  it('onLadder: 1,000 rows x a power of two, the nearest in ratio, never above the most', () => {
    expect(onLadder(2800)).toBe(2000);
    expect(onLadder(2900)).toBe(4000); // over 2,828, the middle in ratio
    expect(onLadder(10_465)).toBe(8000);
    expect(onLadder(12_000, 1, 10_465)).toBe(8000);
    expect(onLadder(5243, 5243, 90_000)).toBe(8000); // the nearest, 4,000, is under the least
    expect(onLadder(700)).toBe(700);
    expect(onLadder(PAGE_ROWS_UNIT)).toBe(PAGE_ROWS_UNIT);
  });
});
