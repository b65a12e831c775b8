/**
 * What the server says about size is bounded before it is used. Regression: `X-Total: 10^12` made the
 * client build its whole page plan up front (2.4-4.7 GB before the first row), and a total of 10^9 was
 * read forever since the spec's 500,000-row cap was never enforced.
 */

import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DatasetClient,
  MediaType,
  RateLimitedError,
  type RetryEvent,
  type RowLimitError,
} from '../src/index.js';
import { LinkModel } from '../src/query/link-model.js';
import type { PageTiming } from '../src/query/page-fetcher.js';
import { PagePlan } from '../src/query/page-plan.js';
import { startServe } from './cli-helpers.js';
import { startTestEmulator } from './emulator-helpers.js';
import { expectRejects } from './helpers.js';

const ID = 'c'.repeat(64);

interface Lying {
  /** The total the server claims, as written in its headers and bodies. */
  readonly total: string;
  /** Whether the create answers `complete` (else `running`, then a HEAD says complete). */
  readonly completeAtOnce: boolean;
}

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A server claiming `total` rows and serving honest pages of one column for any start and limit. */
async function lyingServer(lie: Lying): Promise<{ url: string; pageGets: () => number }> {
  let gets = 0;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'POST') {
      const state = lie.completeAtOnce ? 'complete' : 'running';
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(
        `{"id":"${ID}","state":"${state}","total":${lie.completeAtOnce ? lie.total : 0},"formats":["${MediaType.table}"]}`,
      );
    }
    const headers = {
      'x-state': 'complete',
      'x-total': lie.total,
      'x-truncated': 'false',
      'x-formats': MediaType.table,
    };
    if (req.method === 'HEAD') return res.writeHead(200, headers).end();
    gets++;
    const start = Number(url.searchParams.get('start'));
    const limit = Math.min(1000, Number(url.searchParams.get('limit')));
    const rows = Array.from({ length: limit }, (_, i) => `["r${start + i}"]`).join(',');
    res.writeHead(200, { ...headers, 'content-type': MediaType.table });
    res.end(
      `{"id":"${ID}","state":"complete","total":${lie.total},"count":${limit},"start":${start},"limit":${limit},` +
        `"rows":[${rows}],"fields":[{"id":"a","type":"string"}],"group_fields":[],"sort_fields":[]}`,
    );
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, pageGets: () => gets };
}

describe('maxRows: a total above the row cap is refused before any page is read', () => {
  for (const total of ['1000000000000', String(2 ** 53 + 1), '500001']) {
    for (const completeAtOnce of [true, false]) {
      it(`X-Total ${total}, create answering ${completeAtOnce ? 'complete' : 'running'}`, async () => {
        const server = await lyingServer({ total, completeAtOnce });
        const client = new DatasetClient({ baseUrl: server.url, apiKey: 'k' });
        try {
          await expectRejects<RowLimitError>(client.stream('x', {}).toArray(), (e) => {
            expect(e.code).toBe('DQS_ROW_LIMIT');
            expect(e.maxRows).toBe(500_000);
            expect(e.total).toBe(Number(total));
            expect(e.message).toContain('maxRows');
            expect(e.message).toContain(String(Number(total)));
          });
          await expectRejects<RowLimitError>(client.query('x', {}), (e) =>
            expect(e.code).toBe('DQS_ROW_LIMIT'),
          );
          expect(server.pageGets()).toBe(0);
        } finally {
          await client.close();
        }
      });
    }
  }

  it('a lower maxRows refuses a result the spec allows; a higher one reads it', async () => {
    const server = await lyingServer({ total: '3000', completeAtOnce: true });
    const client = new DatasetClient({ baseUrl: server.url, apiKey: 'k' });
    try {
      await expectRejects<RowLimitError>(client.stream('x', {}, { maxRows: 2999 }).toArray(), (e) =>
        expect(e.message).toMatch(/3000 rows, more than `maxRows` \(2999\)/),
      );
      expect(server.pageGets()).toBe(0);
      expect(await client.stream('x', {}, { maxRows: 3000, output: 'rows' }).toArray()).toHaveLength(3000);
    } finally {
      await client.close();
    }
  });

  it('rejects a maxRows that is not a count, naming the option', () => {
    const client = new DatasetClient({ baseUrl: 'http://127.0.0.1:1' });
    for (const maxRows of [-1, 1.5, '10'] as unknown[]) {
      expect(() => client.stream('x', {}, { maxRows: maxRows as number })).toThrow(
        /maxRows|Expected an integer >= 0/,
      );
    }
  });
});

