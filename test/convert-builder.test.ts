import {
  type Dictionary,
  RecordBatch,
  RecordBatchFileWriter,
  RecordBatchReader,
  RecordBatchStreamWriter,
  Table,
  tableFromIPC,
  tableToIPC,
  type Vector,
} from 'apache-arrow';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ColumnKind, planColumns, RecordBatchBuilder } from '../src/convert/index.js';
import { DecodeError, InvalidArgumentError, InvalidValueError } from '../src/core/errors.js';
import type { WireValue } from '../src/core/wire.js';
import {
  caught,
  field,
  mixedFields,
  SHORT_IDS,
  trickyText,
  wireDate,
  wireTimestamp,
} from './convert-fixtures.js';

const DAY = 86_400_000;

function plainRows(batch: RecordBatch | Table): Record<string, unknown>[] {
  return batch.toArray().map((r) => ({ ...r.toJSON() }));
}

function oneColumn(type: string, values: WireValue[], onInvalid: 'error' | 'null' = 'error'): unknown[] {
  const builder = new RecordBatchBuilder(planColumns([field('v', type)]), { onInvalid });
  builder.appendRows(
    values.map((v) => [v]),
    1,
  );
  return plainRows(builder.flush()).map((r) => r.v);
}

const mixed = mixedFields(SHORT_IDS);

describe('RecordBatchBuilder conversions', () => {
  it('numbers: JSON numbers, decimal strings; nothing else', () => {
    expect(oneColumn('number', [0, -1.5, 2 ** 53, '12', '-1.5e3', '.5', '+7', null])).toEqual([
      0,
      -1.5,
      2 ** 53,
      12,
      -1500,
      0.5,
      7,
      null,
    ]);
    for (const bad of ['', ' 1', '1 ', '0x10', '1_000', 'Infinity', 'NaN', 'abc', true, '1e400']) {
      expect(oneColumn('number', [bad], 'null'), String(bad)).toEqual([null]);
    }
  });

  it('dates: YYYYMMDD (or its midnight timestamp) at UTC midnight', () => {
    expect(oneColumn('date', ['20240229', '19691231', '20240229T000000Z', null])).toEqual([
      Date.UTC(2024, 1, 29),
      -DAY,
      Date.UTC(2024, 1, 29),
      null,
    ]);
    for (const bad of ['20241345', '20230229', '2024022', 'abc', 20240229, '20240229T120000Z']) {
      expect(oneColumn('date', [bad], 'null'), String(bad)).toEqual([null]);
    }
  });

  it('timestamps: YYYYMMDDTHHMMSSZ as UTC ms, negative and far ones too', () => {
    expect(
      oneColumn('datetime', ['20240229T123456Z', '19691231T235959Z', '18000101T000000Z', '29991231T235959Z']),
    ).toEqual([
      Date.UTC(2024, 1, 29, 12, 34, 56),
      -1000,
      Date.UTC(1800, 0, 1),
      Date.UTC(2999, 11, 31, 23, 59, 59),
    ]);
    expect(oneColumn('datetime', ['20240229T246000Z', 1709210096000], 'null')).toEqual([null, null]);
  });

  it('booleans: true/false, "true"/"false", 1/0', () => {
    expect(oneColumn('boolean', [true, false, 'true', 'false', 1, 0, null])).toEqual([
      true,
      false,
      true,
      false,
      true,
      false,
      null,
    ]);
    expect(oneColumn('boolean', ['TRUE', 'yes', 2, ''], 'null')).toEqual([null, null, null, null]);
  });

  it('strings: kept as sent; numbers and booleans as String(v), never dropped', () => {
    expect(oneColumn('string', ['a', '', 'é😀', 12, 1.5, true, null])).toEqual([
      'a',
      '',
      'é😀',
      '12',
      '1.5',
      'true',
      null,
    ]);
    expect(oneColumn('string', [{ a: 1 } as never, [1] as never], 'null')).toEqual([null, null]);
  });

  it('encodes long string columns exactly across internal blocks (property)', () => {
    const text = fc.option(fc.oneof(trickyText, fc.constantFrom('\uD83D', '\uDE00', '😀', 'ascii')), {
      nil: null,
      freq: 5,
    });
    fc.assert(
      fc.property(fc.array(text, { minLength: 250, maxLength: 800 }), (values) => {
        expect(oneColumn('string', values)).toEqual(
          values.map((v) => (v === null ? null : Buffer.from(v).toString())),
        );
      }),
      { numRuns: 25 },
    );
  });

  it('treats undefined (a hole in a row) as null', () => {
    expect(oneColumn('number', [undefined as never])).toEqual([null]);
  });

  it('encodes non-ASCII exactly, including surrogate pairs split over two values', () => {
    const values = ['a', 'é', '\uD83D', '\uDE00', '😀', '\u0000', 'x'.repeat(5000), '中文'];
    expect(oneColumn('string', values)).toEqual([
      'a',
      'é',
      '\uFFFD',
      '\uFFFD',
      '😀',
      '\u0000',
      'x'.repeat(5000),
      '中文',
    ]);
  });
});

