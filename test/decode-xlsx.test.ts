import { PassThrough, Readable } from 'node:stream';
import ExcelJS from 'exceljs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planColumns } from '../src/convert/index.js';
import type { ColumnPlan } from '../src/convert/plan.js';
import { DecodeError } from '../src/core/errors.js';
import type { WireValue } from '../src/core/wire.js';
import { decodeXlsx } from '../src/decode/index.js';
import {
  caught,
  chunked,
  collect,
  exactDouble,
  field,
  mixedFields,
  wireDate,
  writeXlsx,
} from './convert-fixtures.js';

const where = { start: 501, limit: 100 };
const fields = mixedFields();
const plan = planColumns(fields);
const ids = fields.map((f) => f.id);
const rows: WireValue[][] = [
  ['nasdaq:aapl', '20240229', '20240229T123456Z', 12, true, 'plain'],
  ['nyse:ibm', null, null, null, null, null],
  [null, null, null, null, null, null], // an all-null row: no cells, exceljs skips the row
  ['x', '20240101', '20240101T000000Z', -1.5e-7, false, ''],
  ['y', '20240102', '20240102T000000Z', 1e21, null, 'quote " comma , crlf \r\n lf \n cr \r <tag> & amp'],
  ['w', null, null, null, null, 'literal _x000D_ and _x005F_ and _xZZZZ_ and _x41_'],
  ['z', '20240103', '20240103T000000Z', 0, true, 'é 中文 😀 ✓'],
  [null, null, null, null, null, null],
  [null, null, null, 2 ** 53, null, ' spaces '],
];

/**
 * A numeric cell's wire value: its double when the cell's text is that double's own spelling within ±2^53
 * (what exceljs writes for smaller ones), else the text (numbers.ts: the converters read it exactly).
 */
const wire = (row: readonly WireValue[]): WireValue[] =>
  row.map((v) => (typeof v === 'number' && Math.abs(v) > 2 ** 53 ? String(v) : v));

const decode = (body: AsyncIterable<Buffer> | NodeJS.ReadableStream, p = plan, stallMs = 10_000) =>
  collect(decodeXlsx(body, p, where, { stallMs }));

/** A workbook with one byte flipped where exceljs then stalls (neither finishes nor fails), and its plan. */
async function stuckBody(): Promise<{ bad: Buffer; p: ColumnPlan[] }> {
  const body = await writeXlsx(
    ['a', 'b', 'c'],
    Array.from({ length: 200 }, (_, i) => [`v${i}`, i, i % 3 ? null : 'x']),
  );
  const p = planColumns([field('a'), field('b', 'number'), field('c')]);
  for (let pos = 2000; pos < body.length; pos += 500) {
    const flipped = Buffer.from(body);
    flipped[pos]! ^= 0x55;
    const error = await decode(chunked(flipped, [4096]), p, 100).then(
      () => undefined,
      (e: unknown) => e,
    );
    if (error instanceof DecodeError && /no progress/.test(error.message)) return { bad: flipped, p };
  }
  throw new Error('no flip made exceljs stall');
}

/**
 * Decodes `stuckBody()` with `stallMs` while other work holds the event loop ~90 % of the time (9 ms of
 * every 10) for `busyMs`: the error, and the ms it took to come.
 */
async function stuckUnderLoad(busyMs: number, stallMs: number): Promise<{ error: unknown; after: number }> {
  const { bad, p } = await stuckBody();
  const started = performance.now();
  const busyUntil = started + busyMs;
  const hog = setInterval(() => {
    // 9 of every 10 ms: a CI machine that delays the timer still leaves the loop well over 50 % busy.
    const until = performance.now() + 9;
    while (performance.now() < until && performance.now() < busyUntil);
    if (performance.now() >= busyUntil) clearInterval(hog);
  }, 10);
  try {
    const error = await caught(() => decode(chunked(bad, [4096]), p, stallMs));
    return { error, after: performance.now() - started };
  } finally {
    clearInterval(hog);
  }
}