describe('the page plan is lazy', () => {
  it('a claimed total of 10^12 allowed by maxRows costs no memory up front: the first rows come at once', async () => {
    const server = await lyingServer({ total: '1000000000000', completeAtOnce: true });
    const client = new DatasetClient({ baseUrl: server.url, apiKey: 'k' });
    try {
      const before = process.memoryUsage().heapUsed;
      const stream = client.stream(
        'x',
        {},
        { maxRows: Number.MAX_SAFE_INTEGER, pageSize: 1000, output: 'rows' },
      );
      let n = 0;
      for await (const row of stream) {
        expect(row).toEqual({ a: `r${n + 1}` });
        if (++n === 5000) break;
      }
      // A plan of 10^9 pages would be tens of GB; the window holds a few pages.
      expect(process.memoryUsage().heapUsed - before).toBeLessThan(200 * 2 ** 20);
      expect(server.pageGets()).toBeLessThan(200);
    } finally {
      await client.close();
    }
  });

  it('hands out pages from a cursor; a short prefetched page is made up to a whole one', () => {
    const plan = new PagePlan(1, 10, 4);
    expect(plan.next()).toEqual({ start: 1, limit: 4 });
    // A prefetched page shorter than a page is made up to a whole one: later pages start where theirs would.
    plan.skip({ start: 5, limit: 1 });
    expect(plan.next()).toEqual({ start: 6, limit: 3 });
    expect(plan.next()).toEqual({ start: 9, limit: 2 });
    expect(plan.next()).toBeUndefined();
    expect(plan.done).toBe(true);
    const huge = new PagePlan(1, 1e12, 10_000);
    expect(huge.next()).toEqual({ start: 1, limit: 10_000 });
  });
});

