/**
 * Arrow types for column kinds, and the schema of a column plan.
 *
 * - `number` → `Float64`, exact for integers within ±2^53; a larger integer is an error, never
 *   rounded. With `bigNumbers: 'bigint'` → `Int64`, with `'string'` → `Utf8` (each number's exact text).
 * - `date` → `DateDay`; `datetime` → `Timestamp(ms, 'UTC')`: the wire values are UTC and carry no zone.
 * - `string` → `Utf8`, or `Dictionary<Utf8, Int32>` for `format: 'ticker'` columns: a few hundred distinct
 *   tickers repeat over hundreds of thousands of rows. The builder keeps one dictionary that only grows,
 *   so the IPC stream writer emits delta dictionaries and the file writer never needs a replacement
 *   dictionary (which the IPC file format forbids); both round trips are covered by tests.
 * - `boolean` → `Bool`. Every column is nullable: the wire may send null anywhere.
 */

import {
  Bool,
  type DataType,
  DateDay,
  Dictionary,
  Field,
  Float64,
  Int32,
  Int64,
  Schema,
  TimestampMillisecond,
  Utf8,
} from 'apache-arrow';
import type { FieldDescriptor } from '../core/wire.js';
import type { ColumnKind } from './column-kind.js';
import type { BigNumbers } from './values.js';

/** Whether a column is dictionary-encoded: strings whose descriptor says `format: 'ticker'`. */
export function usesDictionary(kind: ColumnKind, descriptor: FieldDescriptor): boolean {
  return kind === 'string' && descriptor.format === 'ticker';
}

/**
 * `dictionaryId` defaults to apache-arrow's process-wide counter; plans pass the column index, so the same
 * query written twice in one process gives byte-identical IPC (a counter would number them differently).
 */
export function arrowType(
  kind: ColumnKind,
  dictionary: boolean,
  dictionaryId?: number,
  bigNumbers: BigNumbers = 'error',
): DataType {
  switch (kind) {
    case 'number':
      // Exact numbers on request: Int64 (every value an integer), or each number's decimal text.
      return bigNumbers === 'bigint' ? new Int64() : bigNumbers === 'string' ? new Utf8() : new Float64();
    case 'date':
      return new DateDay();
    case 'datetime':
      return new TimestampMillisecond('UTC');
    case 'boolean':
      return new Bool();
    case 'string':
      // Each Dictionary type gets its own id; one plan = one id per column, shared by all its batches.
      return dictionary ? new Dictionary(new Utf8(), new Int32(), dictionaryId ?? null) : new Utf8();
  }
}

/** The Arrow field of one column: name = descriptor `id`, descriptor facts kept as field metadata. */
export function arrowField(
  descriptor: FieldDescriptor,
  kind: ColumnKind,
  index?: number,
  bigNumbers: BigNumbers = 'error',
): Field {
  const metadata = new Map<string, string>();
  if (typeof descriptor.display_name === 'string') metadata.set('display_name', descriptor.display_name);
  if (typeof descriptor.summary === 'string') metadata.set('summary', descriptor.summary);
  if (descriptor.format !== null && descriptor.format !== undefined)
    metadata.set('format', String(descriptor.format));
  metadata.set('dqs_type', String(descriptor.type));
  const type = arrowType(kind, usesDictionary(kind, descriptor), index, bigNumbers);
  return new Field(descriptor.id, type, true, metadata);
}

/**
 * The schema of the batches a plan produces (the plan's fields, in order). Typed by what it reads, not as
 * `ColumnPlan[]`: plan.ts makes its fields with `arrowField`, so this module must not import it back.
 */
export function buildSchema(plan: readonly { readonly field: Field }[]): Schema {
  return new Schema(plan.map((c) => c.field));
}