describe('RecordBatchBuilder errors', () => {
  const page = { start: 101, limit: 50 };

  it('reports the first invalid value in row order with page, row, column', async () => {
    const builder = new RecordBatchBuilder(planColumns(mixed));
    const rows: WireValue[][] = [
      ['t', '20240101', '20240101T000000Z', 1, true, 's'],
      ['t', '20240101', '20240101T000000Z', 1, 'maybe', 's'],
      ['t', '20241345', '20240101T000000Z', 1, true, 's'],
    ];
    const error = await caught(() => builder.appendRows(rows, 101, page));
    expect(error).toBeInstanceOf(InvalidValueError);
    expect(error).toMatchObject({
      code: 'DQS_INVALID_VALUE',
      page,
      row: 102,
      column: 'b',
      value: 'maybe',
      expected: 'a boolean',
    });
    expect((error as Error).message).toBe(
      'Expected a boolean, got "maybe" (page start=101 limit=50, row 102, column "b")',
    );
  });

  it('keeps nothing of a failed append (all or nothing), dictionary entries included', () => {
    const builder = new RecordBatchBuilder(planColumns(mixed));
    builder.appendRows([['x', '20240101', null, 1, true, 'keep']], 1);
    expect(() =>
      builder.appendRows(
        [
          ['new1', '20240102', '20240102T000000Z', 2, false, 'drop'],
          ['new2', '20240103', '20240103T000000Z', 'bad', false, 'drop'],
        ],
        2,
      ),
    ).toThrow(InvalidValueError);
    expect(builder.length).toBe(1);
    builder.appendRows([['y', null, null, null, null, 'after']], 2);
    const batch = builder.flush();
    expect(plainRows(batch)).toEqual([
      { ticker: 'x', d: Date.UTC(2024, 0, 1), ts: null, n: 1, b: true, s: 'keep' },
      { ticker: 'y', d: null, ts: null, n: null, b: null, s: 'after' },
    ]);
    const dictionary = batch.getChild('ticker')!.data[0]!.dictionary as Vector;
    expect([...dictionary]).toEqual(['x', 'y']);
  });

  it('stores null for invalid values with onInvalid: null', () => {
    const builder = new RecordBatchBuilder(planColumns(mixed), { onInvalid: 'null' });
    builder.appendRows([[{} as never, '20241345', 'noon', 'abc', 'maybe', [] as never]], 1);
    expect(plainRows(builder.flush())).toEqual([
      { ticker: null, d: null, ts: null, n: null, b: null, s: null },
    ]);
  });

  it('rejects a row with the wrong number of values, naming page and row', async () => {
    const builder = new RecordBatchBuilder(planColumns([field('a'), field('b')]));
    const error = await caught(() =>
      builder.appendRows(
        [
          ['1', '2'],
          ['1', '2', '3'],
        ],
        11,
        page,
      ),
    );
    expect(error).toBeInstanceOf(DecodeError);
    expect(error).toMatchObject({ code: 'DQS_DECODE', page, row: 12 });
    expect((error as Error).message).toContain('has 3 values, expected 2');
    expect(() => builder.appendRows([['1']], 1)).toThrow(/has 1 values, expected 2/);
    expect(() => builder.appendRows(['12' as never], 1)).toThrow(/is not an array/);
    expect(builder.length).toBe(0);
  });

  it('validates onInvalid', () => {
    expect(() => new RecordBatchBuilder([], { onInvalid: 'skip' as never })).toThrow(InvalidArgumentError);
  });
});