describe("page size from the link model (pageSize 'auto')", () => {
  const ROW = 430;
  const page = (rows: number) => ({ parts: [], rowCount: rows, bytes: rows * ROW, requests: 1 });
  /** A plan of `total` rows after its 1,000-row first page, sized by `link` at time `now`. */
  function planned(total: number, link: LinkModel, options: { metered?: boolean; scarce?: boolean } = {}) {
    const plan = new PagePlan(1, total, 10_000, {
      link,
      now: () => 0,
      windowBytes: 128 * 2 ** 20,
      rateLimited: () => options.metered ?? false,
      scarce: () => options.scarce ?? false,
    });
    plan.learn(page(1000));
    plan.skip({ start: 1, limit: 1000 });
    return plan;
  }
  /** A link whose service answered `rows` rows after `fixed + rows x perRow` ms, twice each. */
  function serviceOf(fixed: number, perRow: number, sizes = [1000, 2000]): LinkModel {
    const link = new LinkModel();
    for (const rows of sizes) for (let i = 0; i < 2; i++) link.answered(rows, fixed + rows * perRow, 0);
    return link;
  }

  it('while the cost is unknown, two sizes in turn, which tell it after one wait', () => {
    const plan = planned(500_000, new LinkModel());
    const sizes = [0, 1, 2, 3].map(() => plan.next()!.limit);
    expect(sizes).toEqual([2000, 1000, 2000, 1000]);
    // Rows so narrow that a thousand are under PAGE_BYTES_MIN: the ladder's least that is not.
    const narrow = new PagePlan(1, 500_000, 10_000, {
      link: new LinkModel(),
      now: () => 0,
      windowBytes: 128 * 2 ** 20,
      rateLimited: () => false,
    });
    narrow.learn({ parts: [], rowCount: 1000, bytes: 89_000, requests: 1 });
    narrow.skip({ start: 1, limit: 1000 });
    expect([narrow.next()!.limit, narrow.next()!.limit]).toEqual([8000, 4000]);
    // What is left is no more than one page of each: one page.
    const small = planned(4000, new LinkModel());
    expect(small.next()).toEqual({ start: 1001, limit: 3000 });
  });

  it("rows whose service time is the fixed time's, on the ladder, ending on a multiple of the size", () => {
    // The WAN bench's service: 70 ms a request (round trip included), 0.02 ms a row: 3,500 rows.
    const wan = planned(500_000, serviceOf(70, 0.02));
    expect(wan.next()).toEqual({ start: 1001, limit: 3000 }); // to the next multiple of 4,000
    expect(wan.next()).toEqual({ start: 4001, limit: 4000 });
    // Ten times the cost per row: 350 rows, but never a body under PAGE_BYTES_MIN (610 rows): 1,000.
    const dear = planned(500_000, serviceOf(70, 0.2));
    dear.next();
    expect(dear.next()!.limit).toBe(1000);
    // Rows that cost nothing measurable (a near service): the byte bound, 4.5 MB (10,465 rows) in whole
    // thousands: 10,000.
    const near = planned(500_000, serviceOf(2, 0));
    near.next();
    expect(near.next()!.limit).toBe(10_000);
    // A far service with a high fixed cost and cheap rows: as large.
    const far = planned(500_000, serviceOf(500, 0.02));
    far.next();
    expect(far.next()!.limit).toBe(10_000);
  });

  it('pages end on multiples of their size, so boundaries are the same from run to run', () => {
    const plan = planned(500_000, serviceOf(70, 0.02)); // 4,000-row pages
    plan.skip({ start: 1001, limit: 2500 }); // next row: 3,501
    expect(plan.next()).toEqual({ start: 3501, limit: 500 });
    expect(plan.next()).toEqual({ start: 4001, limit: 4000 });
  });

  it('under a cap on requests in flight, each page carries rows whose body lasts as long as their wait', () => {
    const link = serviceOf(70, 0.002);
    // One body: 4.3 MB in 172 ms, 25 MB/s.
    link.completed(
      { rows: 10_000, bytes: 4.3e6, waitMs: 90, bodyMs: 172, flightBytes: 4.3e6, flightMs: 262 },
      0,
    );
    const free = planned(500_000, link);
    const capped = planned(500_000, link, { scarce: true });
    free.next();
    capped.next();
    // Free: 70 / 0.002 = 35,000 rows, bound by 4.5 MB: 10,000. Capped: 70 / (0.0172 - 0.002) = 4,600
    // rows at least, and the rule above gives more already.
    expect(free.next()!.limit).toBe(10_000);
    expect(capped.next()!.limit).toBe(10_000);
    const dear = serviceOf(70, 0.02);
    dear.completed(
      { rows: 10_000, bytes: 4.3e6, waitMs: 270, bodyMs: 172, flightBytes: 4.3e6, flightMs: 442 },
      0,
    );
    const dearFree = planned(500_000, dear);
    const dearCapped = planned(500_000, dear, { scarce: true });
    dearFree.next();
    dearCapped.next();
    expect(dearFree.next()!.limit).toBe(4000);
    // A row's body (0.0172 ms) is shorter than its service time (0.02 ms): no page size makes the body
    // last its wait, so the byte bound.
    expect(dearCapped.next()!.limit).toBe(10_000);
  });

  it('metered: the rest in pages of half the window; a fixed pageSize is never resized', () => {
    const metered = planned(300_000, serviceOf(70, 0.02), { metered: true });
    // Half the window a page: 64 MiB at 430 bytes a row, 156,000 rows.
    expect(metered.next()).toEqual({ start: 1001, limit: 156_000 });
    const fixed = new PagePlan(1, 100_000, 20_000);
    fixed.learn(page(1000));
    expect(fixed.next()!.limit).toBe(20_000);
    expect(fixed.next()!.limit).toBe(20_000);
  });

  /**
   * The page requests of a read of `dataset` from `dqs serve` with `flags`: an emulator in a process of
   * its own, as the service is (in this one, its work would keep the client's event loop busy and the
   * client would rightly take itself for the bottleneck).
   */
  async function readServed(flags: string[], dataset = 'app_reviews') {
    const serve = await startServe(['--api-key', 'k', ...flags]);
    const client = new DatasetClient({ baseUrl: serve.url, apiKey: 'k' });
    const pages: { start: number; limit: number }[] = [];
    const onPage = (m: unknown) => pages.push(m as PageTiming);
    subscribe('dqs-client:page', onPage);
    try {
      const rows = await client.stream(dataset, {}, { output: 'rows' }).toArray();
      return { rows, limits: pages.map((p) => p.limit) };
    } finally {
      unsubscribe('dqs-client:page', onPage);
      await client.close();
      await serve.stop();
    }
  }

  it('over a WAN-shaped emulator: narrow rows of a service that charges per row come in small pages, whole', async () => {
    const { rows, limits } = await readServed([
      '--row-cap',
      '40000',
      '--latency-ms',
      '40',
      '--page-time-ms',
      '30',
      '--row-time-ms',
      '0.1',
    ]);
    // The first page (1,000 rows), then pages of a few thousand rows (the service's 70 ms are worth
    // ~700 of its rows; a body of 256 KiB at least is ~1,600), not the byte bound's 16,000: the two
    // startup sizes (2,000 and 4,000), and the last rows in one page if no more than those two are left.
    expect(limits[0]).toBe(1000);
    expect(limits.length).toBeGreaterThanOrEqual(8);
    expect(Math.max(...limits.slice(1))).toBeLessThanOrEqual(6000);
    expect(rows).toHaveLength(40_000);
    // The same rows as one page of an unshaped emulator (its data is deterministic).
    const plain = await startTestEmulator({ rowCap: 40_000 });
    const plainClient = new DatasetClient({ baseUrl: plain.url, apiKey: plain.apiKey });
    try {
      const whole = await plainClient
        .stream('app_reviews', {}, { output: 'rows', pageSize: 40_000 })
        .toArray();
      expect(rows).toEqual(whole);
    } finally {
      await plainClient.close();
      await plain.close();
    }
  });

  it('under a cap of 4 requests in flight: once a refusal is back, the requests sent are not refused', async () => {
    const emu = await startTestEmulator({
      rowCap: 120_000,
      latencyMs: 40,
      pageTimeMs: 30,
      rowTimeMs: 0.02,
      maxInFlight: 4,
    });
    const client = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey });
    // When the client learned of the first refusal (the emulator logs arrivals on the same clock).
    let firstRefusal: number | undefined;
    client.on('retry', (e: RetryEvent) => {
      if (e.error instanceof RateLimitedError) firstRefusal ??= Date.now();
    });
    try {
      let rows = 0;
      for await (const batch of client.stream('app_reviews', {})) rows += batch.numRows;
      expect(rows).toBe(120_000);
      const refused = emu.requests.filter((r) => r.method === 'GET' && r.status === 429);
      expect(refused.length).toBeGreaterThan(0); // the first wave passed the cap
      // The ceiling the refusals set holds: every refused request reached the service before the client
      // knew (or one round trip after, sent as it learned), none later.
      for (const r of refused) expect(r.at - firstRefusal!).toBeLessThan(500);
    } finally {
      await client.close();
      await emu.close();
    }
  });
});
