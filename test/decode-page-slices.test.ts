/**
 * A big page is decoded a slice of rows at a time, the event loop turning between slices, and with the
 * same result as in one go. Before, `PageDecoder` waited one turn and then decoded the whole page
 * synchronously: a 10,000-row job_listings page (~4 MB) held the loop for 20-30 ms, and the event-loop
 * delay p99 of a 500k-row `toTable()` was ~60 ms (bench/run.js). Nothing here is timed: the tests count
 * turns of the loop, and compare rows and errors.
 */

import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Table, tableToIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { makeColumnRowFactory, planColumns, RecordBatchBuilder } from '../src/convert/index.js';
import type { ColumnPlan } from '../src/convert/plan.js';
import { LoopBudget } from '../src/core/loop-budget.js';
import { type PageBody, PageDecoder } from '../src/decode/index.js';
import { FastTableDecoder } from '../src/decode/table-json-fast.js';
import { DatasetClient, InvalidValueError, MediaType } from '../src/index.js';
import { loopTurns, setup } from './helpers.js';

const ROWS = 10_000;

/** A 10,000-row page of job_listings (~4 MB) from the emulator, over HTTP, with its column plan. */
async function bigPage(): Promise<{ bytes: Buffer; plan: ColumnPlan[]; fields: unknown[] }> {
  const { client } = await setup({ seed: 5, rowCap: ROWS });
  const result = await client.query('job_listings', {});
  const parts: Buffer[] = [];
  for await (const chunk of await result.download({ start: 1, limit: ROWS })) parts.push(chunk as Buffer);
  const bytes = Buffer.concat(parts);
  expect(bytes.length).toBeGreaterThan(2_000_000);
  return { bytes, plan: planColumns(result.fields), fields: [...result.fields] };
}

function wholeBody(bytes: Buffer): PageBody {
  return {
    whole: async () => ({ body: bytes, pooled: undefined }),
    chunks: async function* () {
      yield bytes;
    },
  };
}

/** The decoded page as Arrow IPC bytes (one batch), to compare two decodes byte for byte. */
function ipcOf(plan: ColumnPlan[], page: Parameters<RecordBatchBuilder['appendDecoded']>[0]): Buffer {
  const builder = new RecordBatchBuilder(plan);
  builder.appendDecoded(page, 0, page.length);
  return Buffer.from(tableToIPC(new Table([builder.flush()]), 'stream'));
}