describe('RecordBatchBuilder batches', () => {
  it('flushes what was appended since the last flush, then starts over', () => {
    const builder = new RecordBatchBuilder(planColumns(mixed));
    builder.appendRows([['a', '20240101', '20240101T010203Z', 1, true, 'x']], 1);
    builder.appendRows([['b', '20240102', null, 2, false, 'y']], 2);
    expect(builder.length).toBe(2);
    const first = builder.flush();
    expect(first.numRows).toBe(2);
    expect(builder.length).toBe(0);
    builder.appendRows([[null, null, null, null, null, null]], 3);
    const second = builder.flush();
    expect(plainRows(second)).toEqual([{ ticker: null, d: null, ts: null, n: null, b: null, s: null }]);
    // Values under nulls are zeros, not leftovers of the previous batch's reused buffers.
    expect([...(second.getChild('n')!.data[0]!.values as Float64Array)]).toEqual([0]);
    expect([...(second.getChild('d')!.data[0]!.values as Int32Array)]).toEqual([0]);
  });

  it('gives a 0-row batch with the schema when nothing was appended', () => {
    const builder = new RecordBatchBuilder(planColumns(mixed));
    const empty = builder.flush();
    expect(empty.numRows).toBe(0);
    expect(empty.schema.fields).toEqual(builder.schema.fields);
    const back = tableFromIPC(tableToIPC(new Table([empty]), 'stream'));
    expect(back.numRows).toBe(0);
    expect(back.schema.fields.map((f) => f.name)).toEqual(mixed.map((f) => f.id));
  });

  it('trims buffers to the rows of the batch', () => {
    const builder = new RecordBatchBuilder(planColumns([field('s'), field('n', 'number')]));
    builder.appendRows(
      Array.from({ length: 3000 }, (_, i) => [`value ${i}`, i]),
      1,
    );
    builder.flush();
    builder.appendRows([['one', 1]], 3001);
    const batch = builder.flush();
    const s = batch.getChild('s')!.data[0]!;
    expect(s.values.byteLength).toBe(3);
    expect(s.valueOffsets.length).toBe(2);
    expect(batch.getChild('n')!.data[0]!.values.length).toBe(1);
  });

  it('handles pages larger than the initial capacity and many of them', () => {
    const builder = new RecordBatchBuilder(planColumns(mixed));
    let expectedRows = 0;
    for (let p = 0; p < 5; p++) {
      const rows = Array.from({ length: 2500 }, (_, i) => [
        `t${i % 7}`,
        '20240101',
        '20240101T000000Z',
        i % 3 ? i : null,
        i % 2 === 0,
        `text ${i} ${'é'.repeat(i % 4)}`,
      ]);
      builder.appendRows(rows, 1 + p * 2500);
      expectedRows += rows.length;
    }
    const batch = builder.flush();
    expect(batch.numRows).toBe(expectedRows);
    expect(batch.getChild('s')!.get(12_499)).toBe(`text 2499 ${'é'.repeat(3)}`);
    expect(batch.getChild('n')!.get(12_499)).toBe(null);
    expect(batch.getChild('ticker')!.get(12_499)).toBe('t0');
  });
});

const kinds: ColumnKind[] = ['string', 'number', 'date', 'datetime', 'boolean'];

/** A valid wire value of a kind, or null. */
function wireValue(kind: ColumnKind): fc.Arbitrary<WireValue> {
  const value: fc.Arbitrary<WireValue> = {
    string: trickyText as fc.Arbitrary<WireValue>,
    number: fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer()),
    date: wireDate,
    datetime: wireTimestamp,
    boolean: fc.boolean(),
  }[kind];
  return fc.option(value, { nil: null, freq: 4 });
}

const tableArb = fc
  .array(fc.record({ kind: fc.constantFrom(...kinds), ticker: fc.boolean() }), { minLength: 1, maxLength: 6 })
  .chain((cols) =>
    fc.record({
      cols: fc.constant(cols),
      pages: fc.array(fc.array(fc.tuple(...cols.map((c) => wireValue(c.kind))), { maxLength: 30 }), {
        minLength: 1,
        maxLength: 5,
      }),
    }),
  );

function expectedValue(kind: ColumnKind, v: WireValue): unknown {
  if (v === null) return null;
  switch (kind) {
    case 'date':
      return Date.parse(
        `${String(v).slice(0, 4)}-${String(v).slice(4, 6)}-${String(v).slice(6, 8)}T00:00:00Z`,
      );
    case 'datetime': {
      const s = String(v);
      return Date.parse(
        `${s.slice(0, 4)}-${s.slice(4, 6)}-${s.slice(6, 8)}T${s.slice(9, 11)}:${s.slice(11, 13)}:${s.slice(13, 15)}Z`,
      );
    }
    case 'string':
      // Lone surrogates cannot be UTF-8: they come back as U+FFFD, as from any UTF-8 encoder.
      return Buffer.from(String(v)).toString('utf8');
    default:
      return v;
  }
}

