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
import { TARGET_PAGE_BYTES } from '../src/query/page-plan.js';
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

  it('sizes every page after the first from its bytes per row (pageSize auto)', async () => {
    // app_reviews: ~165 bytes a row, so the byte target is far from the first guess (DEFAULT_PAGE_SIZE).
    const { emu, client } = await setup({ rowCap: 500_000, maxPageSize: 100_000 });
    const stream = client.stream('app_reviews', {}, { concurrency: 1 });
    let rows = 0;
    for await (const batch of stream) rows += (batch as { numRows: number }).numRows;
    const gets = pageGets(emu).sort((a, b) => a.start - b.start);
    const total = gets.at(-1)!.start + gets.at(-1)!.limit - 1;
    expect(rows).toBe(total);
    // The query's first page is a small data page; it was in hand before any other page was planned,
    // so no page asks for the first guess: all but the last (a rest) ask for ~TARGET_PAGE_BYTES.
    expect(gets[0]).toEqual({ start: 1, limit: FIRST_PAGE_ROWS });
    const later = gets.slice(1, -1);
    expect(later.length).toBeGreaterThan(0);
    // The first of them asks for the byte target; later ones no more (a service whose rows cost time to
    // answer, as this emulator building each page under a loaded test run, may make them smaller).
    const size = later[0]!.limit;
    for (const g of later) expect(g.limit, JSON.stringify(gets)).toBeLessThanOrEqual(size);
    expect(size).not.toBe(DEFAULT_PAGE_SIZE);
    expect(size % 1000).toBe(0);
    expect(size * 100).toBeLessThan(TARGET_PAGE_BYTES); // rows are > 100 bytes
    expect(size * 250).toBeGreaterThan(TARGET_PAGE_BYTES); // and < 250
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
