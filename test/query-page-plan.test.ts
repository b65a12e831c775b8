/**
 * What the server says about size is bounded before it is used. Regression: `X-Total: 10^12` made the
 * client build its whole page plan up front (2.4-4.7 GB before the first row), and a total of 10^9 was
 * read forever since the spec's 500,000-row cap was never enforced.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DatasetClient, MediaType, type RowLimitError } from '../src/index.js';
import { PagePlan } from '../src/query/page-plan.js';
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

  it('hands out pages from a cursor, whose page size can change', () => {
    const plan = new PagePlan(1, 10, 4);
    expect(plan.next()).toEqual({ start: 1, limit: 4 });
    plan.pageSize = 2;
    expect(plan.next()).toEqual({ start: 5, limit: 2 });
    // A prefetched page shorter than a page is made up to a whole one: later pages start where theirs would.
    plan.skip({ start: 7, limit: 1 });
    expect(plan.next()).toEqual({ start: 8, limit: 1 });
    expect(plan.next()).toEqual({ start: 9, limit: 2 });
    expect(plan.next()).toBeUndefined();
    expect(plan.done).toBe(true);
    const huge = new PagePlan(1, 1e12, 10_000);
    expect(huge.next()).toEqual({ start: 1, limit: 10_000 });
  });
});

describe("page size from the service's cost per row", () => {
  const sizing = { windowBytes: 128 * 2 ** 20, rateLimited: () => false };
  /** A page of `rows` rows of 430 bytes each. */
  const page = (rows: number) => ({ parts: [], rowCount: rows, bytes: rows * 430, requests: 1 });

  /**
   * The plan's page size after a 1,000-row first page and three answers to byte-sized pages of a service
   * costing `fixed + rows x perRow` (plus `noise` on each answer).
   */
  function sizedBy(fixed: number, perRow: number, noise: readonly number[] = [0, 0, 0]): number {
    const plan = new PagePlan(1, 500_000, 10_000, sizing);
    plan.learn(page(1000));
    plan.answered(1000, fixed + 1000 * perRow);
    const byteRows = plan.pageSize;
    expect(byteRows).toBe(10_000); // 4.5 MB at 430 bytes a row
    // Stalls and queueing only add to a wait: the quickest of a size counts.
    for (const extra of noise) plan.answered(byteRows, fixed + byteRows * perRow + extra);
    return plan.pageSize;
  }

  it('smaller pages where the service spends time per row, the byte target where rows cost nothing', () => {
    // The WAN bench's service: 70 ms a request (round trip included), 0.02 ms a row: its rows wait 2.9x
    // the fixed cost on a byte-target page, not enough to pay for more requests: the byte target stays.
    expect(sizedBy(70, 0.02)).toBe(10_000);
    // Rows that dominate (0.05 ms a row: 7x): 2,800 rows by the rule, made the smallest halving of the
    // byte target that holds them (stable page boundaries from run to run), at most a quarter of it.
    expect(sizedBy(70, 0.05)).toBe(5000);
    expect(sizedBy(300, 0.2)).toBe(5000);
    // Ten times the cost per row: 700 rows by the rule, but at most 4x smaller than the byte target (a
    // service slowed by the load of the bigger pages, sent together, looks dearer per row than it is).
    expect(sizedBy(70, 0.2)).toBe(3000); // 10,000 / 4, rounded to a thousand rows
    // A high fixed cost per request and cheap rows: the byte target stays.
    expect(sizedBy(500, 0.02)).toBe(10_000);
    // A near service whose rows cost nothing measurable, with stalls of a busy event loop on some
    // answers: the quickest shows no cost per row, and the byte target stays.
    expect(sizedBy(2, 0, [60, 0, 35])).toBe(10_000);
    // A near service whose rows cost a little (an emulator building pages as it answers): 2 ms a 10,000-row
    // page; the byte target stays.
    expect(sizedBy(2, 0.0002)).toBe(10_000);
    // Stalls on some answers of the far service do not make its rows look dearer than they are.
    expect(sizedBy(70, 0.2, [0, 150, 90])).toBe(3000);
  });

  it('decides once, after three answers of a size at least twice the first, as they come', () => {
    const plan = new PagePlan(1, 500_000, 10_000, sizing);
    plan.learn(page(1000));
    plan.answered(1000, 270);
    plan.answered(10_000, 2070);
    plan.answered(10_000, 2070);
    expect(plan.pageSize).toBe(10_000);
    plan.answered(10_000, 2070);
    expect(plan.pageSize).toBe(3000);
    // Later answers (of the smaller pages, slower or not) change nothing.
    for (let i = 0; i < 3; i++) plan.answered(3000, 5000);
    expect(plan.pageSize).toBe(3000);
  });

  it('a fixed pageSize is never resized', () => {
    const plan = new PagePlan(1, 500_000, 10_000);
    plan.learn(page(1000));
    plan.answered(1000, 270);
    for (let i = 0; i < 3; i++) plan.answered(10_000, 2070);
    expect(plan.pageSize).toBe(10_000);
  });
});