describe('RecordBatchBuilder property: wire rows → batches → IPC → the same values', () => {
  it('round-trips random tables through both IPC formats, batch by batch', () => {
    fc.assert(
      fc.property(tableArb, ({ cols, pages }) => {
        const fields = cols.map((c, j) => field(`c${j}`, c.kind, c.ticker ? 'ticker' : null));
        const builder = new RecordBatchBuilder(planColumns(fields));
        const batches: RecordBatch[] = [];
        let start = 1;
        for (const rows of pages) {
          builder.appendRows(rows, start);
          start += rows.length;
          batches.push(builder.flush());
        }
        const expected = pages
          .flat()
          .map((row) => Object.fromEntries(row.map((v, j) => [`c${j}`, expectedValue(cols[j]!.kind, v)])));
        const table = new Table(batches);
        expect(plainRows(table)).toEqual(expected);
        for (const format of ['stream', 'file'] as const) {
          const back = tableFromIPC(tableToIPC(table, format));
          expect(plainRows(back)).toEqual(expected);
          expect(back.batches.map((b) => b.numRows)).toEqual(pages.map((p) => p.length));
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe('ticker dictionaries across batches', () => {
  const fields = [field('ticker', 'string', 'ticker'), field('n', 'number')];
  const pages: WireValue[][][] = [
    [
      [null, 1],
      [null, 2],
    ], // first batch: no dictionary entry at all
    [
      ['nasdaq:aapl', 3],
      ['nyse:ibm', 4],
      ['nasdaq:aapl', 5],
    ],
    [['nyse:ibm', 6]], // nothing new
    [
      ['private:acme', 7],
      [null, 8],
      ['nasdaq:msft', 9],
    ],
  ];

  function build(): RecordBatch[] {
    const builder = new RecordBatchBuilder(planColumns(fields));
    let start = 1;
    return pages.map((rows) => {
      builder.appendRows(rows, start);
      start += rows.length;
      return builder.flush();
    });
  }
  const expected = pages.flat().map(([ticker, n]) => ({ ticker, n }));

  it('keeps one dictionary that only grows (each batch extends the previous one)', () => {
    const batches = build();
    const dictionaries = batches.map((b) => b.getChild('ticker')!.data[0]!.dictionary as Vector);
    expect(dictionaries.map((d) => [...d])).toEqual([
      [],
      ['nasdaq:aapl', 'nyse:ibm'],
      ['nasdaq:aapl', 'nyse:ibm'],
      ['nasdaq:aapl', 'nyse:ibm', 'private:acme', 'nasdaq:msft'],
    ]);
    for (const d of dictionaries) expect(d.data[0]).toBe(dictionaries[0]!.data[0]);
  });

  it.each(['stream', 'file'] as const)('round-trips through tableToIPC (%s)', (format) => {
    const back = tableFromIPC(tableToIPC(new Table(build()), format));
    expect(plainRows(back)).toEqual(expected);
    expect(back.schema.fields[0]!.type).toBeInstanceOf(
      Object.getPrototypeOf(build()[0]!.schema.fields[0]!.type).constructor,
    );
  });

  it('round-trips batch by batch through the writers, read back batch by batch', () => {
    for (const Writer of [RecordBatchStreamWriter, RecordBatchFileWriter]) {
      const writer = new Writer();
      for (const batch of build()) writer.write(batch);
      writer.finish();
      const reader = RecordBatchReader.from(writer.toUint8Array(true));
      const rows = [...reader].flatMap((b) => plainRows(b));
      expect(rows, Writer.name).toEqual(expected);
    }
  });

  it('emits delta dictionary batches in the stream format (no replacement)', () => {
    const bytes = tableToIPC(new Table(build()), 'stream');
    const reader = RecordBatchReader.from(bytes);
    const sizes = [...reader].map((b) => (b.getChild('ticker')!.data[0]!.dictionary as Vector).length);
    expect(sizes).toEqual([0, 2, 2, 4]);
    expect((build()[0]!.schema.fields[0]!.type as Dictionary).isOrdered).toBe(false);
  });
});

describe('non-table inputs', () => {
  it('builds from rows of many pages with correct row numbers in errors', async () => {
    const builder = new RecordBatchBuilder(planColumns([field('n', 'number')]));
    builder.appendRows([[1], [2]], 1, { start: 1, limit: 2 });
    const error = await caught(() => builder.appendRows([[3], ['x']], 3, { start: 3, limit: 2 }));
    expect(error).toMatchObject({ row: 4, page: { start: 3, limit: 2 }, column: 'n' });
    expect(new RecordBatch(builder.flush().schema, builder.flush().data).numRows).toBe(0);
  });
});
