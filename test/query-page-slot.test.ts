/**
 * A page's network slot and its decode: the slot goes back as soon as the body has been read (the next
 * request leaves while the page decodes), and decodes take turns with I/O (bodies that end together do
 * not decode back to back while requests wait unsent). Both were found on the WAN bench: at concurrency
 * 32, a round of pages ending together held the next requests unsent for 0.55-0.87 s.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import { planColumns } from '../src/convert/index.js';
import { LoopBudget } from '../src/core/loop-budget.js';
import { PageDecoder } from '../src/decode/index.js';
import { FAR_ANSWER_MS, FAR_INITIAL_LIMIT } from '../src/query/concurrency.js';
import type { PageTiming } from '../src/query/page-fetcher.js';
import { field } from './convert-fixtures.js';
import { setup } from './helpers.js';

describe('page slots', () => {
  it('the next request is sent before the page whose slot it took is decoded (concurrency 1)', async () => {
    const { client } = await setup({ rowCap: 6000 });
    const result = await client.query('job_listings', {});
    expect(result.total).toBeGreaterThan(4000);
    // When each page request was sent and when its page was decoded, on one clock.
    const pages: { sent: number; decoded: number; start: number }[] = [];
    const listener = (m: unknown) => {
      const p = m as PageTiming;
      const decoded = performance.now();
      pages.push({ start: p.start, decoded, sent: decoded - p.decodeMs - p.bodyMs - p.waitMs });
    };
    subscribe('dqs-client:page', listener);
    try {
      // pageSize below the page read with the query: every page is a GET under the one slot. CSV: its
      // pages are decoded once read whole (table JSON is decoded as it arrives: nothing is left to do
      // after the last byte but the page's end, decode/table-json-stream.ts).
      const table = await result.toTable({ pageSize: 1000, concurrency: 1, format: 'csv' });
      expect(table.numRows).toBe(result.total);
    } finally {
      unsubscribe('dqs-client:page', listener);
    }
    expect(pages.length).toBeGreaterThanOrEqual(5);
    expect(pages.map((p) => p.start)).toEqual([...pages.map((p) => p.start)].sort((a, b) => a - b));
    // With the slot held through the decode, each request would leave after the previous page's decode.
    for (let i = 1; i < pages.length; i++) expect(pages[i]!.sent).toBeLessThan(pages[i - 1]!.decoded);
  });
});

describe('where the limit starts', () => {
  it("from 4 on a near service, from 8 when the query's own answers took 20 ms or more", async () => {
    // The limit's changes made before the stream's first page request reached the service.
    const atStart = async (latencyMs: number) => {
      const { client, emu } = await setup({ rowCap: 30_000, latencyMs });
      const result = await client.query('job_listings', {});
      const before = emu.requests.length;
      const early: number[] = [];
      client.on('concurrency', (c: { limit: number }) => {
        if (emu.requests.length === before) early.push(c.limit);
      });
      for await (const _ of result.stream({ pageSize: 2000 }));
      return { early, answered: client.http.fastestAnswerMs! };
    };
    // The client decides on its own measurement: from 8 exactly when its fastest answer took FAR_ANSWER_MS
    // or more, so each run is checked against what it measured. Loopback answers in a few ms, but on a
    // loaded 2-core machine the fastest answer took 25-55 ms (and the client rightly went far): up to 3
    // runs for a near one. Should none be near, the "from 4" side was not exercised, which is said.
    const decided = (r: { early: number[]; answered: number }) =>
      expect(r.early).toEqual(r.answered < FAR_ANSWER_MS ? [] : [FAR_INITIAL_LIMIT]);
    let near = await atStart(0);
    decided(near);
    for (let i = 0; i < 2 && near.answered >= FAR_ANSWER_MS; i++) {
      near = await atStart(0);
      decided(near);
    }
    if (near.answered >= FAR_ANSWER_MS) {
      console.warn(`near side not exercised: the fastest loopback answer took ${near.answered} ms`);
    }
    // 25 ms of latency puts the answers past the threshold; the bound is the threshold the client decides
    // on, not the latency asked for: a timer may fire a fraction of a millisecond before 25 ms have passed
    // on performance.now()'s clock (24.83 ms was seen).
    const far = await atStart(25);
    expect(far.answered).toBeGreaterThanOrEqual(FAR_ANSWER_MS);
    expect(far.early).toEqual([FAR_INITIAL_LIMIT]);
  }, 60_000);
});

describe('decode turns', () => {
  const fields = [field('a'), field('n', 'number')];
  const page = (start: number, rows: number) =>
    Buffer.from(
      JSON.stringify({
        id: 'a'.repeat(64),
        state: 'complete',
        total: 100_000,
        count: rows,
        start,
        limit: rows,
        rows: Array.from({ length: rows }, (_, i) => [`row ${start + i}`, start + i]),
        fields,
        group_fields: [],
        sort_fields: [],
        last_date_updated: '2024-12-31T22:15:00Z',
      }),
    );

  it('page bodies read at once decode one per turn of the event loop, I/O between them', async () => {
    const decoder = new PageDecoder('json', planColumns(fields), {
      fast: true,
      strings: 'utf8',
      budget: new LoopBudget(),
    });
    const log: string[] = [];
    // A stand-in for I/O: a callback of each turn of the event loop, as a socket read or write would be.
    let turns = 0;
    const tick = () => {
      log.push('turn');
      if (++turns < 50) setImmediate(tick);
    };
    setImmediate(tick);
    const bodies = Array.from({ length: 6 }, (_, i) => page(1 + i * 500, 500));
    const decoded = await Promise.all(
      bodies.map((bytes, i) =>
        decoder
          .decode(
            {
              whole: async () => ({ body: bytes, pooled: undefined }),
              chunks: async function* () {
                yield bytes;
              },
            },
            { start: 1 + i * 500, limit: 500 },
          )
          .then((d) => {
            log.push(`page ${i}`);
            return d;
          }),
      ),
    );
    expect(decoded.map((d) => d.envelope?.count)).toEqual([500, 500, 500, 500, 500, 500]);
    // Every page after the first has a turn of the loop before it: no two decodes in one turn.
    const pagesAt = log.flatMap((entry, at) => (entry.startsWith('page') ? [at] : []));
    expect(pagesAt).toHaveLength(6);
    for (let i = 1; i < pagesAt.length; i++) {
      expect(log.slice(pagesAt[i - 1]! + 1, pagesAt[i]!)).toContain('turn');
    }
  });
});
