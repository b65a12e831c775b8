/**
 * The columnar CSV decoder agrees with the reference path (decodeCsv + RecordBatchBuilder / row factory):
 * on fuzzed and mutated pages, and on every emulator dataset over real HTTP. Its contract is "the same
 * result, or decline": columns it returns give byte-identical Arrow data and equal row objects, and it
 * declines every page the reference rejects, so the stream reports the reference's error.
 */

import { Table, tableToIPC } from 'apache-arrow';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  makeColumnRowFactory,
  makeRowFactory,
  planColumns,
  RecordBatchBuilder,
} from '../src/convert/index.js';
import { DecodeError, InvalidValueError } from '../src/core/errors.js';
import type { WireValue } from '../src/core/wire.js';
import { FastCsvDecoder } from '../src/decode/csv-columns.js';
import { decodeCsv } from '../src/decode/index.js';
import { DATASETS } from '../src/emulator/datasets/index.js';
import {
  chunked,
  collect,
  mixedFields,
  SHORT_IDS,
  trickyText,
  wireDate,
  wireTimestamp,
  writeCsv,
} from './convert-fixtures.js';
import { allOf, ipcBytes, setup } from './helpers.js';

const where = { start: 1, limit: 1000 };
const fields = mixedFields(SHORT_IDS);
const plan = planColumns(fields);
const ids = fields.map((f) => f.id);

interface Decoded {
  readonly ipc: Buffer;
  readonly objects: unknown[];
}

function ipc(batch: ReturnType<RecordBatchBuilder['flush']>): Buffer {
  return Buffer.from(tableToIPC(new Table([batch]), 'stream'));
}

/** The reference: csv-parse rows, then the builder and the row factory over them; or the error. */
async function reference(bytes: Buffer): Promise<Decoded | Error> {
  try {
    const rows = await collect(decodeCsv(chunked(bytes), plan, where));
    const builder = new RecordBatchBuilder(plan);
    builder.appendRows(rows, 1, where);
    const make = makeRowFactory(plan);
    return { ipc: ipc(builder.flush()), objects: rows.map((r, i) => make(r, 1 + i, where)) };
  } catch (error) {
    if (error instanceof DecodeError || error instanceof InvalidValueError) return error;
    throw error;
  }
}

/**
 * The property: accepted pages decode exactly as the reference; pages the reference rejects are declined.
 * Says which way it went: `fast` (decoded, and equal), `declined` (the reference accepts, the fast path
 * left it to the reference) or `rejected` (the reference fails, the fast path declined).
 */
async function agree(bytes: Buffer): Promise<'fast' | 'declined' | 'rejected'> {
  const expected = await reference(bytes);
  const page = new FastCsvDecoder(plan).decode(bytes, where);
  if (expected instanceof Error) {
    expect(page, `accepted a page the reference rejects: ${expected.message}`).toBeUndefined();
    return 'rejected';
  }
  if (page === undefined) return 'declined';
  // Appended to a builder (batches across pages), and adopted as a batch of its own (one batch per page).
  const builder = new RecordBatchBuilder(plan);
  builder.appendDecoded(page, 0, page.length);
  expect(ipc(builder.flush()).equals(expected.ipc)).toBe(true);
  expect(ipc(new RecordBatchBuilder(plan).adoptDecoded(page)).equals(expected.ipc)).toBe(true);
  const objects: unknown[] = [];
  makeColumnRowFactory(plan)(page, 0, page.length, objects);
  expect(objects).toEqual(expected.objects);
  return 'fast';
}

const wrongTyped = fc.oneof(
  trickyText,
  fc.integer(),
  fc.constantFrom('', ' 1', '0x10', '1e999', 'true ', 'TRUE', '2024-01-01', '20240230', '20240101T250000Z'),
);
/** Mostly well-typed values, sometimes null, sometimes anything. */
const cell = (typed: fc.Arbitrary<WireValue>) =>
  fc.oneof(
    { weight: 8, arbitrary: typed },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: wrongTyped as fc.Arbitrary<WireValue> },
  );
const row = fc.tuple(
  cell(fc.constantFrom('nasdaq:aapl', 'nyse:ge', 'private:é', '')),
  cell(wireDate),
  cell(fc.oneof(wireTimestamp, wireDate)),
  cell(fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }))),
  cell(fc.boolean()),
  cell(trickyText),
);

