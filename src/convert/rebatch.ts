/**
 * Re-slicing batches to a fixed row count, independent of the page size they were built from (measured
 * before this repository: many small batches slow IPC writing; re-batch to fewer, larger ones for export). Larger batches are
 * sliced (zero-copy); pieces of several batches are concatenated by copying their buffers into one
 * contiguous batch. Supports the types `RecordBatchBuilder` produces (Float64, Int64 with
 * `bigNumbers: 'bigint'`, DateDay, Timestamp, Bool, Utf8, Dictionary<Utf8, Int32>), and the other
 * fixed-width numbers.
 */

import {
  type Data,
  DataType,
  type Dictionary,
  makeData,
  RecordBatch,
  type Schema,
  Struct,
  type Utf8,
  type Vector,
} from 'apache-arrow';
import { InvalidArgumentError, safeRepr } from '../core/errors.js';
import { checkInteger } from '../core/validate.js';

function checkBatchSize(batchSize: number): void {
  checkInteger(batchSize, 'batchSize', 1);
}

/**
 * Batches of exactly `batchSize` rows (the last one may be shorter) holding the rows of `batches` in
 * order. Empty input batches are skipped.
 *
 * @example for (const b of rebatch(table.batches, 100_000)) writer.write(b);
 */
export function* rebatch(batches: Iterable<RecordBatch>, batchSize: number): Generator<RecordBatch> {
  checkBatchSize(batchSize);
  const pending = new Pending(batchSize);
  for (const batch of batches) yield* pending.add(batch);
  const rest = pending.rest();
  if (rest) yield rest;
}

/** `rebatch` over an async source (e.g. a result stream of batches). */
export async function* rebatchAsync(
  batches: AsyncIterable<RecordBatch> | Iterable<RecordBatch>,
  batchSize: number,
): AsyncGenerator<RecordBatch> {
  checkBatchSize(batchSize);
  const pending = new Pending(batchSize);
  for await (const batch of batches) yield* pending.add(batch);
  const rest = pending.rest();
  if (rest) yield rest;
}

/**
 * Rows gathered into batches of exactly `batchSize`; `rest()` gives the last, shorter one. `copy`: every
 * batch out is a fresh contiguous copy, even one that is a slice of a single batch in (a slice keeps its
 * source's buffers, whose bits past the slice then reach the IPC bytes).
 */
export class Pending {
  #pieces: RecordBatch[] = [];
  #rows = 0;
  constructor(
    readonly batchSize: number,
    readonly copy = false,
  ) {}

