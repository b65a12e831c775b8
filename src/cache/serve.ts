/**
 * Serving an entry's batches as a result stream serves the service's: the same rows from `startRow`, in
 * batches of exactly `batchSize` rows when one is given (the page engine's boundaries) or else the
 * batches the entry was filled with, carrying the schema the stream announced; or, for `output: 'rows'`, the same row objects, made by the same generated factory as the
 * fast decoders' (from the Arrow buffers seen as decoded columns).
 */
import { type Data, DataType, RecordBatch, type Schema, type Vector } from 'apache-arrow';
import {
  type ColumnPlan,
  type DecodedColumn,
  type DecodedColumns,
  makeColumnRowFactory,
  RecordBatchBuilder,
  rebatch,
} from '../convert/index.js';
import type { LocalReadContext, LocalStep } from '../query/result-source.js';
import { EntryProblem } from './entry-format.js';

/** Row objects made at a time (as the page engine's row converter). */
const ROW_SLICE = 1000;

/** An entry's schema must be the one the stream announced: same names and types, in order. */
export function checkSchema(stored: Schema, expected: Schema): void {
  const same =
    stored.fields.length === expected.fields.length &&
    stored.fields.every(
      (f, i) => f.name === expected.fields[i]!.name && String(f.type) === String(expected.fields[i]!.type),
    );
  if (!same) throw new EntryProblem('corrupt', "the entry's schema is not the stream's");
}

/** The rows `startRow..` of `batches`, as zero-copy slices. */
function* fromRow(batches: readonly RecordBatch[], startRow: number): Generator<RecordBatch> {
  let skip = startRow - 1;
  for (const batch of batches) {
    if (skip >= batch.numRows) {
      skip -= batch.numRows;
      continue;
    }
    yield skip > 0 ? batch.slice(skip) : batch;
    skip = 0;
  }
}

/**
 * The steps of a stream served from verified batches. `bytes` of progress events are the entry's bytes
 * in proportion to the rows served (the entry is read whole before the first row).
 */
export function* serveBatches(
  batches: readonly RecordBatch[],
  ctx: LocalReadContext,
  entryBytes: number,
): Generator<LocalStep> {
  const { options, schema, plan } = ctx;
  for (const b of batches) checkSchema(b.schema, schema);
  const total = batches.reduce((n, b) => n + b.numRows, 0);
  const toRows = options.output === 'rows' ? rowMaker(plan, options.dates) : undefined;
  let end = options.startRow;
  let pages = 0;
  // Without a `batchSize` a batch is a page, and the pages' sizes are learned as a stream goes: the
  // filling stream's batches are the ones to give. With one, the page engine's exact boundaries.
  const rows = fromRow(batches, options.startRow);
  for (const piece of options.batchSizeAuto ? rows : rebatch(rows, options.batchSize)) {
    const batch = new RecordBatch(schema, piece.data);
    end += batch.numRows;
    pages++;
    const mark = {
      end,
      pages,
      bytes: total > 0 ? Math.round((entryBytes * (end - 1)) / total) : entryBytes,
      source: 'cache' as const,
    };
    if (!toRows) {
      yield { chunks: [batch], marks: [mark] };
      continue;
    }
    for (let from = 0; from < batch.numRows; from += ROW_SLICE) {
      const to = Math.min(batch.numRows, from + ROW_SLICE);
      yield { chunks: toRows(batch, from, to), marks: to === batch.numRows ? [mark] : undefined };
    }
  }
  // An empty result still carries its schema, as from the service.
  if (pages === 0 && !toRows) {
    yield { chunks: [new RecordBatchBuilder(plan, { onInvalid: options.onInvalid }).flush()] };
  }
}

/** Row objects of rows `[from, to)` of a batch, exactly as the page engine makes them. */
export function rowMaker(
  plan: readonly ColumnPlan[],
  dates: 'date' | 'string' = 'date',
): (batch: RecordBatch, from: number, to: number) => Record<string, unknown>[] {
  const factory = makeColumnRowFactory(plan, dates);
  const dictionaries = new WeakMap<object, string[]>();
  let columnsOf: { batch: RecordBatch; page: DecodedColumns } | undefined;
  return (batch, from, to) => {
    if (columnsOf?.batch !== batch) {
      const columns = batch.data.children.map((d) => decodedColumn(d, dictionaries));
      columnsOf = { batch, page: { length: batch.numRows, columns } };
    }
    const out: Record<string, unknown>[] = [];
    factory(columnsOf.page, from, to, out);
    return out;
  };
}

/** 1 where row `i` has a value. */
function validity(data: Data): Uint8Array {
  const valid = new Uint8Array(data.length).fill(1);
  const bitmap = data.nullBitmap;
  if (data.nullCount === 0 || !bitmap || bitmap.length === 0) return valid;
  for (let i = 0; i < data.length; i++) {
    const bit = data.offset + i;
    if ((bitmap[bit >> 3]! & (1 << (bit & 7))) === 0) valid[i] = 0;
  }
  return valid;
}

/**
 * An Arrow column seen as the decoders' columns. Fixed-width values of a sliced Data already start at its
 * first row; bit-packed values and validity do not (they start at `offset`).
 */
function decodedColumn(data: Data, dictionaries: WeakMap<object, string[]>): DecodedColumn {
  const type = data.type as DataType;
  const valid = validity(data);
  if (DataType.isFloat(type)) return { kind: 'number', values: data.values as Float64Array, valid };
  if (DataType.isDate(type)) return { kind: 'date', values: data.values as Int32Array, valid };
  if (DataType.isTimestamp(type)) {
    const words = data.values as unknown as BigInt64Array;
    const halves = new Int32Array(words.buffer, words.byteOffset, data.length * 2);
    const values = new Float64Array(data.length);
    for (let i = 0; i < data.length; i++)
      values[i] = halves[2 * i + 1]! * 4294967296 + (halves[2 * i]! >>> 0);
    return { kind: 'datetime', values, valid };
  }
  if (DataType.isBool(type)) {
    const bits = data.values as Uint8Array;
    const values = new Uint8Array(data.length);
    for (let i = 0; i < data.length; i++) {
      const bit = data.offset + i;
      values[i] = valid[i] === 0 ? 2 : (bits[bit >> 3]! >> (bit & 7)) & 1;
    }
    return { kind: 'boolean', values };
  }
  if (DataType.isUtf8(type)) {
    return {
      kind: 'utf8',
      offsets: data.valueOffsets as Int32Array,
      bytes: data.values as Uint8Array,
      valid,
    };
  }
  if (DataType.isDictionary(type)) {
    const dictionary = data.dictionary as Vector;
    let entries = dictionaries.get(dictionary);
    if (!entries) {
      entries = Array.from(dictionary as Iterable<string>);
      dictionaries.set(dictionary, entries);
    }
    const indices = data.values as Int32Array;
    const ids = new Int32Array(data.length);
    for (let i = 0; i < data.length; i++) ids[i] = valid[i] === 1 ? indices[i]! : -1;
    return { kind: 'dictionary', ids, entries };
  }
  throw new EntryProblem('corrupt', `unexpected column type ${String(type)}`);
}