describe('FastCsvDecoder', () => {
  it('agrees with decodeCsv + the builder and the row factory on fuzzed pages', async () => {
    const outcomes = { fast: 0, declined: 0, rejected: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(row, { maxLength: 30 }), async (rows) => {
        outcomes[await agree(Buffer.from(writeCsv(ids, rows)))]++;
      }),
      { numRuns: 400 },
    );
    // A decoder that declined every page would pass the property alone. These pages are all ordinary (well-
    // formed UTF-8 CSV, the plan's header) unless a cell is mistyped, so the fast path must take every page
    // the reference accepts. How many that is depends on the generator, not the decoder (about 30%: 103 to
    // 140 of 400 over 32 seeds), so it is no bound: both kinds only have to occur.
    expect(outcomes.declined).toBe(0);
    expect(outcomes.fast).toBeGreaterThan(0);
    expect(outcomes.rejected).toBeGreaterThan(0);
  });

  it('declines mutated and truncated pages the reference rejects, and agrees on the rest', async () => {
    const valid = writeCsv(ids, [
      ['nasdaq:aapl', '20240101', '20240101T101500Z', 1.5, true, 'plain'],
      [null, null, null, null, null, null],
      ['nyse:ge', '20240229', '20240229', -3, false, 'say "hi", é😀\r\nnext line'],
      ['', '20231231', '20231231T235959Z', 0, true, ''],
    ]);
    const mutation = fc.record({
      at: fc.nat(),
      op: fc.constantFrom('insert', 'delete', 'truncate'),
      text: fc.constantFrom(',', '"', '\r\n', '\n', '""', 'x', '\uFEFF', 'é', '\u0000'),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 4 }), async (mutations) => {
        let s = valid;
        for (const m of mutations) {
          const at = s.length === 0 ? 0 : m.at % s.length;
          if (m.op === 'insert') s = s.slice(0, at) + m.text + s.slice(at);
          else if (m.op === 'delete') s = s.slice(0, at) + s.slice(at + 1);
          else s = s.slice(0, at);
        }
        await agree(Buffer.from(s));
      }),
      { numRuns: 400 },
    );
  });

  it('decodes the ordinary spellings: BOM, LF line ends, no final line end, quoted values', async () => {
    const body =
      '\uFEFFticker,d,ts,n,b,s\n"nasdaq:aapl","20240101",20240101T000000Z,"7",true,"x"\nnyse:ge,,,,,""';
    expect(await agree(Buffer.from(body))).toBe('fast');
    expect(await agree(Buffer.from(writeCsv(ids, [])))).toBe('fast');
  });

  it.each([
    ['a header that is not the field ids', 'ticker,d,ts,n,b,x\r\n'],
    ['a header with a field missing', 'ticker,d,ts,n,b\r\n'],
    ['a row with a field too many', `${ids.join(',')}\r\na,20240101,20240101,1,true,s,extra\r\n`],
    ['a row with a field missing', `${ids.join(',')}\r\na,20240101,20240101,1,true\r\n`],
    ['a number that is not one', `${ids.join(',')}\r\na,20240101,20240101,0x10,true,s\r\n`],
    ['"" in a number column', `${ids.join(',')}\r\na,20240101,20240101,"",true,s\r\n`],
    ['an impossible date', `${ids.join(',')}\r\na,20230229,20240101,1,true,s\r\n`],
    ['a boolean that is not one', `${ids.join(',')}\r\na,20240101,20240101,1,yes,s\r\n`],
    ['an unclosed quote', `${ids.join(',')}\r\na,20240101,20240101,1,true,"s\r\n`],
    ['an empty body', ''],
  ])('declines %s (the reference reports it)', async (_what, body) => {
    expect(await reference(Buffer.from(body))).toBeInstanceOf(Error);
    expect(new FastCsvDecoder(plan).decode(Buffer.from(body), where)).toBeUndefined();
  });

  it('declines bytes that are not UTF-8 (the reference decodes them as U+FFFD)', async () => {
    const body = Buffer.concat([
      Buffer.from(`${ids.join(',')}\r\na,,,,,x`),
      Buffer.from([0xff]),
      Buffer.from('\r\n'),
    ]);
    expect(await agree(body)).toBe('declined');
    expect(await reference(body)).not.toBeInstanceOf(Error);
  });

  it('decodes a big page in slices, as the reference does: records and characters cut at slice ends', async () => {
    // ~1 MB of quoted fields with commas, line ends, doubled quotes and 2-4 byte characters: the slices
    // (16 kB and up, cut anywhere) end inside such fields and characters many times.
    const texts = fc.sample(trickyText, { numRuns: 4000, seed: 7 });
    const rows: WireValue[][] = texts.map((text, i) => [
      'private:é',
      '20240101',
      '20240101T010203Z',
      i,
      i % 3 === 0,
      `${text} "q", 😀é\r\n${'ü'.repeat(i % 150)} ${i}`,
    ]);
    const bytes = Buffer.from(writeCsv(ids, rows));
    expect(bytes.length).toBeGreaterThan(800_000);
    let steps = 0;
    const slices = new FastCsvDecoder(plan).slices(bytes, { start: 1, limit: rows.length });
    let step = slices.next();
    while (!step.done) {
      steps++;
      step = slices.next();
    }
    // In one go before: csv-parse held the event loop for a whole page (100-180 ms for 20,000 rows).
    expect(steps).toBeGreaterThan(3);
    expect(step.value?.length).toBe(rows.length);
    const at = { start: 1, limit: rows.length };
    const expected = await collect(decodeCsv(chunked(bytes), plan, at));
    const builder = new RecordBatchBuilder(plan);
    builder.appendRows(expected, 1, at);
    expect(ipc(new RecordBatchBuilder(plan).adoptDecoded(step.value!)).equals(ipc(builder.flush()))).toBe(
      true,
    );
  });

  it('grows past its first guess of rows and string bytes', async () => {
    const rows: WireValue[][] = Array.from({ length: 3000 }, (_, i) => [
      'nasdaq:aapl',
      '20240101',
      null,
      i,
      i % 2 === 0,
      'x'.repeat(i % 97),
    ]);
    const bytes = Buffer.from(writeCsv(ids, rows));
    const decoder = new FastCsvDecoder(plan);
    // A small page first: the next page's string buffers are sized from its bytes per row.
    decoder.decode(Buffer.from(writeCsv(ids, rows.slice(0, 3))), where);
    const page = decoder.decode(bytes, { start: 1, limit: 20 });
    expect(page?.length).toBe(3000);
    expect(await agree(bytes)).toBe('fast');
  });

  it('sizes string buffers by the body, not only by the last page (regression: a huge row, then RangeError)', () => {
    const one = planColumns([mixedFields(SHORT_IDS)[5]!]);
    const decoder = new FastCsvDecoder(one);
    const wide = { start: 1, limit: 16_384 };
    expect(decoder.decode(Buffer.from(`s\r\n${'x'.repeat(300_000)}\r\n`), wide)?.length).toBe(1);
    // 300 kB per row x 16,384 rows was the next page's first guess: over 4 GiB, a RangeError.
    const page = decoder.decode(Buffer.from('s\r\nshort\r\n'), wide);
    expect(page?.length).toBe(1);
    const strings = page!.columns[0]!;
    expect(strings.kind === 'utf8' && strings.bytes.length).toBeLessThanOrEqual(1024);
  });

  it.each(DATASETS.map((d) => d.id))(
    'gives byte-identical Arrow IPC and equal rows to the reference over HTTP: %s',
    async (dataset) => {
      const { client } = await setup({ seed: 5, rowCap: 3000 });
      const options = (decoder: 'fast' | 'json') =>
        ({ format: 'csv', pageSize: 700, concurrency: 3, decoder }) as const;
      const ipcOf = (decoder: 'fast' | 'json') => ipcBytes(client.stream(dataset, {}, options(decoder)));
      const [a, b] = [await ipcOf('fast'), await ipcOf('json')];
      expect(a.length).toBeGreaterThan(1000);
      expect(a.equals(b)).toBe(true);
      const rowsOf = (decoder: 'fast' | 'json') =>
        allOf(client.stream(dataset, {}, { ...options(decoder), output: 'rows' }));
      const [fastRows, referenceRows] = [await rowsOf('fast'), await rowsOf('json')];
      expect(fastRows.length).toBe(3000);
      expect(fastRows).toEqual(referenceRows);
      // And the columnar path really decoded these pages (it did not decline them all).
      const result = await client.query(dataset, {});
      const parts: Buffer[] = [];
      for await (const chunk of await result.download({ start: 1, limit: 700, format: 'csv' }))
        parts.push(chunk as Buffer);
      const page = new FastCsvDecoder(planColumns(result.fields)).decode(Buffer.concat(parts), where);
      expect(page?.length).toBe(700);
    },
  );
});
