/**
 * The page engine (query/page-engine.ts) walked end to end against the emulator: the kept first page
 * serves the stream without a second request, the plan sizes the pages after the first from its bytes per
 * row, a server that clamps `limit` is followed without loss, and rows arrive in order whatever order the
 * pages finish in.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FIRST_PAGE_ROWS } from '../src/client.js';
import { startEmulator } from '../src/emulator/index.js';
import { DatasetClient } from '../src/index.js';
import { PAGE_BYTES_MAX } from '../src/query/link-constants.js';
import { DEFAULT_PAGE_SIZE } from '../src/query/stream-options.js';
import { isPageGet, setup } from './helpers.js';

const pageGets = (emu: {
  requests: readonly { method: string; path: string; query: Record<string, string> }[];
}) =>
  emu.requests.filter(isPageGet).map((r) => ({ start: Number(r.query.start), limit: Number(r.query.limit) }));

describe('page engine', () => {
  it('hands the page read with the query to the stream: its rows are not asked for again', async () => {
    const { emu, client } = await setup({ rowCap: 3000 });
    const result = await client.query('job_listings', {});
    expect(result.total).toBe(3000);
    const table = await result.toTable();
    expect(table.numRows).toBe(3000);
    // One data GET in all: the query's own, whose rows became the stream's first (and only) page.
    expect(pageGets(emu)).toEqual([{ start: 1, limit: 3000 }]);
    // A second stream has no kept page left: it reads the service.
    emu.resetRequests();
    expect((await result.toTable()).numRows).toBe(3000);
    expect(pageGets(emu)).toEqual([{ start: 1, limit: 3000 }]);
  });

  it('sizes the pages after the first from the link model and the bytes per row (pageSize auto)', async () => {
    // app_reviews: ~165 bytes a row. Loopback rows cost the service nothing measurable, so once the two
    // startup sizes have told that, pages are the byte bound's: 4.5 MB, 16,000 rows on the ladder, or
    // (on a loaded machine whose emulator builds pages slowly) a smaller step of the ladder.
    const { emu, client } = await setup({ rowCap: 500_000, maxPageSize: 100_000 });
    const stream = client.stream('app_reviews', {}, { concurrency: 1 });
    let rows = 0;
    for await (const batch of stream) rows += (batch as { numRows: number }).numRows;
    const gets = pageGets(emu).sort((a, b) => a.start - b.start);
    const total = gets.at(-1)!.start + gets.at(-1)!.limit - 1;
    expect(rows).toBe(total);
    // The query's first page is a small data page, in hand before any other page was planned.
    expect(gets[0]).toEqual({ start: 1, limit: FIRST_PAGE_ROWS });
    // Then the two startup sizes in turn (4,000 and 2,000 rows of these), unless the client is seen to be
    // the bottleneck first (this emulator works on the same event loop): the byte bound then.
    expect([4000, 2000, 16_000]).toContain(gets[1]!.limit);
    const later = gets.slice(1, -1);
    expect(later.length).toBeGreaterThan(0);
    // Each ends on a multiple of a ladder size (1,000 x a power of two), and none is over the byte bound.
    for (const g of later) expect((g.start + g.limit - 1) % 1000, JSON.stringify(g)).toBe(0);
    const size = Math.max(...later.map((g) => g.limit));
    expect(size, JSON.stringify(gets)).toBeGreaterThan(4000);
    expect(size * 165).toBeLessThanOrEqual(PAGE_BYTES_MAX);
    expect(DEFAULT_PAGE_SIZE).toBe(10_000);
  });

  it('follows a server that clamps limit: no row lost, later pages ask for what it serves', async () => {
    const { emu, client } = await setup({ rowCap: 60_000, maxPageSize: 3000 });
    const rows = await (await client.query('job_listings', {})).toArray({ pageSize: 8000, concurrency: 1 });
    expect(rows).toHaveLength(60_000);
    expect(new Set(rows.map((r) => JSON.stringify(r))).size).toBeGreaterThan(59_000);
    const gets = pageGets(emu).sort((a, b) => a.start - b.start);
    // Every row asked for exactly once, in requests of at most what the server serves (after the first
    // pages, planned before any came back, asked for 8000 and were completed by further requests).
    let next = 1;
    for (const g of gets) {
      expect(g.start).toBe(next);
      next = g.start + Math.min(g.limit, 3000);
    }
    expect(next).toBe(60_001);
    expect(gets.filter((g) => g.limit > 3000).length).toBeLessThanOrEqual(6);
    expect(gets.at(-1)!.limit).toBeLessThanOrEqual(3000);
  });

  it('emits rows in order whatever order pages finish in (property)', async () => {
    const emu = await startEmulator({ rowCap: 2500 });
    const client = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey });
    try {
      const expected = (await (await client.query('store_locations', {})).toArray()).map((r) =>
        JSON.stringify(r),
      );
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 1200 }),
          fc.integer({ min: 1, max: 8 }),
          async (pageSize, concurrency) => {
            const got = await (await client.query('store_locations', {})).toArray({ pageSize, concurrency });
            expect(got.map((r) => JSON.stringify(r))).toEqual(expected);
          },
        ),
        { numRuns: 10 },
      );
    } finally {
      await client.close();
      await emu.close();
    }
  });
});
