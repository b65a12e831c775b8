import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { type RecordBatch, tableFromIPC } from 'apache-arrow';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FIRST_PAGE_ROWS } from '../src/client.js';
import { formatDateDays, formatTimestampMs } from '../src/convert/dates.js';
import { queryRows } from '../src/emulator/index.js';
import {
  type DqsError,
  type FieldDescriptor,
  InvalidArgumentError,
  type InvalidValueError,
  type ProgressEvent,
  ProtocolError,
  ServerError,
  TruncatedError,
  toArrowIpc,
  type WireValue,
} from '../src/index.js';
import { expectRejects, FAST_RETRY, pageGets, setup, tablePage } from './helpers.js';

const SEED = 1;

/** A row object's values back in wire form, to compare with what the emulator generates. */
function toWire(fields: readonly FieldDescriptor[], row: Record<string, unknown>): WireValue[] {
  return fields.map((f) => {
    const v = row[f.id];
    // Arrow's Timestamp vectors give epoch ms as numbers; row objects give Dates.
    if (typeof v === 'number' && f.type === 'datetime') return formatTimestampMs(v);
    if (typeof v === 'number' && f.type === 'date') return formatDateDays(v / 86_400_000);
    if (v instanceof Date)
      return f.type === 'date' ? formatDateDays(v.getTime() / 86_400_000) : formatTimestampMs(v.getTime());
    return v as WireValue;
  });
}

function expected(
  dataset: string,
  body: object,
  start: number,
  count: number,
  rowCap = 500_000,
): WireValue[][] {
  return queryRows(dataset, body, { seed: SEED, rowCap }, start, count);
}

async function collect<T>(iterable: AsyncIterable<unknown>, delayMs = 0): Promise<T[]> {
  const out: T[] = [];
  for await (const x of iterable) {
    out.push(x as T);
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
  }
  return out;
}

