import { type RecordBatch, Table, tableFromIPC, tableToIPC } from 'apache-arrow';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  concatBatches,
  planColumns,
  RecordBatchBuilder,
  rebatch,
  rebatchAsync,
} from '../src/convert/index.js';
import { InvalidArgumentError } from '../src/core/errors.js';
import type { WireValue } from '../src/core/wire.js';
import { mixedFields, SHORT_IDS } from './convert-fixtures.js';

const fields = mixedFields(SHORT_IDS);

function row(i: number): WireValue[] {
  return [
    i % 4 === 0 ? null : `t${i % 9}`,
    i % 5 === 0 ? null : `2024010${1 + (i % 9)}`,
    i % 6 === 0 ? null : `20240101T0000${String(i % 60).padStart(2, '0')}Z`,
    i % 7 === 0 ? null : i * 1.5,
    i % 3 === 0 ? null : i % 2 === 0,
    i % 8 === 0 ? null : `s${i}${'é'.repeat(i % 3)}`,
  ];
}

/** Batches of the given sizes from one builder, rows numbered consecutively. */
function batchesOf(sizes: readonly number[]): RecordBatch[] {
  const builder = new RecordBatchBuilder(planColumns(fields));
  let next = 0;
  return sizes.map((size) => {
    builder.appendRows(
      Array.from({ length: size }, () => row(next++)),
      next + 1 - size,
    );
    return builder.flush();
  });
}

const plain = (batches: Iterable<RecordBatch>) =>
  [...batches].flatMap((b) => b.toArray().map((r) => ({ ...r.toJSON() })));

describe('rebatch', () => {
  it('re-slices to batchSize rows whatever the input sizes, keeping every value', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(40), { maxLength: 8 }), fc.integer({ min: 1, max: 50 }), (sizes, size) => {
        const input = batchesOf(sizes);
        const output = [...rebatch(input, size)];
        const total = sizes.reduce((a, b) => a + b, 0);
        expect(output.map((b) => b.numRows)).toEqual(
          Array.from({ length: Math.ceil(total / size) }, (_, i) => Math.min(size, total - i * size)),
        );
        expect(plain(output)).toEqual(plain(input));
        if (output.length > 0) {
          for (const format of ['stream', 'file'] as const) {
            expect(plain(tableFromIPC(tableToIPC(new Table(output), format)).batches)).toEqual(plain(input));
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it('passes batches of exactly batchSize through untouched', () => {
    const input = batchesOf([5, 5]);
    const output = [...rebatch(input, 5)];
    expect(output[0]).toBe(input[0]);
    expect(output[1]).toBe(input[1]);
  });

  it('works over async sources', async () => {
    async function* source() {
      yield* batchesOf([3, 0, 4]);
    }
    const output: RecordBatch[] = [];
    for await (const b of rebatchAsync(source(), 2)) output.push(b);
    expect(output.map((b) => b.numRows)).toEqual([2, 2, 2, 1]);
  });

  it('validates batchSize', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      expect(() => [...rebatch([], bad)]).toThrow(InvalidArgumentError);
    }
    expect(() => [...rebatch([], 0)]).toThrow('to be an integer >= 1, got 0 (number)');
  });

  it('refuses to merge dictionary columns of two unrelated builders', () => {
    const [a] = batchesOf([3]);
    const [b] = batchesOf([3]);
    expect(() => concatBatches([a!, b!])).toThrow(/unrelated dictionaries/);
  });
});