describe('decodeXlsx', () => {
  it('reads the emulator XLSX back to the wire rows: nulls vs "", numbers, booleans, all-null rows', async () => {
    const body = await writeXlsx(ids, rows);
    expect(await decode(chunked(body, [1000]))).toEqual(rows.map(wire));
  });

  it('takes a Node stream as well as an async iterable, in any chunking', async () => {
    const body = await writeXlsx(ids, rows);
    expect(await decode(Readable.from([body]))).toEqual(rows.map(wire));
    expect(await decode(chunked(body, [1, 7, 4096]))).toEqual(rows.map(wire));
  });

  it('round-trips random text (XML-safe) and numbers (property)', async () => {
    const xmlSafe = fc.string({
      unit: fc.constantFrom(
        'a',
        'Z',
        ' ',
        '"',
        ',',
        '\n',
        '\r',
        '<',
        '>',
        "'",
        'é',
        '中',
        '😀',
        '\t',
        '0',
        '_x',
        '000D_',
        '_',
      ),
    });
    const cell = fc.option(fc.oneof(xmlSafe, fc.integer(), exactDouble(), fc.boolean(), wireDate), {
      nil: null,
      freq: 4,
    });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(cell, cell, cell), { maxLength: 15 }), async (random) => {
        const p = planColumns([field('a'), field('b'), field('c')]);
        const expected = random.map((r) => wire(r.map((v) => (Object.is(v, -0) ? 0 : v))));
        // Trailing all-null rows have no row element at all: nothing can bring them back.
        while (expected.length > 0 && expected.at(-1)!.every((v) => v === null)) expected.pop();
        const got = await decode(chunked(await writeXlsx(['a', 'b', 'c'], random), [500]), p);
        expect(got).toEqual(expected);
      }),
      { numRuns: 40 },
    );
  });

  it("keeps multi-byte characters that straddle exceljs's internal chunks (large pages)", async () => {
    // exceljs decodes each inflated chunk on its own; a character cut by a chunk boundary became U+FFFD.
    const text = (i: number) => `${'動作が速くて快適。'.repeat(1 + (i % 5))} 👍 ${'é'.repeat(i % 7)} #${i}`;
    const many = Array.from({ length: 3000 }, (_, i) => [text(i), i % 3 === 0 ? null : text(i + 1)]);
    const p = planColumns([field('a'), field('b')]);
    expect(await decode(chunked(await writeXlsx(['a', 'b'], many), [16_384]), p)).toEqual(many);
  });

  it('keeps them in shared strings too', async () => {
    const book = new ExcelJS.Workbook();
    const sheet = book.addWorksheet('results');
    sheet.addRow(['a']);
    const many = Array.from({ length: 3000 }, (_, i) => [
      `${'ログインできない'.repeat(1 + (i % 4))} 😀 ${i}`,
    ]);
    for (const r of many) sheet.addRow(r);
    const body = Buffer.from(await book.xlsx.writeBuffer());
    expect(await decode(chunked(body), planColumns([field('a')]))).toEqual(many);
  });

  it('yields large pages in chunks', async () => {
    const many = Array.from({ length: 2500 }, (_, i) => [`t${i}`, i]);
    const p = planColumns([field('t'), field('n', 'number')]);
    const chunks: number[] = [];
    for await (const chunk of decodeXlsx(chunked(await writeXlsx(['t', 'n'], many)), p, where))
      chunks.push(chunk.length);
    expect(chunks.reduce((a, b) => a + b, 0)).toBe(2500);
    expect(chunks.length).toBeGreaterThan(1);
  });

  it('reads only the first worksheet', async () => {
    const pass = new PassThrough();
    const parts: Buffer[] = [];
    pass.on('data', (c: Buffer) => parts.push(c));
    const book = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: pass, useSharedStrings: false });
    const results = book.addWorksheet('results');
    results.addRow(['a']).commit();
    results.addRow(['first']).commit();
    results.commit();
    const other = book.addWorksheet('other');
    other.addRow(['zzz', 'extra']).commit();
    other.commit();
    await book.commit();
    expect(await decode(chunked(Buffer.concat(parts)), planColumns([field('a')]))).toEqual([['first']]);
  });

  it('converts rich text, formulas and hyperlinks to their text or result; rejects error cells', async () => {
    const book = new ExcelJS.Workbook();
    const sheet = book.addWorksheet('results');
    sheet.addRow(['a', 'b', 'c']);
    sheet.addRow([
      { formula: '1+1', result: 2 },
      { text: 'site', hyperlink: 'https://example.com' },
      { formula: 'A1&"x"', result: 'ok' },
    ]);
    sheet.addRow([
      { sharedFormula: 'A2', result: 3 },
      { richText: [{ text: 'ri' }, { text: 'ch' }] },
      { formula: 'NA()' },
    ]);
    const body = Buffer.from(await book.xlsx.writeBuffer());
    const p = planColumns([field('a', 'number'), field('b'), field('c')]);
    expect(await decode(chunked(body), p)).toEqual([
      [2, 'site', 'ok'],
      [3, 'rich', null],
    ]);
    sheet.addRow([1, 'x', { error: '#N/A' }]);
    const withError = Buffer.from(await book.xlsx.writeBuffer());
    const error = await caught(() => decode(chunked(withError), p));
    expect(error).toBeInstanceOf(DecodeError);
    expect(error).toMatchObject({ row: 503, column: 'c' });
  });

  it('rejects a header that is not the field ids', async () => {
    const body = await writeXlsx(['ticker', 'posted'], []);
    const error = await caught(() => decode(chunked(body)));
    expect(error).toBeInstanceOf(DecodeError);
    expect((error as Error).message).toMatch(
      /header row does not match the fields: expected "ticker,posted,seen,n,ok,text", got "ticker,posted"/,
    );
  });

  it('rejects a row with cells beyond the fields', async () => {
    const body = await writeXlsx(['a'], [['x'], ['y', 'surplus']]);
    const error = await caught(() => decode(chunked(body), planColumns([field('a')])));
    expect(error).toBeInstanceOf(DecodeError);
    expect(error).toMatchObject({ row: 502, page: where });
  });

  it.each([
    ['an empty body', Buffer.alloc(0), /XLSX body is empty/],
    ['text', Buffer.from('ticker,posted\r\n'), /no zip signature/],
    ['JSON', Buffer.from('{"rows":[]}'), /no zip signature/],
    ['a lone zip signature', Buffer.from('PK\x03\x04'), /Not a readable XLSX workbook|no worksheet/],
  ])('rejects %s with a DecodeError', async (_what, body, message) => {
    const error = await caught(() => decode(chunked(body)));
    expect(error).toBeInstanceOf(DecodeError);
    expect(error).toMatchObject({ page: where });
    expect((error as Error).message).toMatch(message);
  });

  it('rejects truncated bodies (never a hang)', async () => {
    const body = await writeXlsx(ids, rows);
    for (const length of [
      4,
      30,
      100,
      body.length >> 2,
      body.length >> 1,
      body.length - 100,
      body.length - 1,
    ]) {
      const error = await caught(() => decode(chunked(body.subarray(0, length), [512]), plan, 500));
      expect(error, `truncated at ${length}`).toBeInstanceOf(DecodeError);
    }
  });

  it('turns a corrupted body on which exceljs stalls into a DecodeError after stallMs', async () => {
    const body = await writeXlsx(
      ['a', 'b', 'c'],
      Array.from({ length: 200 }, (_, i) => [`v${i}`, i, i % 3 ? null : 'x']),
    );
    const p = planColumns([field('a'), field('b', 'number'), field('c')]);
    let stalls = 0;
    // Flip bytes across the body; some positions make unzipper/exceljs wait forever without the watchdog.
    for (let pos = 2000; pos < body.length; pos += 500) {
      const bad = Buffer.from(body);
      bad[pos]! ^= 0x55;
      const started = Date.now();
      try {
        await decode(chunked(bad, [4096]), p, 300);
      } catch (error) {
        expect(error, `flip at ${pos}`).toBeInstanceOf(DecodeError);
        if (/no progress/.test((error as Error).message)) stalls++;
      }
      expect(Date.now() - started).toBeLessThan(5000);
    }
    expect(stalls).toBeGreaterThan(0);
  }, 30_000);

  it('does not count a stall while the event loop is busy with other work, and reports it once idle', async () => {
    // Other work holds the loop ~90 % of the time for 1.2 s (4 stall windows): a starved decode, not a
    // stuck one, as far as the watchdog can tell. Before, it failed after the first 300 ms.
    const { error, after } = await stuckUnderLoad(1200, 300);
    expect(error).toBeInstanceOf(DecodeError);
    expect((error as Error).message).toMatch(/no progress for 300 ms/);
    expect(after).toBeGreaterThan(1200);
  }, 30_000);

  it('still reports a stuck decode when the loop never goes idle: after 5 busy windows more', async () => {
    // Busy ~90 % of the time for 6 s; with stallMs 200 the decode fails after 6 windows (~1.2 s), while
    // the loop is still busy: not never, and not after the first window either.
    const { error, after } = await stuckUnderLoad(6000, 200);
    expect(error).toBeInstanceOf(DecodeError);
    expect(after).toBeGreaterThan(1100);
    expect(after).toBeLessThan(5000);
  }, 30_000);

  it('does not count time waiting for the network, or for the consumer, as a stall', async () => {
    // Each wait (600 ms) is longer than stallMs (400 ms), so counting one would fail the test; exceljs's
    // own work on 300 rows is a few tens of ms, so a CI machine busy with other test files (the CI run
    // that failed with stallMs 100 on 2,500 rows) still stays far below stallMs.
    const body = await writeXlsx(
      ['a'],
      Array.from({ length: 300 }, (_, i) => [`v${i}`]),
    );
    async function* slow() {
      for await (const chunk of chunked(body, [body.length >> 1])) {
        await new Promise((r) => setTimeout(r, 600));
        yield chunk;
      }
    }
    let n = 0;
    for await (const chunk of decodeXlsx(slow(), planColumns([field('a')]), where, { stallMs: 400 })) {
      n += chunk.length;
      await new Promise((r) => setTimeout(r, 600));
    }
    expect(n).toBe(300);
  });

  it('closes the body when it is not a workbook, and validates stallMs', async () => {
    let closed = false;
    async function* body() {
      try {
        yield Buffer.from('not a zip at all');
        yield Buffer.from('more');
      } finally {
        closed = true;
      }
    }
    expect(await caught(() => decode(body()))).toBeInstanceOf(DecodeError);
    expect(closed).toBe(true);
    const error = await caught(() => decode(chunked(Buffer.from('x')), plan, 0));
    expect(error).toMatchObject({ code: 'DQS_INVALID_ARGUMENT', argument: 'stallMs' });
  });

  it('passes errors of the body through unchanged', async () => {
    const body = await writeXlsx(ids, rows);
    const boom = new Error('socket hang up');
    async function* failing() {
      yield body.subarray(0, 1000);
      throw boom;
    }
    expect(await caught(() => decode(failing()))).toBe(boom);
  });
});
