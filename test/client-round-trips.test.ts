/**
 * How many requests a query costs, counted by the emulator: a small query the create answers `complete`
 * is the POST and one data GET (no HEAD, no separate 1-row request for the descriptors); a large one's
 * first GET is a data page too, whose rows the stream does not ask for again.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { FIRST_PAGE_ROWS } from '../src/client.js';
import { queryRows } from '../src/emulator/index.js';
import { DatasetClient, DecodeError, InvalidValueError, MediaType, rawBody } from '../src/index.js';
import { setup } from './helpers.js';

const AAPL = { tickers: ['nasdaq:aapl'] };
// 2,269 rows: one page.
const SMALL = 'web_traffic';

function kinds(emu: { requests: readonly { method: string; query: Record<string, string> }[] }): string[] {
  return emu.requests.map((r) => (r.method === 'GET' ? `GET ${r.query.start}+${r.query.limit}` : r.method));
}

describe('round trips', () => {
  it('a small complete query costs two requests: the POST and one GET that serves descriptors and rows', async () => {
    const { emu, client } = await setup();
    const result = await client.query(SMALL, AAPL);
    expect(result.total).toBeGreaterThan(0);
    expect(result.total).toBeLessThanOrEqual(10_000);
    const table = await result.toTable();
    expect(table.numRows).toBe(result.total);
    expect(kinds(emu)).toEqual(['POST', `GET 1+${result.total}`]);
    // The rows are the emulator's, in order.
    const first = queryRows(SMALL, AAPL, { seed: 1, rowCap: 500_000 }, 1, 1)[0]!;
    expect(table.getChildAt(0)?.get(0)).toBe(first[0]);
    // A second read of the same result asks again (the kept page is handed out once).
    emu.resetRequests();
    expect((await result.toArray()).length).toBe(result.total);
    expect(kinds(emu)).toEqual([`GET 1+${result.total}`]);
  });

  it('an empty result takes its descriptors from an earlier result of the same dataset and body: one request', async () => {
    const { emu, client } = await setup();
    // The first empty result of a dataset still reads its descriptors (nothing has shown them yet).
    const first = await client.query('store_locations', { tickers: ['nyse:ibm'] });
    expect(first.total).toBe(0);
    expect(kinds(emu)).toEqual(['POST', 'GET 1+1']);
    const shown = first.fields;
    // Another empty one of the same dataset and body shape: the POST alone, the same columns.
    emu.resetRequests();
    const again = await client.query('store_locations', { tickers: ['nasdaq:msft'] });
    expect(again.total).toBe(0);
    expect(kinds(emu)).toEqual(['POST']);
    expect(again.fields).toEqual(shown);
    const table = await again.toTable();
    expect(table.numRows).toBe(0);
    expect(table.schema.fields.map((f) => f.name)).toEqual(shown.map((f) => f.id));
    expect(kinds(emu)).toEqual(['POST']);
    // Descriptors are per dataset: another dataset's empty result reads its own.
    emu.resetRequests();
    const other = await client.query('web_traffic', { tickers: ['nyse:ibm'] });
    expect(other.total).toBe(0);
    expect(kinds(emu)).toEqual(['POST', 'GET 1+1']);
    expect(other.fields).not.toEqual(shown);
    // A body with members besides `tickers` is another shape: its descriptors are read, not borrowed.
    emu.resetRequests();
    await client.query('store_locations', rawBody({ tickers: ['nasdaq:msft'], extra: 1 }));
    expect(kinds(emu)).toEqual(['POST', 'GET 1+1']);
  });

  it('client.stream() of a small query: two requests too', async () => {
    const { emu, client } = await setup();
    const rows = await client.stream(SMALL, AAPL, { output: 'rows' }).toArray();
    expect(rows.length).toBeGreaterThan(0);
    expect(emu.requests.map((r) => r.method)).toEqual(['POST', 'GET']);
  });

  it('a result cut at the row cap is known from the GET headers, without a HEAD', async () => {
    const { emu, client } = await setup({ rowCap: 700 });
    const result = await client.query('job_listings', {});
    expect(result.total).toBe(700);
    expect(result.truncated).toBe(true);
    expect(emu.requests.map((r) => r.method)).toEqual(['POST', 'GET']);
  });

  it('a large result: no request only for descriptors; the first is a data page whose rows serve the stream', async () => {
    const { emu, client } = await setup({ rowCap: 25_000 });
    const result = await client.query('job_listings', {});
    // query() has read one data page of FIRST_PAGE_ROWS rows: it described the result.
    expect(kinds(emu)).toEqual(['POST', `GET 1+${FIRST_PAGE_ROWS}`]);
    const table = await result.toTable();
    expect(table.numRows).toBe(25_000);
    const gets = kinds(emu).filter((k) => k.startsWith('GET'));
    expect(kinds(emu).includes('HEAD')).toBe(false);
    // The stream does not ask for the first page's rows again; every other row is asked for once.
    const asked = gets.slice(1).map((g) => g.slice(4).split('+').map(Number) as [number, number]);
    asked.sort((a, b) => a[0] - b[0]);
    let next = FIRST_PAGE_ROWS + 1;
    for (const [start, limit] of asked) {
      expect(start).toBe(next);
      next = start + limit;
    }
    expect(next).toBe(25_001);
  });

  it('a running query is polled with HEAD from ~50 ms, a few times for a query of 300 ms', async () => {
    const { emu, client } = await setup({ queryDelayMs: 300 });
    const result = await client.query(SMALL, AAPL);
    const heads = emu.requests.filter((r) => r.method === 'HEAD').length;
    expect(heads).toBeGreaterThanOrEqual(2);
    expect(heads).toBeLessThanOrEqual(8);
    await result.toTable();
    expect(emu.requests.filter((r) => r.method === 'GET')).toHaveLength(1);
  });

  it("honours a HEAD's Retry-After while the query runs", async () => {
    const id = 'a'.repeat(64);
    const heads: number[] = [];
    const page = {
      id,
      state: 'complete',
      total: 1,
      count: 1,
      start: 1,
      limit: 1,
      rows: [['x']],
      fields: [{ id: 'a', type: 'string' }],
      group_fields: [],
      sort_fields: [],
    };
    const server: Server = createServer((req, res) => {
      if (req.method === 'POST')
        return res.end(JSON.stringify({ id, state: 'running', total: 0, formats: [] }));
      if (req.method === 'HEAD') {
        heads.push(performance.now());
        const done = heads.length >= 2;
        return res
          .writeHead(200, {
            'x-state': done ? 'complete' : 'running',
            'x-total': done ? '1' : '0',
            'x-formats': MediaType.table,
            'retry-after': '1',
          })
          .end();
      }
      res.writeHead(200, { 'content-type': MediaType.table }).end(JSON.stringify(page));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = new DatasetClient({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    });
    try {
      const result = await client.query('x', {});
      expect(await result.toArray()).toEqual([{ a: 'x' }]);
      expect(heads).toHaveLength(2);
      expect(heads[1]! - heads[0]!).toBeGreaterThanOrEqual(950);
    } finally {
      await client.close();
      server.close();
    }
  });

  it("the first page's rows are decoded by the stream: a bad one is a typed error naming the page and row", async () => {
    const id = 'b'.repeat(64);
    const fields = [
      { id: 'a', type: 'string' },
      { id: 'n', type: 'number' },
    ];
    // The first page's envelope is read without its rows as values, so what is wrong inside a row must
    // still surface, from the stream, not be lost or become a null.
    const bodies: Record<string, string> = {
      text: `{"id":"${id}","state":"complete","total":3,"count":3,"start":1,"limit":3,"rows":[["x",1],["y","two"],["z",3]],"fields":${JSON.stringify(fields)},"last_date_updated":"2024-01-01T00:00:00Z"}`,
      row: `{"id":"${id}","state":"complete","total":3,"count":3,"start":1,"limit":3,"rows":[["x",1],{"a":"y"},["z",3]],"fields":${JSON.stringify(fields)},"last_date_updated":"2024-01-01T00:00:00Z"}`,
      syntax: `{"id":"${id}","state":"complete","total":3,"count":3,"start":1,"limit":3,"rows":[["x",1],["y",02],["z",3]],"fields":${JSON.stringify(fields)},"last_date_updated":"2024-01-01T00:00:00Z"}`,
    };
    let body = '';
    const server: Server = createServer((req, res) => {
      if (req.method === 'POST')
        return res.end(JSON.stringify({ id, state: 'complete', total: 3, formats: [MediaType.table] }));
      res.writeHead(200, { 'content-type': MediaType.table }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = new DatasetClient({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    });
    try {
      body = bodies.text!;
      const result = await client.query('x', {});
      const err = await result.toTable().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(InvalidValueError);
      expect((err as InvalidValueError).column).toBe('n');
      expect((err as InvalidValueError).row).toBe(2);
      expect((err as InvalidValueError).page).toEqual({ start: 1, limit: 3 });
      // Not JSON inside a row: the stream's decoder finds it, a DecodeError naming the page.
      body = bodies.syntax!;
      const broken = await (await client.query('x', {})).toTable().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(broken).toBeInstanceOf(DecodeError);
      expect((broken as DecodeError).message).toContain('not JSON');
      expect((broken as DecodeError).page).toEqual({ start: 1, limit: 3 });
      // A row that is not an array: the stream's decoder finds it too, a DecodeError naming the page.
      body = bodies.row!;
      const bad = await (await client.query('x', {})).toTable().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(bad).toBeInstanceOf(DecodeError);
      expect((bad as DecodeError).message).toContain('rows[1] is not an array');
      expect((bad as DecodeError).page).toEqual({ start: 1, limit: 3 });
    } finally {
      await client.close();
      server.close();
    }
  });
});
