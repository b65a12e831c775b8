/**
 * The writers' bytes depend on the rows alone (issue #47): batches re-cut to fixed row counts and
 * dictionaries rebuilt in the order of the rows, whatever batches and dictionaries come in. Before, the
 * same rows cut at other page boundaries (or converted in another order, so the ticker dictionary grew
 * in another order) wrote another Arrow file, Arrow stream and Parquet file.
 */
import { createHash } from 'node:crypto';
import { Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  Field,
  Int32,
  List,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  tableFromIPC,
  vectorFromArray,
} from 'apache-arrow';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planColumns, RecordBatchBuilder } from '../src/convert/index.js';
import type { WireValue } from '../src/core/wire.js';
import { toArrowIpc, toCsv, toJsonl, toParquet } from '../src/index.js';
import { FixedBatches } from '../src/output/fixed-batches.js';
import { field, mixedFields } from './convert-fixtures.js';

const fields = mixedFields();

function row(i: number): WireValue[] {
  return [
    i % 11 === 0 ? null : `t${(i * 7) % 13}`,
    i % 5 === 0 ? null : `2024010${1 + (i % 9)}`,
    i % 6 === 0 ? null : `20240101T0000${String(i % 60).padStart(2, '0')}Z`,
    i % 7 === 0 ? null : i * 1.5,
    i % 3 === 0 ? null : i % 2 === 0,
    i % 8 === 0 ? null : `s${i}${'é'.repeat(i % 3)}`,
  ];
}

const rows = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => row(from + k));

/**
 * `total` rows cut at `cuts`. `builders: 'one'`: one builder, as one stream converts; `'each'`: a builder
 * per batch (unrelated dictionaries, as the parts of a split read); `'ahead'`: one builder that saw later
 * rows first (its dictionary numbers tickers in another order and holds entries the batch does not use,
 * as when pages are converted out of order).
 */
function batches(total: number, cuts: readonly number[], builders: 'one' | 'each' | 'ahead'): RecordBatch[] {
  const bounds = [...new Set([0, ...cuts.filter((c) => c > 0 && c < total), total])].sort((a, b) => a - b);
  const shared = new RecordBatchBuilder(planColumns(fields));
  if (builders === 'ahead' && total > 0) {
    shared.appendRows(rows(Math.floor(total / 2), total).reverse(), 1);
    shared.flush();
  }
  const out: RecordBatch[] = [];
  for (let b = 0; b + 1 < bounds.length; b++) {
    const builder = builders === 'each' ? new RecordBatchBuilder(planColumns(fields)) : shared;
    builder.appendRows(rows(bounds[b]!, bounds[b + 1]!), bounds[b]! + 1);
    out.push(builder.flush());
  }
  if (out.length === 0) {
    shared.appendRows([], 1);
    out.push(shared.flush());
  }
  return out;
}