describe('page decoding in slices', () => {
  it('lets the event loop turn while a big page is decoded', async () => {
    const { bytes, plan } = await bigPage();
    const decoder = new PageDecoder('json', plan, { fast: true, strings: 'utf8', budget: new LoopBudget() });
    // Before, the decode took one turn to start and then ran to its end in one go.
    const turns = loopTurns();
    const decoded = await decoder.decode(wholeBody(bytes), { start: 1, limit: ROWS });
    turns.stop();
    expect(Array.isArray(decoded.part)).toBe(false); // the fast decoder's columns, not the reference's rows
    expect(decoded.envelope?.count).toBe(ROWS);
    // ~4 MB in slices of at most 1 MB: at least 4 turns; in one go it was 1 or 2.
    expect(turns.count).toBeGreaterThan(3);
  });

  it("allocates a page's buffers in a step of their own, before any row", async () => {
    const { bytes, plan } = await bigPage();
    // Allocating a 10,000-row page's buffers is a few ms on its own; with the first slice of rows in the
    // same step (as before) the turn ran to 10-14 ms. A first step that decoded rows would have called
    // the bail below through the row's bad value.
    const bad = Buffer.from(bytes.toString('latin1').replace(/"rows":\s*\[\s*\[/, '"rows":[[{},'), 'latin1');
    const first = new FastTableDecoder(plan).slices(bad, { start: 1, limit: ROWS });
    expect(first.next().done).toBe(false);
    let rest = first.next();
    while (!rest.done) rest = first.next();
    expect(rest.value).toBeUndefined(); // declined: the reference path names the bad value
  });

  it('gives the same columns decoded in slices as the reference, and decodes may interleave', async () => {
    const { bytes, plan } = await bigPage();
    const where = { start: 1, limit: ROWS };
    const one = new FastTableDecoder(plan).decode(bytes, where)!;
    expect(one.length).toBe(ROWS);
    // The reference: JSON.parse and the wire-row builder.
    const page = JSON.parse(bytes.toString('utf8')) as { rows: unknown[][] };
    const reference = new RecordBatchBuilder(plan);
    reference.appendRows(page.rows as never, 1, where);
    const expected = Buffer.from(tableToIPC(new Table([reference.flush()]), 'stream'));
    expect(ipcOf(plan, one).equals(expected)).toBe(true);
    // Two pages of one decoder decoded a slice each in turn (as two streams' pages could be): each is
    // still its own page, into its own buffers.
    const decoder = new FastTableDecoder(plan);
    const a = decoder.slices(bytes, where);
    const b = decoder.slices(bytes, where);
    let ra: IteratorResult<void, unknown> | undefined;
    let rb: IteratorResult<void, unknown> | undefined;
    let steps = 0;
    while (!ra?.done || !rb?.done) {
      if (!ra?.done) ra = a.next();
      if (!rb?.done) rb = b.next();
      steps++;
    }
    expect(steps).toBeGreaterThan(3);
    const [pa, pb] = [ra.value, rb.value] as (typeof one)[];
    expect(pa!.columns[0]).not.toBe(pb!.columns[0]);
    expect(ipcOf(plan, pa!).equals(expected)).toBe(true);
    expect(ipcOf(plan, pb!).equals(expected)).toBe(true);
  });

  it('declines a big page for row objects when a lone surrogate is in an early slice', async () => {
    const { bytes, plan, fields } = await bigPage();
    const page = JSON.parse(bytes.toString('utf8')) as { rows: unknown[][] };
    // A plain string column (a ticker column is a dictionary, which declines any lone surrogate).
    const text = fields.findIndex((f) => {
      const d = f as { type: string; format?: string };
      return d.type === 'string' && d.format !== 'ticker';
    });
    const j = plan.findIndex((c) => c.index === text);
    expect(j).toBeGreaterThanOrEqual(0);
    page.rows[2]![text] = 'before \ud800 after';
    const body = Buffer.from(JSON.stringify(page));
    const where = { start: 1, limit: ROWS };
    // Arrow keeps UTF-8 (U+FFFD for the surrogate): decoded. Row objects keep JS strings: declined, so the
    // reference's JSON.parse gives the exact string, even though the rest of the page came in many slices.
    expect(new FastTableDecoder(plan, { strings: 'utf8' }).decode(body, where)?.length).toBe(ROWS);
    expect(new FastTableDecoder(plan, { strings: 'exact' }).decode(body, where)).toBeUndefined();
    // Without it, row objects come from the fast path and equal JSON.parse's.
    const clean = new FastTableDecoder(plan, { strings: 'exact' }).decode(bytes, where)!;
    const objects: Record<string, unknown>[] = [];
    makeColumnRowFactory(plan)(clean, ROWS - 3, ROWS, objects);
    expect(objects.map((o) => o[plan[j]!.id])).toEqual(
      (JSON.parse(bytes.toString('utf8')) as { rows: unknown[][] }).rows.slice(-3).map((r) => r[text]),
    );
  });

  it('still names the row and column of a bad value late in a big page', async () => {
    const { bytes, fields } = await bigPage();
    const page = JSON.parse(bytes.toString('utf8')) as Record<string, unknown> & { rows: unknown[][] };
    const n = fields.findIndex((f) => (f as { type: string }).type === 'number');
    expect(n).toBeGreaterThanOrEqual(0);
    const column = (fields[n] as { id: string }).id;
    // Row 9,990 of 10,000: the fast decoder meets it many slices in, declines, and the reference names it.
    page.rows[9_989]![n] = 'not a number';
    const body = JSON.stringify(page);
    const id = 'c'.repeat(64);
    const server: Server = createServer((req, res) => {
      if (req.method === 'POST') {
        res.end(JSON.stringify({ id, state: 'complete', total: ROWS, formats: [MediaType.table] }));
        return;
      }
      res.writeHead(200, { 'content-type': MediaType.table }).end(body);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const client = new DatasetClient({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    });
    try {
      const err = await (await client.query('job_listings', {})).toTable().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(InvalidValueError);
      expect((err as InvalidValueError).row).toBe(9_990);
      expect((err as InvalidValueError).column).toBe(column);
      expect((err as InvalidValueError).page).toEqual({ start: 1, limit: ROWS });
    } finally {
      await client.close();
      server.close();
    }
  });

  it('sizes a page of more than 16,384 rows from the rows asked for: its batch adopts the buffers, no copy', async () => {
    // Pages of narrow rows hold 27,000 rows at the byte target. Buffers started at 16,384 rows doubled to
    // 32,768 (a copy) and the batch copied them again to trim the 5,768 unused rows.
    const rows = 30_000;
    const { client } = await setup({ seed: 5, rowCap: rows });
    const result = await client.query('web_traffic', {});
    const parts: Buffer[] = [];
    for await (const chunk of await result.download({ start: 1, limit: rows })) parts.push(chunk as Buffer);
    const plan = planColumns(result.fields);
    for (const format of ['json', 'csv'] as const) {
      if (format === 'csv') {
        parts.length = 0;
        for await (const chunk of await result.download({ start: 1, limit: rows, format: 'csv' }))
          parts.push(chunk as Buffer);
      }
      const decoder = new PageDecoder(format, plan, {
        fast: true,
        strings: 'utf8',
        budget: new LoopBudget(),
      });
      const page = await decoder.decode(wholeBody(Buffer.concat(parts)), { start: 1, limit: rows });
      expect(page.part).toMatchObject({ length: rows });
      const columns = (page.part as unknown as { columns: { kind: string; values?: ArrayLike<number> }[] })
        .columns;
      const numbers = columns.filter((c) => c.kind === 'number');
      expect(numbers.length).toBeGreaterThan(0);
      for (const c of numbers) expect(c.values!.length).toBe(rows);
    }
  });
});
