/**
 * A page's requests and its decode: a request's slot goes back as soon as its body has been read (the
 * next request leaves while the page decodes), and decodes take turns with I/O (bodies that end together
 * do not decode back to back while requests wait unsent). Both were found on the WAN bench: at
 * concurrency 32, a round of pages ending together held the next requests unsent for 0.55-0.87 s.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import { planColumns } from '../src/convert/index.js';
import { LoopBudget } from '../src/core/loop-budget.js';
import { PageDecoder } from '../src/decode/index.js';
import { DatasetClient } from '../src/index.js';
import { UNMEASURED_LIMIT } from '../src/query/concurrency.js';
import { INITIAL_WAVE } from '../src/query/link-constants.js';
import type { PageTiming } from '../src/query/page-fetcher.js';
import { startServe } from './cli-helpers.js';
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
  it("from the query's own first page: a far service's first wave is larger; without one, the default", async () => {
    // The limit the stream's first page requests went out under: its first 'concurrency' event comes
    // from the first page (before any request), or there is none before the first answer.
    const atStart = async (flags: string[], format?: 'csv') => {
      // The emulator in a process of its own: in this one, its work would slow the client's reads.
      const serve = await startServe(['--api-key', 'k', '--row-cap', '30000', ...flags]);
      const client = new DatasetClient({ baseUrl: serve.url, apiKey: 'k' });
      try {
        const result = await client.query('job_listings', {});
        // Page requests the stream has created (undici's own channel): before the first, the first wave.
        let created = 0;
        const onCreate = () => created++;
        subscribe('undici:request:create', onCreate);
        let limit: number | undefined;
        const stream = result.stream(format ? { format } : {});
        stream.on('concurrency', (c: { limit: number }) => {
          if (created === 0) limit = c.limit;
        });
        try {
          for await (const _ of stream);
        } finally {
          unsubscribe('undici:request:create', onCreate);
        }
        return limit ?? UNMEASURED_LIMIT;
      } finally {
        await client.close();
        await serve.stop();
      }
    };
    // 40 ms away, 25 MB/s per connection: the first page (1,000 rows, 0.4 MB) waited ~90 ms and came in
    // ~17: a connection is busy only a fifth of a page's time, so the first wave is several requests.
    const far = await atStart([
      '--latency-ms',
      '40',
      '--page-time-ms',
      '30',
      '--row-time-ms',
      '0.02',
      '--connection-bandwidth',
      '25MB',
    ]);
    expect(far).toBeGreaterThan(UNMEASURED_LIMIT);
    expect(far).toBeLessThanOrEqual(INITIAL_WAVE);
    // CSV streams have no page read with the query: nothing measured, the default.
    expect(await atStart([], 'csv')).toBe(UNMEASURED_LIMIT);
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