describe('a result the byte target would plan whole is spread while the cost per row is unknown', () => {
  const sizing = { windowBytes: 128 * 2 ** 20, rateLimited: () => false };
  const page = (rows: number, rowBytes: number) => ({
    parts: [],
    rowCount: rows,
    bytes: rows * rowBytes,
    requests: 1,
  });
  /** A plan of `total` rows of `rowBytes` after its 1,000-row first page (answered in `firstMs`). */
  function planned(total: number, rowBytes: number, firstMs: number): PagePlan {
    const plan = new PagePlan(1, total, 10_000, sizing);
    plan.learn(page(1000, rowBytes));
    plan.answered(1000, firstMs);
    plan.skip({ start: 1, limit: 1000 });
    return plan;
  }

  it('narrow rows: 7 pages of 27,000 rows become 15 of 13,000 for 8 requests at once, twice over', () => {
    // The WAN bench's narrower rows: app_reviews, 193,276 rows of ~165 bytes.
    const plan = planned(193_276, 165, 98);
    expect(plan.pageSize).toBe(27_000); // the byte target: 4.5 MB
    plan.spread(8);
    expect(plan.pageSize).toBe(13_000); // 192,276 rows / (2 x 8), to a thousand rows up
    const limits: number[] = [];
    for (let r = plan.next(); r; r = plan.next()) limits.push(r.limit);
    expect(limits).toHaveLength(15);
    expect(limits.slice(0, -1).every((l) => l === 13_000)).toBe(true);
  });

  it('pages still waiting are planned anew only when the cost calls for smaller ones', () => {
    // Rows that dominate (70 ms a request, 0.2 ms a row): 3,000-row pages, smaller than the spread 7,000.
    const dear = planned(100_000, 430, 70 + 200);
    dear.spread(8);
    expect(dear.pageSize).toBe(7000); // 99,000 / 16, above the floor (10,000 / MAX_COST_CUT)
    expect(dear.answered(7000, 70 + 1400)).toBe(false);
    expect(dear.answered(7000, 70 + 1400)).toBe(false);
    expect(dear.answered(7000, 70 + 1400)).toBe(true); // decided: give back what waits
    expect(dear.pageSize).toBe(3000);
    // The WAN bench's service (0.02 ms a row): the byte target suits it. Pages planned from now on are
    // byte-sized; those already planned are not made bigger (the result's last pages would end alone).
    const cheap = planned(100_000, 430, 70 + 20);
    cheap.spread(8);
    expect(cheap.pageSize).toBe(7000);
    for (let i = 0; i < 3; i++) expect(cheap.answered(7000, 70 + 140)).toBe(false);
    expect(cheap.pageSize).toBe(10_000);
  });

  it('no spread where the byte target already makes enough pages, under metering, or with a fixed pageSize', () => {
    const big = planned(500_000, 430, 90); // 10,000-row pages: 50 of them
    big.spread(8);
    expect(big.pageSize).toBe(10_000);
    const small = planned(5000, 430, 90); // 4,000 rows left: never below a quarter of the byte target
    small.spread(8);
    expect(small.pageSize).toBe(3000);
    const metered = new PagePlan(1, 100_000, 10_000, { ...sizing, rateLimited: () => true });
    metered.learn(page(1000, 430));
    const before = metered.pageSize;
    metered.spread(8);
    expect(metered.pageSize).toBe(before);
    const fixed = new PagePlan(1, 100_000, 20_000);
    fixed.learn(page(1000, 430));
    fixed.spread(8);
    expect(fixed.pageSize).toBe(20_000);
  });

  it('over the emulator with a WAN shape: a 40,000-row result of narrow rows comes in spread pages, whole', async () => {
    const emu = await startTestEmulator({ rowCap: 40_000, latencyMs: 40, pageTimeMs: 30, rowTimeMs: 0.02 });
    const client = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey });
    try {
      const since = emu.requests.length;
      const rows = await client.stream('app_reviews', {}, { output: 'rows' }).toArray();
      const limits = emu.requests
        .slice(since)
        .filter((r) => r.method === 'GET' && /\/query\//.test(r.path) && r.query.limit)
        .map((r) => Number(r.query.limit));
      // The first page (1,000 rows), then pages a quarter of the byte target (~27,000 rows of these),
      // not one page of 27,000 rows and one of the remaining 12,000.
      expect(limits[0]).toBe(1000);
      expect(limits.length).toBeGreaterThanOrEqual(5);
      expect(Math.max(...limits.slice(1))).toBeLessThanOrEqual(8000);
      expect(limits.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(40_000);
      expect(rows).toHaveLength(40_000);
      const whole = await client.stream('app_reviews', {}, { output: 'rows', pageSize: 40_000 }).toArray();
      expect(rows).toEqual(whole);
    } finally {
      await client.close();
    }
  });
});

