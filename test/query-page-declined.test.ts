/**
 * Pages are decoded as their bytes arrive (decode/table-json-stream.ts). A page that turns out not to be
 * an ordinary one goes to the reference decoder, which decides (the same rows, an invalid value nulled,
 * or the same typed error with its row and column): on the chunks kept for it among the stream's first
 * pages, else on the page asked for again and read whole. After one such page, a stream reads its pages
 * whole. No row lost, none repeated, at most one more request per stream.
 */
import { describe, expect, it } from 'vitest';
import type { InvalidValueError } from '../src/core/errors.js';
import { queryRows } from '../src/emulator/index.js';
import { collectRows, expectRejects, setup, tablePage } from './helpers.js';

const SEED = 7;
const CAP = 50;

/** A client whose service serves pages `bad` (10-row pages, by start) with a date that is not one. */
async function withBadPages(bad: readonly number[]) {
  const { client } = await setup({ seed: SEED, rowCap: CAP });
  const result = await client.query('job_listings', {});
  const dateCol = result.fields.findIndex((f) => f.type === 'date');
  const page = (start: number) => {
    const rows = queryRows('job_listings', {}, { seed: SEED, rowCap: CAP }, start, 10);
    rows[3]![dateCol] = '20241345';
    return tablePage(result, rows, { start, limit: 10, total: CAP });
  };
  const gets = new Map<number, number>();
  const { client: faulty } = await setup({
    seed: SEED,
    rowCap: CAP,
    fault: (req) => {
      if (req.method !== 'GET' || req.query.limit !== '10') return undefined;
      const start = Number(req.query.start);
      gets.set(start, (gets.get(start) ?? 0) + 1);
      return bad.includes(start) ? { kind: 'status', status: 200, body: page(start) } : undefined;
    },
  });
  return { result: await faulty.query('job_listings', {}), gets, date: result.fields[dateCol]!.id };
}

describe('a page declined as it arrives', () => {
  it('past the first pages: asked for again and read by the reference; the next pages are read whole', async () => {
    const { result, gets, date } = await withBadPages([31, 41]);
    const table = await result.toTable({ pageSize: 10, concurrency: 1, onInvalid: 'null' });
    expect(table.numRows).toBe(CAP);
    const dates = table.getChild(date)!;
    expect([dates.get(32), dates.get(33), dates.get(42), dates.get(43)]).toEqual([
      expect.anything(),
      null,
      expect.anything(),
      null,
    ]);
    // Page 31 was declined with its chunks gone: asked again. Page 41 was read whole: once.
    expect(Object.fromEntries(gets)).toEqual({ 1: 1, 11: 1, 21: 1, 31: 2, 41: 1 });

    gets.clear();
    await expectRejects<InvalidValueError>(result.toTable({ pageSize: 10, concurrency: 1 }), (e) => {
      expect(e).toMatchObject({ row: 34, column: date, value: '20241345' });
    });
    expect(gets.get(31)).toBe(2);
    // Every row API rejects with the same error: none resolves with the rows before the bad page.
    const opts = { pageSize: 10, concurrency: 1 } as const;
    for (const read of [
      () => collectRows(result.stream(opts)),
      () => collectRows(result.stream({ ...opts, output: 'rows' })),
      () => result.toArray(opts),
    ]) {
      await expectRejects<InvalidValueError>(read(), (e) => {
        expect(e).toMatchObject({ row: 34, column: date, value: '20241345' });
      });
    }
  });

  it('among the first pages: decided on the chunks kept for it, with no second request', async () => {
    const { result, gets, date } = await withBadPages([11]);
    const table = await result.toTable({ pageSize: 10, concurrency: 1, onInvalid: 'null' });
    expect(table.getChild(date)!.get(13)).toBeNull();
    expect(Object.fromEntries(gets)).toEqual({ 1: 1, 11: 1, 21: 1, 31: 1, 41: 1 });
  });
});