describe('ResultStream', () => {
  it('streams every row in order, as rows and as Arrow, equal to the emulator source', async () => {
    const { client } = await setup({ seed: SEED });
    const body = { tickers: ['nasdaq:aapl'] };
    const result = await client.query('app_reviews', body);
    expect(result.total).toBeGreaterThan(1000);
    const want = expected('app_reviews', body, 1, result.total);
    const rows = await result.toArray({ pageSize: 777, concurrency: 3 });
    expect(rows.map((r) => toWire(result.fields, r))).toEqual(want);
    const table = await result.toTable({ pageSize: 1000, batchSize: 333 });
    expect(table.numRows).toBe(result.total);
    expect(table.batches.every((b, i, all) => b.numRows === 333 || i === all.length - 1)).toBe(true);
    expect(table.schema.fields.map((f) => f.name)).toEqual(result.fields.map((f) => f.id));
    const fromArrow = table
      .toArray()
      .map((r) => toWire(result.fields, r.toJSON() as Record<string, unknown>));
    expect(fromArrow).toEqual(want);
  });

  it('rows mode delivers every row of a larger result through for-await and through pipe (regression: stalled pump)', async () => {
    const { client } = await setup({ seed: SEED, rowCap: 30_000 });
    const result = await client.query('job_listings', {});
    let n = 0;
    for await (const _ of result.stream({ output: 'rows', pageSize: 5000, concurrency: 2 })) n++;
    expect(n).toBe(30_000);
    let m = 0;
    await pipeline(
      result.stream({ output: 'rows', pageSize: 3000 }),
      async (source: AsyncIterable<unknown>) => {
        for await (const _ of source) m++;
      },
    );
    expect(m).toBe(30_000);
  });

  it('property: any page size, concurrency, window, batch size, start and consumer delay give the same rows', async () => {
    const { client } = await setup({ seed: SEED, rowCap: 600 });
    const result = await client.query('job_listings', {});
    expect(result.total).toBe(600);
    expect(result.truncated).toBe(true);
    const all = expected('job_listings', {}, 1, 600, 600);
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          pageSize: fc.oneof(fc.integer({ min: 1, max: 250 }), fc.constantFrom(1, 100, 200, 300, 600, 1000)),
          concurrency: fc.integer({ min: 1, max: 6 }),
          extraWindow: fc.integer({ min: 0, max: 4 }),
          batchSize: fc.integer({ min: 1, max: 400 }),
          startRow: fc.oneof(fc.constantFrom(1, 600, 601, 599, 301), fc.integer({ min: 1, max: 601 })),
          delay: fc.constantFrom(0, 0, 1),
        }),
        async ({ pageSize, concurrency, extraWindow, batchSize, startRow, delay }) => {
          const stream = result.stream({
            pageSize,
            concurrency,
            window: concurrency + extraWindow,
            batchSize,
            startRow,
            onTruncated: 'warn',
          });
          const batches = await collect<RecordBatch>(stream, delay);
          const rows = batches.flatMap((b) => b.toArray().map((r) => toWire(result.fields, r.toJSON())));
          expect(rows).toEqual(all.slice(startRow - 1));
          for (const b of batches.slice(0, -1)) expect(b.numRows).toBe(batchSize);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('emits one empty batch carrying the schema for an empty result, and exactly one row for a 1-row result', async () => {
    const { client } = await setup({ seed: SEED, rowCap: 1 });
    const empty = await client.query('job_listings', { tickers: ['nasdaq:zzzz'] });
    expect(empty.total).toBe(0);
    const table = await empty.toTable();
    expect(table.numRows).toBe(0);
    expect(table.schema.fields.length).toBe(empty.fields.length);
    expect(await empty.toArray()).toEqual([]);
    const one = await client.query('job_listings', {});
    expect((await one.toArray()).map((r) => toWire(one.fields, r))).toEqual(
      expected('job_listings', {}, 1, 1, 1),
    );
  });

  it('applies backpressure: a paused consumer stops new page requests', async () => {
    const { client, emu } = await setup({ seed: SEED, rowCap: 20_000 });
    const result = await client.query('job_listings', {});
    // The query's own first page (1,000 rows) is not this stream's: it asks for pages of 100.
    emu.resetRequests();
    const stream = result.stream({ pageSize: 100, concurrency: 2, window: 4 });
    const it = stream[Symbol.asyncIterator]();
    await it.next();
    await new Promise((r) => setTimeout(r, 300));
    const whilePaused = pageGets(emu);
    // window (4) + Node's object buffer (1 batch) + the page being converted: far below the 200 pages.
    expect(whilePaused).toBeLessThanOrEqual(8);
    await new Promise((r) => setTimeout(r, 200));
    expect(pageGets(emu)).toBe(whilePaused);
    let n = 1;
    for (;;) {
      const next = await it.next();
      if (next.done) break;
      n++;
    }
    expect(n).toBe(200);
    expect(pageGets(emu)).toBe(200);
  });

  it('holds one Arrow batch in its buffer for a paused consumer, beside the window', async () => {
    // Regression: two batches waited there (highWaterMark 2), each a page's buffers kept alive; the
    // window already holds the pages read ahead (the IPC export's peak RSS follows what is held).
    const { client } = await setup({ seed: SEED, rowCap: 5000 });
    const result = await client.query('job_listings', {});
    const stream = result.stream({ pageSize: 100, concurrency: 2, window: 4 });
    const it = stream[Symbol.asyncIterator]();
    await it.next();
    await new Promise((r) => setTimeout(r, 200));
    expect(stream.readableLength).toBe(1);
    let n = 1;
    while (!(await it.next()).done) n++;
    expect(n).toBe(50);
  });

  it('destroy() and break abort in-flight requests and start no new one', async () => {
    const { client, emu } = await setup({
      seed: SEED,
      rowCap: 5000,
      fault: (req) =>
        req.method === 'GET' && Number(req.query.start) > 1 ? { kind: 'delay', ms: 3000 } : undefined,
    });
    const result = await client.query('job_listings', {});
    // The query's own first page (1,000 rows, more than these pages: not the stream's) is counted apart.
    const before = pageGets(emu);
    const stream = result.stream({ pageSize: 100, concurrency: 3 });
    const t0 = Date.now();
    let err: unknown;
    stream.on('error', (e) => {
      err = e;
    });
    const closed = new Promise((r) => stream.on('close', r));
    for await (const _ of stream) break;
    await closed;
    const started = stream.pagesStarted;
    // Requests sent before the break may still be arriving; after that, nothing new may come.
    await new Promise((r) => setTimeout(r, 100));
    const after = pageGets(emu);
    expect(after - before).toBeLessThanOrEqual(started);
    await new Promise((r) => setTimeout(r, 300));
    expect(pageGets(emu)).toBe(after);
    expect(Date.now() - t0).toBeLessThan(2000);
    // Node destroys a Readable left by `break` with its own AbortError (ABORT_ERR); nothing else may surface.
    expect(err === undefined || (err as { code?: string }).code === 'ABORT_ERR').toBe(true);

    const s2 = result.stream({ pageSize: 100, concurrency: 3 });
    s2.on('error', () => {});
    const first = s2[Symbol.asyncIterator]();
    await first.next();
    s2.destroy();
    await new Promise((r) => setTimeout(r, 300));
    const count = pageGets(emu);
    await new Promise((r) => setTimeout(r, 300));
    expect(pageGets(emu)).toBe(count);
  });

  it('an aborted signal ends the stream with an AbortError, also while the query is created', async () => {
    const { client } = await setup({ seed: SEED, queryDelayMs: 5000 });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const t0 = Date.now();
    await expectRejects<DqsError>(
      collect(
        client.stream('job_listings', { tickers: ['nasdaq:msft'] }, { signal: ac.signal, pollMinMs: 20 }),
      ),
      (e) => {
        expect(e.code).toBe('DQS_ABORTED');
      },
    );
    expect(Date.now() - t0).toBeLessThan(1500);
  });

  it('makes truncation visible, or fails on it when asked', async () => {
    const { client } = await setup({ seed: SEED, rowCap: 50 });
    const stream = client.stream('job_listings', {});
    const seen: number[] = [];
    stream.on('truncated', ({ total }: { total: number }) => seen.push(total));
    const batches = await collect<RecordBatch>(stream);
    expect(seen).toEqual([50]);
    expect(batches.reduce((n, b) => n + b.numRows, 0)).toBe(50);
    await expectRejects<TruncatedError>(
      collect(client.stream('job_listings', {}, { onTruncated: 'error' })),
      (e) => {
        expect(e).toBeInstanceOf(TruncatedError);
        expect(e.code).toBe('DQS_TRUNCATED');
      },
    );
  });

  it('completes short pages when the server clamps the limit', async () => {
    const { client, emu } = await setup({ seed: SEED, maxPageSize: 70 });
    const body = { tickers: ['nyse:wmt'] };
    const result = await client.query('store_locations', body);
    emu.resetRequests();
    const rows = await result.toArray({ pageSize: 200 });
    expect(rows.map((r) => toWire(result.fields, r))).toEqual(
      expected('store_locations', body, 1, result.total),
    );
    expect(pageGets(emu)).toBeGreaterThan(Math.ceil(result.total / 200));
  });

  it('pageSize auto: pages follow the bytes per row (more rows than the first page), never above a clamp', async () => {
    const limits = (emu: Awaited<ReturnType<typeof setup>>['emu']) =>
      emu.requests
        .filter((r) => r.method === 'GET' && /\/query\/[0-9a-f]{64}$/.test(r.path))
        .map((r) => Number(r.query.limit));
    // web_traffic rows are thin: ~4.5 MB pages hold well over 10,000 rows.
    const thin = await setup({ seed: SEED, rowCap: 150_000 });
    const all = await thin.client.query('web_traffic', {});
    const table = await all.toTable({ window: 4 });
    expect(table.numRows).toBe(all.total);
    const asked = limits(thin.emu);
    // The query's first page (descriptors and rows), the two startup sizes in turn until the service's
    // cost is known, then pages sized from the bytes per row: far more rows than the first page's.
    expect(asked[0]).toBe(FIRST_PAGE_ROWS);
    // (web_traffic's ~89 bytes a row: the startup sizes are the ladder's least over 256 KiB and twice it.)
    expect(asked.slice(1, 3)).toEqual([8000, 4000]);
    expect(Math.max(...asked)).toBeGreaterThan(10_000);
    // A server that answers at most 3,000 rows: requests sent once a short answer came back ask for no more.
    const clamped = await setup({ seed: SEED, rowCap: 120_000, maxPageSize: 3000 });
    const result = await clamped.client.query('web_traffic', {});
    const rows = await result.toArray({ window: 4, concurrency: 1 });
    expect(rows.map((r) => toWire(result.fields, r))).toEqual(
      expected('web_traffic', {}, 1, result.total, 120_000),
    );
    const late = clamped.emu.requests.filter((r) => r.method === 'GET' && Number(r.query.start) > 80_000);
    expect(late.length).toBeGreaterThan(0);
    expect(Math.max(...late.map((r) => Number(r.query.limit)))).toBeLessThanOrEqual(3000);
  });

  it('pageSize auto under a rate limit: requests are what the result costs, pages grow to half the window', async () => {
    const { client, emu } = await setup({ seed: SEED, rowCap: 120_000 }, { rateLimit: { requests: 1000 } });
    const result = await client.query('job_listings', {});
    emu.resetRequests();
    const table = await result.toTable({ windowBytes: 16 * 1024 * 1024 });
    expect(table.numRows).toBe(result.total);
    // ~420 bytes a row: 8 MiB pages are ~19,000 rows. The pages started before the first was read keep
    // 10,000 rows; the rest takes 4-5 GETs (8 at 10,000 rows a page, 12 in all).
    expect(pageGets(emu)).toBeLessThanOrEqual(9);
    const asked = emu.requests.filter((r) => r.method === 'GET').map((r) => Number(r.query.limit));
    expect(Math.max(...asked)).toBeGreaterThan(15_000);
  });

  it('a failing page ends the stream with a typed error naming the page, after the rows before it', async () => {
    // Retried as usual (the default count), with pauses of milliseconds: the test is about the error.
    const { client } = await setup(
      {
        seed: SEED,
        rowCap: 1000,
        fault: (req) =>
          req.method === 'GET' && req.query.start === '401'
            ? { kind: 'status', status: 500, body: '{"message":"disk on fire"}' }
            : undefined,
      },
      { retry: FAST_RETRY },
    );
    const stream = client.stream('job_listings', {}, { pageSize: 200, concurrency: 2 });
    const got: RecordBatch[] = [];
    const err = await expectRejects<ServerError>(
      (async () => {
        for await (const b of stream) got.push(b as RecordBatch);
      })(),
      (e) => expect(e).toBeInstanceOf(ServerError),
    );
    expect(err.page).toEqual({ start: 401, limit: 200 });
    expect(err.message).toContain('start=401');
    expect(got.reduce((n, b) => n + b.numRows, 0)).toBe(400);
    expect(stream.checkpoint?.nextRow).toBe(401);
    // A slow consumer: page 401 fails while rows 201-400 wait in the stream's buffer. They are still
    // handed over before the error (destroying at once dropped them, and the checkpoint said 201).
    const slow = client.stream('job_listings', {}, { pageSize: 200, concurrency: 2 });
    let rows = 0;
    const slowErr = await expectRejects<ServerError>(
      (async () => {
        for await (const b of slow) {
          rows += (b as RecordBatch).numRows;
          await new Promise((r) => setTimeout(r, 100));
        }
      })(),
      (e) => expect(e).toBeInstanceOf(ServerError),
    );
    expect(rows).toBe(400);
    expect(slowErr.checkpoint?.nextRow).toBe(401);
  });

  it('refuses pages that would lose or duplicate rows: wrong start, changing total', async () => {
    for (const breakage of ['start', 'total'] as const) {
      const { client } = await setup({
        seed: SEED,
        rowCap: 300,
        fault: (req) => {
          if (req.method !== 'GET' || req.query.start !== '101') return undefined;
          const page = {
            id: req.path.split('/').pop(),
            state: 'complete',
            total: breakage === 'total' ? 299 : 300,
            count: 1,
            start: breakage === 'start' ? 102 : 101,
            limit: 100,
            rows: [],
            fields: [],
            group_fields: [],
            sort_fields: [],
            last_date_updated: '2024-01-01T00:00:00Z',
          };
          page.count = 0;
          return { kind: 'status', status: 200, body: JSON.stringify(page) };
        },
      });
      await expectRejects<ProtocolError>(
        collect(client.stream('job_listings', {}, { pageSize: 100 })),
        (e) => {
          expect(e).toBeInstanceOf(ProtocolError);
          expect(e.message).toMatch(
            breakage === 'start' ? /start=102 for start=101/ : /total changed from 300 to 299/,
          );
          expect(e.page).toEqual({ start: 101, limit: 100 });
        },
      );
    }
  });

  it('reports an invalid value with column and row, or nulls it with onInvalid: null', async () => {
    const { client } = await setup({ seed: SEED, rowCap: 10 });
    const result = await client.query('job_listings', {});
    const dateCol = result.fields.findIndex((f) => f.type === 'date');
    const rows = expected('job_listings', {}, 1, 10, 10);
    rows[3]![dateCol] = '20241345';
    const page = tablePage(result, rows, { start: 1, limit: 10, total: 10 });
    const { client: c2 } = await setup({
      seed: SEED,
      rowCap: 10,
      fault: (req) =>
        req.method === 'GET' && req.query.start === '1' && req.query.limit === '10'
          ? { kind: 'status', status: 200, body: page }
          : undefined,
    });
    const r2 = await c2.query('job_listings', {});
    await expectRejects<InvalidValueError>(r2.toTable({ pageSize: 10 }), (e) => {
      expect(e.code).toBe('DQS_INVALID_VALUE');
      expect(e).toMatchObject({ row: 4, column: result.fields[dateCol]!.id, value: '20241345' });
      expect(e.message).toContain('20241345');
    });
    const table = await r2.toTable({ pageSize: 10, onInvalid: 'null' });
    expect(table.getChild(result.fields[dateCol]!.id)!.get(3)).toBeNull();
    expect(table.numRows).toBe(10);
  });

  it('applies per-column type overrides', async () => {
    const { client } = await setup({ seed: SEED });
    const result = await client.query('web_traffic', { tickers: ['nasdaq:aapl'] });
    const dateField = result.fields.find((f) => f.type === 'date')!;
    const numField = result.fields.find((f) => f.type === 'number')!;
    const table = await result.toTable({ types: { [dateField.id]: 'string', [numField.id]: 'string' } });
    expect(String(table.schema.fields.find((f) => f.name === dateField.id)!.type)).toBe('Utf8');
    expect(typeof table.getChild(dateField.id)!.get(0)).toBe('string');
    expect(table.getChild(dateField.id)!.get(0)).toMatch(/^\d{8}$/);
    await expectRejects<InvalidArgumentError>(result.toTable({ types: { no_such_column: 'date' } }), (e) =>
      expect(e.argument).toBe('types'),
    );
  });

  it('rejects bad stream options with the option named', async () => {
    const { client } = await setup({ seed: SEED });
    const result = await client.query('store_locations', { tickers: ['nyse:wmt'] });
    for (const [opts, name] of [
      [{ pageSize: 0 }, 'pageSize'],
      [{ concurrency: 1.5 }, 'concurrency'],
      [{ output: 'csv' }, 'output'],
      [{ format: 'parquet' }, 'format'],
      [{ concurrency: 4, window: 2 }, 'window'],
      [{ startRow: 0 }, 'startRow'],
    ] as const) {
      expect(() => result.stream(opts as never)).toThrow(InvalidArgumentError);
      try {
        result.stream(opts as never);
      } catch (e) {
        expect((e as InvalidArgumentError).argument).toBe(name);
      }
    }
  });

  it('reports progress with a checkpoint, and resumes from it without re-reading rows', async () => {
    const { client, emu } = await setup({ seed: SEED, rowCap: 1000 });
    const result = await client.query('job_listings', {});
    const events: ProgressEvent[] = [];
    const stream = result.stream({ pageSize: 250 });
    stream.on('progress', (e: ProgressEvent) => events.push(e));
    await collect(stream);
    expect(events.map((e) => e.rows)).toEqual([250, 500, 750, 1000]);
    expect(events.at(-1)).toMatchObject({
      total: 1000,
      pages: 4,
      checkpoint: { queryId: result.id, nextRow: 1001 },
    });
    expect(events.at(-1)!.bytes).toBeGreaterThan(1000 * 50);
    emu.resetRequests();
    const rest = await result.toArray({ startRow: events[1]!.checkpoint.nextRow, pageSize: 250 });
    expect(rest.map((r) => toWire(result.fields, r))).toEqual(expected('job_listings', {}, 501, 500, 1000));
    expect(emu.requests.filter((r) => r.method === 'GET').map((r) => r.query.start)).toEqual(['501', '751']);
    // A new process has only the checkpoint: client.result() finds the query again without creating one.
    emu.resetRequests();
    const again = await client.result('job_listings', events[1]!.checkpoint.queryId);
    expect(again).toMatchObject({ id: result.id, total: 1000, truncated: true });
    const rest2 = await again.toArray({ startRow: 501, pageSize: 250 });
    expect(rest2.map((r) => toWire(result.fields, r))).toEqual(expected('job_listings', {}, 501, 500, 1000));
    expect(emu.requests.some((r) => r.method === 'POST')).toBe(false);
  });

  it('writes byte-identical Arrow IPC for the same query twice in one process (stable dictionary ids)', async () => {
    const { client } = await setup({ seed: SEED, rowCap: 2000 });
    const write = async () => {
      const chunks: Buffer[] = [];
      await pipeline(
        client.stream('job_listings', {}, { pageSize: 500 }),
        toArrowIpc({ format: 'file' }),
        async (bytes: AsyncIterable<Buffer>) => {
          for await (const b of bytes) chunks.push(b);
        },
      );
      return Buffer.concat(chunks);
    };
    const [a, b] = [await write(), await write()];
    expect(tableFromIPC(a).schema.fields.some((f) => String(f.type).startsWith('Dictionary'))).toBe(true);
    expect(a.equals(b)).toBe(true);
  });

  it('reports progress when consumed through pipeline (flowing mode) too', async () => {
    const { client } = await setup({ seed: SEED, rowCap: 1000 });
    const stream = client.stream('job_listings', {}, { pageSize: 250 });
    const events: ProgressEvent[] = [];
    stream.on('progress', (e: ProgressEvent) => events.push(e));
    await pipeline(stream, toArrowIpc({ format: 'stream' }), async (bytes: AsyncIterable<Buffer>) => {
      for await (const _ of bytes);
    });
    expect(events.map((e) => e.rows)).toEqual([250, 500, 750, 1000]);
    expect(events.at(-1)!.checkpoint.nextRow).toBe(1001);
  });

  it('pipes into toArrowIpc (file and stream) and reads back equal with apache-arrow', async () => {
    const { client } = await setup({ seed: SEED, rowCap: 3000 });
    const dir = await mkdtemp(join(tmpdir(), 'dqs-ipc-'));
    try {
      const result = await client.query('job_listings', {});
      const table = await result.toTable({ pageSize: 700 });
      for (const format of ['file', 'stream'] as const) {
        const path = join(dir, `out.${format}`);
        await pipeline(
          client.stream('job_listings', {}, { pageSize: 700 }),
          toArrowIpc({ format }),
          createWriteStream(path),
        );
        const back = tableFromIPC(await readFile(path));
        expect(back.numRows).toBe(3000);
        expect(back.schema.fields.map((f) => `${f.name}:${f.type}`)).toEqual(
          table.schema.fields.map((f) => `${f.name}:${f.type}`),
        );
        expect(back.toArray().map((r) => r.toJSON())).toEqual(table.toArray().map((r) => r.toJSON()));
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
