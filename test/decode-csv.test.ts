import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ColumnKind, planColumns, RecordBatchBuilder } from '../src/convert/index.js';
import { DecodeError, InvalidValueError } from '../src/core/errors.js';
import type { WireValue } from '../src/core/wire.js';
import { decodeCsv } from '../src/decode/index.js';
import {
  caught,
  chunked,
  collect,
  exactDouble,
  field,
  mixedFields,
  trickyText,
  wireDate,
  wireTimestamp,
  writeCsv,
} from './convert-fixtures.js';

const where = { start: 1001, limit: 500 };
const fields = mixedFields();
const plan = planColumns(fields);
const ids = fields.map((f) => f.id);
const rows: WireValue[][] = [
  ['nasdaq:aapl', '20240229', '20240229T123456Z', 12, true, 'plain'],
  ['nyse:ibm', null, null, null, null, null],
  ['x', '20240101', '20240101T000000Z', -1.5e-7, false, ''],
  ['y', '20240102', '20240102T000000Z', 1e21, null, 'quote " comma , crlf \r\n lf \n cr \r end'],
  ['z', '20240103', '20240103T000000Z', 0, true, 'é 中文 😀 \u2028'],
  ['', null, null, 2 ** 53, false, '""'],
];

/**
 * A number field's wire value: the number as table JSON's reference hands it over, its double when the
 * text is that double's own spelling within ±2^53, else the text (numbers.ts: the converters read it).
 */
const wire = (row: readonly WireValue[]): WireValue[] =>
  row.map((v) => (typeof v === 'number' && Math.abs(v) > 2 ** 53 ? String(v) : v));