  *add(batch: RecordBatch): Generator<RecordBatch> {
    let offset = 0;
    while (offset < batch.numRows) {
      const take = Math.min(this.batchSize - this.#rows, batch.numRows - offset);
      this.#pieces.push(offset === 0 && take === batch.numRows ? batch : batch.slice(offset, offset + take));
      this.#rows += take;
      offset += take;
      if (this.#rows === this.batchSize) yield this.#take();
    }
  }

  rest(): RecordBatch | undefined {
    return this.#rows > 0 ? this.#take() : undefined;
  }

  #take(): RecordBatch {
    const pieces = this.#pieces;
    this.#pieces = [];
    this.#rows = 0;
    return pieces.length === 1 && !this.copy ? pieces[0]! : concatBatches(pieces);
  }
}

/** One contiguous batch with the rows of `batches` (same schema), buffers copied. */
export function concatBatches(batches: readonly RecordBatch[]): RecordBatch {
  const first = batches[0];
  if (first === undefined) throw new InvalidArgumentError('batches', 'Expected at least one batch');
  const schema: Schema = first.schema;
  const length = batches.reduce((n, b) => n + b.numRows, 0);
  const children = schema.fields.map((field, j) =>
    concatData(
      field.name,
      batches.map((b) => b.data.children[j]!),
      length,
    ),
  );
  return new RecordBatch(
    schema,
    makeData({ type: new Struct(schema.fields), length, nullCount: 0, children }),
  );
}

function concatData(name: string, pieces: readonly Data[], length: number): Data {
  const type = pieces[0]!.type as DataType;
  const { nullCount, nullBitmap } = concatValidity(pieces, length);
  if (DataType.isUtf8(type)) {
    const { valueOffsets, data } = concatUtf8(pieces as readonly Data<Utf8>[], length);
    return makeData({ type, length, nullCount, nullBitmap, valueOffsets, data });
  }
  if (DataType.isBool(type)) {
    const data = new Uint8Array((length + 7) >> 3);
    let at = 0;
    for (const p of pieces) at = copyBits(p.values as Uint8Array, p.offset, p.length, data, at);
    return makeData({ type, length, nullCount, nullBitmap, data });
  }
  if (DataType.isDictionary(type)) {
    const dictionary = commonDictionary(name, pieces as readonly Data<Dictionary>[]);
    const data = concatFixed(pieces, length) as Int32Array;
    return makeData({ type, length, nullCount, nullBitmap, data, dictionary });
  }
  if (DataType.isFloat(type) || DataType.isInt(type) || DataType.isDate(type) || DataType.isTimestamp(type)) {
    return makeData({ type, length, nullCount, nullBitmap, data: concatFixed(pieces, length) } as never);
  }
  throw new InvalidArgumentError(
    'batches',
    `column ${safeRepr(name)}: cannot concatenate type ${String(type)}`,
  );
}

type FixedArray = Float64Array | Float32Array | Int32Array | BigInt64Array;

/** Fixed-width values: sliced Data already starts its `values` at its first row. */
function concatFixed(pieces: readonly Data[], length: number): FixedArray {
  const sample = pieces[0]!.values as FixedArray;
  const out = new (sample.constructor as new (n: number) => FixedArray)(length);
  let at = 0;
  for (const p of pieces) {
    out.set((p.values as FixedArray).subarray(0, p.length) as never, at);
    at += p.length;
  }
  return out;
}

/** Utf8: offsets are sliced to the piece (starting anywhere), bytes are not. */
function concatUtf8(
  pieces: readonly Data<Utf8>[],
  length: number,
): { valueOffsets: Int32Array; data: Uint8Array } {
  let bytes = 0;
  for (const p of pieces) bytes += p.valueOffsets[p.length]! - p.valueOffsets[0]!;
  const valueOffsets = new Int32Array(length + 1);
  // Not zeroed first: every byte is written below (the strings are most of an export's bytes).
  const data = Buffer.allocUnsafe(bytes);
  let row = 0;
  let pos = 0;
  for (const p of pieces) {
    const offs = p.valueOffsets;
    const base = offs[0]!;
    for (let i = 1; i <= p.length; i++) valueOffsets[row + i] = pos + offs[i]! - base;
    data.set(p.values.subarray(base, offs[p.length]), pos);
    pos += offs[p.length]! - base;
    row += p.length;
  }
  return { valueOffsets, data };
}

function concatValidity(
  pieces: readonly Data[],
  length: number,
): { nullCount: number; nullBitmap: Uint8Array | undefined } {
  const nullCount = pieces.reduce((n, p) => n + p.nullCount, 0);
  if (nullCount === 0) return { nullCount, nullBitmap: undefined };
  const bitmap = new Uint8Array((length + 7) >> 3);
  let at = 0;
  for (const p of pieces) {
    at =
      p.nullCount === 0
        ? setBits(bitmap, at, p.length)
        : copyBits(p.nullBitmap!, p.offset, p.length, bitmap, at);
  }
  return { nullCount, nullBitmap: bitmap };
}

/**
 * Copies `count` bits of `src` from bit `from` into the zeroed `dst` at bit `at`; returns `at + count`.
 * Bit by bit up to a byte of `dst`, then a whole byte of it per step (the export re-cuts every batch,
 * and bit by bit was most of that time for columns with nulls).
 */
function copyBits(src: Uint8Array, from: number, count: number, dst: Uint8Array, at: number): number {
  let i = 0;
  for (; i < count && ((at + i) & 7) !== 0; i++) copyBit(src, from + i, dst, at + i);
  const shift = (from + i) & 7;
  for (; i + 8 <= count; i += 8) {
    const s = (from + i) >> 3;
    dst[(at + i) >> 3] =
      shift === 0 ? src[s]! : ((src[s]! >> shift) | ((src[s + 1] ?? 0) << (8 - shift))) & 0xff;
  }
  for (; i < count; i++) copyBit(src, from + i, dst, at + i);
  return at + count;
}

function copyBit(src: Uint8Array, bit: number, dst: Uint8Array, at: number): void {
  if (src[bit >> 3]! & (1 << (bit & 7))) dst[at >> 3]! |= 1 << (at & 7);
}

/** Sets `count` bits of the zeroed `dst` from bit `at`; returns `at + count`. */
function setBits(dst: Uint8Array, at: number, count: number): number {
  const end = at + count;
  for (; at < end && (at & 7) !== 0; at++) dst[at >> 3]! |= 1 << (at & 7);
  if (end - at >= 8) {
    dst.fill(0xff, at >> 3, end >> 3);
    at = end & ~7;
  }
  for (; at < end; at++) dst[at >> 3]! |= 1 << (at & 7);
  return end;
}

/**
 * The dictionary to use for indices from several batches. Batches of one builder (or of one IPC reader)
 * share a dictionary that only grows, so the longest one covers every index. Anything else (two
 * unrelated dictionaries) cannot be merged without re-encoding: refuse rather than mislabel values.
 */
function commonDictionary(name: string, pieces: readonly Data<Dictionary>[]): Vector {
  let best = pieces[0]!.dictionary!;
  for (const p of pieces) if (p.dictionary!.length > best.length) best = p.dictionary!;
  for (const p of pieces) {
    const d = p.dictionary!;
    if (d !== best && d.data[0] !== best.data[0]) {
      throw new InvalidArgumentError(
        'batches',
        `column ${safeRepr(name)}: batches carry unrelated dictionaries (not from one builder or reader)`,
      );
    }
  }
  return best;
}