describe("a far service's result the byte budget holds goes out whole, after a refusal's round trip", () => {
  // 120,000 narrow rows (~20 MB) from a service that spends 0.1 ms a row: the spread makes 15 pages of
  // 8,000 rows, each waiting ~0.9 s for its first byte. Grown per answer, the 8 after the first 8 went
  // out only once those answered, ~0.9 s later; the byte budget holds all 15, so they go out together.
  const shape = { rowCap: 120_000, latencyMs: 40, pageTimeMs: 30, rowTimeMs: 0.1 };
  /** The rows read from a fresh emulator of `shape` and `options`, and the page requests it saw. */
  async function read(options: { maxInFlight?: number } = {}) {
    const emu = await startTestEmulator({ ...shape, ...options });
    const client = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey });
    try {
      let rows = 0;
      for await (const batch of client.stream('app_reviews', {})) rows += batch.numRows;
      const pages = emu.requests.filter(
        (r) => r.method === 'GET' && /\/query\//.test(r.path) && r.query.limit,
      );
      return { rows, pages };
    } finally {
      await client.close();
      await emu.close();
    }
  }

  it('all its pages are asked for within a page of each other, and the rows are whole', async () => {
    const { rows, pages } = await read();
    expect(rows).toBe(120_000);
    const at = pages.slice(1).map((r) => r.at); // after the query's first page
    expect(at.length).toBeGreaterThan(8);
    // One page's wait is 30 + 8,000 x 0.1 ms = 830 ms: every request arrived before any could be answered.
    expect(Math.max(...at) - Math.min(...at)).toBeLessThan(600);
  });

  it('under a cap of 4 requests in flight, only the first 8 can be refused, and none after', async () => {
    const { rows, pages } = await read({ maxInFlight: 4 });
    expect(rows).toBe(120_000);
    const refused = pages.filter((r) => r.status === 429);
    // Sent all at once, 16 requests met a cap of 4: 12 refusals, each then waiting out its Retry-After.
    expect(refused.length).toBeLessThanOrEqual(4);
    expect(refused.every((r) => r.at - refused[0]!.at < 1000)).toBe(true);
  });
});

describe('pages planned before requests turned out metered', () => {
  const page = (rows: number) => ({ parts: [], rowCount: rows, bytes: rows * 430, requests: 1 });

  it('says when its pages have grown (those planned before are better planned anew) and takes them back', () => {
    let metered = false;
    const plan = new PagePlan(1, 300_000, 10_000, {
      windowBytes: 48 * 2 ** 20,
      rateLimited: () => metered,
    });
    expect(plan.learn(page(1000))).toBe(false);
    const a = plan.next()!;
    const b = plan.next()!;
    expect(b).toEqual({ start: a.start + a.limit, limit: 10_000 });
    expect(plan.learn(page(10_000))).toBe(false);
    metered = true;
    // Half the window a page: 24 MiB at 430 bytes a row, 58,000 rows.
    expect(plan.learn(page(10_000))).toBe(true);
    expect(plan.learn(page(10_000))).toBe(false);
    // Latest first: `a` is not the last handed out while `b` is.
    expect(() => plan.giveBack(a)).toThrow(/not the last handed out/);
    plan.giveBack(b);
    plan.giveBack(a);
    expect(plan.next()).toEqual({ start: a.start, limit: 58_000 });
  });
});