describe.each(['core', 'public'] as const)('decodeCsv (%s engine)', (engine) => {
  const decode = (body: AsyncIterable<Buffer | string>, p = plan) =>
    collect(decodeCsv(body, p, where, { engine }));

  it('reads the emulator CSV back to the wire rows: nulls vs "", quotes, CR/LF, non-ASCII', async () => {
    expect(await decode(chunked(writeCsv(ids, rows)))).toEqual(rows.map(wire));
  });

  it('gives the same rows however the body is cut (property)', async () => {
    const body = Buffer.from(writeCsv(ids, rows));
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 6 }),
        async (sizes) => {
          expect(await decode(chunked(body, sizes))).toEqual(rows.map(wire));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('round-trips random rows of every kind (property)', async () => {
    const kinds: ColumnKind[] = ['string', 'number', 'date', 'datetime', 'boolean'];
    const value = (k: ColumnKind): fc.Arbitrary<WireValue> =>
      fc.option(
        {
          string: trickyText as fc.Arbitrary<WireValue>,
          number: fc.oneof(fc.integer(), exactDouble()).map((n) => (Object.is(n, -0) ? 0 : n)),
          date: wireDate,
          datetime: wireTimestamp,
          boolean: fc.boolean(),
        }[k],
        { nil: null, freq: 4 },
      );
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(...kinds), { minLength: 1, maxLength: 5 }).chain((cols) =>
          fc.record({
            cols: fc.constant(cols),
            rows: fc.array(fc.tuple(...cols.map(value)), { maxLength: 20 }),
            cut: fc.integer({ min: 1, max: 64 }),
          }),
        ),
        async ({ cols, rows: random, cut }) => {
          const f = cols.map((k, j) => field(`c${j}`, k));
          const got = await decode(
            chunked(
              writeCsv(
                f.map((x) => x.id),
                random,
              ),
              [cut],
            ),
            planColumns(f),
          );
          expect(got).toEqual(random.map(wire));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('accepts string chunks, a BOM and LF line ends', async () => {
    const lf = `\uFEFF${writeCsv(
      ['a', 'b'],
      [
        ['1', null],
        ['', 'x'],
      ],
    ).replaceAll('\r\n', '\n')}`;
    const p = planColumns([field('a'), field('b')]);
    expect(await decode(chunked(lf, [3]) as AsyncIterable<Buffer>, p)).toEqual([
      ['1', null],
      ['', 'x'],
    ]);
    async function* strings() {
      yield 'a,b\r\n"x';
      yield 'y",\r\n';
    }
    expect(await decode(strings(), p)).toEqual([['xy', null]]);
  });

  it('keeps a one-column null row (an empty line) apart from ""', async () => {
    const p = planColumns([field('a')]);
    expect(await decode(chunked('a\r\n\r\n""\r\nv\r\n'), p)).toEqual([[null], [''], ['v']]);
  });

  it('turns numeric and boolean text into JSON values, and keeps text that is not', async () => {
    const p = planColumns([field('n', 'number'), field('b', 'boolean'), field('s')]);
    const got = await decode(
      chunked('n,b,s\r\n12,true,12\r\n1e3,false,true\r\nabc,yes,x\r\n0x10,TRUE,y\r\n'),
      p,
    );
    expect(got).toEqual([
      [12, true, '12'],
      // Not the double's own spelling: its text, which the converters read (1000) or keep as sent.
      ['1e3', false, 'true'],
      ['abc', 'yes', 'x'],
      ['0x10', 'TRUE', 'y'],
    ]);
    // ...so the builder reports the original spelling.
    const builder = new RecordBatchBuilder(p);
    const error = await caught(() => builder.appendRows(got, where.start, where));
    expect(error).toBeInstanceOf(InvalidValueError);
    expect(error).toMatchObject({ row: 1003, column: 'n', value: 'abc' });
  });

  it('yields an empty result for a header-only body', async () => {
    expect(await decode(chunked('ticker,posted,seen,n,ok,text\r\n'))).toEqual([]);
  });

  it.each([
    ['an empty body', '', /CSV body is empty/],
    [
      'a header in another order',
      'posted,ticker,seen,n,ok,text\r\n',
      /header does not match the fields: expected "ticker,posted,seen,n,ok,text", got "posted,ticker,/,
    ],
    ['a header with a column less', 'ticker,posted,seen,n,ok\r\n', /header does not match/],
    ['a header with a column more', 'ticker,posted,seen,n,ok,text,x\r\n', /header does not match/],
  ])('rejects %s', async (_what, body, message) => {
    const error = await caught(() => decode(chunked(body)));
    expect(error).toBeInstanceOf(DecodeError);
    expect(error).toMatchObject({ page: where });
    expect((error as Error).message).toMatch(message);
  });

  it.each([
    ['a short record', 'a,b\r\n1,2\r\n3\r\n', 1002, /line 3/],
    ['a long record', 'a,b\r\n1,2\r\n3,4\r\n5,6,7\r\n', 1003, /line 4/],
    ['an unclosed quote', 'a,b\r\n1,2\r\n"3,4\r\n', 1002, /Quote Not Closed/],
    ['text after a closing quote', 'a,b\r\n"1"x,2\r\n', 1001, /Invalid Closing Quote/],
    ['a quote inside an unquoted field', 'a,b\r\n1,2\r\n3,x"y\r\n', 1002, /Opening Quote/],
    ['a trailing empty line in a 2-column page', 'a,b\r\n1,2\r\n\r\n', 1002, /line 3/],
  ])('rejects %s with page, row and line', async (_what, body, row, message) => {
    const error = await caught(() => decode(chunked(body, [5]), planColumns([field('a'), field('b')])));
    expect(error).toBeInstanceOf(DecodeError);
    expect(error).toMatchObject({ code: 'DQS_DECODE', page: where, row });
    expect((error as Error).message).toMatch(message);
  });

  it('passes errors of the body through unchanged', async () => {
    const boom = new Error('socket hang up');
    async function* failing() {
      yield Buffer.from('a,b\r\n1,2\r\n');
      throw boom;
    }
    expect(await caught(() => decode(failing(), planColumns([field('a'), field('b')])))).toBe(boom);
  });
});

describe('decodeCsv streaming', () => {
  it('yields rows as they are parsed, before the body ends, and closes the body on break', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let closed = false;
    async function* body() {
      try {
        yield Buffer.from('a,b\r\n1,2\r\n3,');
        await gate;
        yield Buffer.from('4\r\n');
      } finally {
        closed = true;
      }
    }
    const decoder = decodeCsv(body(), planColumns([field('a'), field('b')]), where);
    const first = await decoder.next();
    expect(first.value).toEqual([['1', '2']]);
    release();
    const second = await decoder.next();
    expect(second.value).toEqual([['3', '4']]);
    await decoder.return(undefined);
    expect(closed).toBe(true);
  });

  it('is within reach of csv-parse alone (rough guard, not a benchmark)', async () => {
    const wide = Array.from({ length: 3000 }, (_, i) => [
      `t${i % 50}`,
      '20240101',
      '20240101T000000Z',
      i,
      i % 2 === 0,
      `row ${i}, "quoted"`,
    ]);
    const body = Buffer.from(writeCsv(ids, wide));
    const core = await collect(decodeCsv(chunked(body), plan, where, { engine: 'core' }));
    expect(core).toHaveLength(3000);
    expect(core).toEqual(await collect(decodeCsv(chunked(body), plan, where, { engine: 'public' })));
  });
});