async function bytesOf(input: readonly RecordBatch[], writer: Transform | NodeJS.ReadWriteStream) {
  const chunks: Buffer[] = [];
  await pipeline(Readable.from(input), writer, async (bytes: AsyncIterable<Buffer>) => {
    for await (const b of bytes) chunks.push(Buffer.from(b));
  });
  return Buffer.concat(chunks);
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

const values = (bytes: Buffer) =>
  tableFromIPC(bytes)
    .toArray()
    .map((r) => ({ ...r.toJSON() }));

const builderKinds = fc.constantFrom('one' as const, 'each' as const, 'ahead' as const);

describe('FixedBatches: the writers re-cut batches and rebuild dictionaries', () => {
  it('Arrow file and stream: the same bytes for the same rows, however cut and whatever the dictionaries', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 300 }),
        fc.array(fc.nat(300), { maxLength: 8 }),
        builderKinds,
        fc.integer({ min: 1, max: 120 }),
        async (total, cuts, kind, batchSize) => {
          for (const format of ['file', 'stream'] as const) {
            const reference = await bytesOf(batches(total, [], 'one'), toArrowIpc({ format, batchSize }));
            const written = await bytesOf(batches(total, cuts, kind), toArrowIpc({ format, batchSize }));
            expect(sha(written)).toBe(sha(reference));
            const table = tableFromIPC(written);
            expect(table.numRows).toBe(total);
            expect(table.batches.map((b) => b.numRows)).toEqual(
              total === 0
                ? [0]
                : Array.from({ length: Math.ceil(total / batchSize) }, (_, i) =>
                    Math.min(batchSize, total - i * batchSize),
                  ),
            );
            expect(values(written)).toEqual(
              batches(total, [], 'one').flatMap((b) => b.toArray().map((r) => ({ ...r.toJSON() }))),
            );
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('each batch carries the dictionary entries of its rows and those before, in the order they came', () => {
    const fixed = new FixedBatches(4);
    // The input dictionary numbers the tickers in another order than the rows use them.
    const out = [...batches(10, [3, 7], 'ahead').flatMap((b) => [...fixed.push(b)]), ...fixed.end()];
    const tickers = rows(0, 10).map((r) => r[0]);
    const seen: unknown[] = [];
    out.forEach((batch, b) => {
      for (const t of tickers.slice(b * 4, b * 4 + 4)) if (t !== null && !seen.includes(t)) seen.push(t);
      expect(batch.getChild('ticker')!.data[0]!.dictionary!.toArray()).toEqual(seen);
    });
  });

  it('Parquet, CSV and JSON Lines: the same bytes for the same rows, however cut', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 3000 }),
        fc.array(fc.nat(3000), { maxLength: 6 }),
        builderKinds,
        async (total, cuts, kind) => {
          const writers = [() => toParquet({ rowGroupSize: 700 }), () => toCsv(), () => toJsonl()] as const;
          for (const writer of writers) {
            const reference = await bytesOf(batches(total, [], 'one'), writer());
            expect(sha(await bytesOf(batches(total, cuts, kind), writer()))).toBe(sha(reference));
          }
        },
      ),
      { numRuns: 12 },
    );
  });

  it('Int64 columns (bigNumbers: bigint) are re-cut too', async () => {
    const schema = new Schema([new Field('n', vectorFromArray([1n], undefined).type, true)]);
    const batch = (from: number, n: number) =>
      new RecordBatch(
        schema,
        makeData({
          type: new Struct(schema.fields),
          length: n,
          nullCount: 0,
          children: [vectorFromArray(Array.from({ length: n }, (_, i) => BigInt(from + i))).data[0]!],
        }),
      );
    const whole = await bytesOf([batch(0, 10)], toArrowIpc({ batchSize: 4 }));
    expect(sha(await bytesOf([batch(0, 3), batch(3, 7)], toArrowIpc({ batchSize: 4 })))).toBe(sha(whole));
    expect(tableFromIPC(whole).batches.map((b) => b.numRows)).toEqual([4, 4, 2]);
  });

  it('batches of a type it cannot re-cut (a list) pass through as they come', async () => {
    const list = vectorFromArray([[1], [2, 3], null], new List(new Field('item', new Int32(), true)));
    const schema = new Schema([new Field('l', list.type, true)]);
    const batch = new RecordBatch(
      schema,
      makeData({ type: new Struct(schema.fields), length: 3, nullCount: 0, children: [list.data[0]!] }),
    );
    const table = tableFromIPC(await bytesOf([batch, batch], toArrowIpc({ batchSize: 4 })));
    expect(table.batches.map((b) => b.numRows)).toEqual([3, 3]);
    const lists = [...table.getChild('l')!] as ({ toArray(): Int32Array } | null)[];
    expect(lists.map((v) => v?.toArray() ?? null)).toEqual(
      [[1], [2, 3], null, [1], [2, 3], null].map((v) => (v ? Int32Array.from(v) : null)),
    );
  });

  it('refuses a batchSize below 1', () => {
    expect(() => toArrowIpc({ batchSize: 0 })).toThrow(/Expected `batchSize` to be an integer >= 1, got 0/);
  });

  it('a ticker column of only nulls, then tickers: one dictionary, deltas after it (no replacement)', async () => {
    const only = (value: string | null, n: number) => {
      const builder = new RecordBatchBuilder(planColumns([field('ticker', 'string', 'ticker')]));
      builder.appendRows(
        Array.from({ length: n }, () => [value]),
        1,
      );
      return builder.flush();
    };
    for (const format of ['file', 'stream'] as const) {
      const bytes = await bytesOf(
        [only(null, 3), only('a:b', 3), only('c:d', 3)],
        toArrowIpc({ format, batchSize: 3 }),
      );
      expect(tableFromIPC(bytes).getChild('ticker')!.toArray()).toEqual([
        null,
        null,
        null,
        'a:b',
        'a:b',
        'a:b',
        'c:d',
        'c:d',
        'c:d',
      ]);
    }
  });
});
