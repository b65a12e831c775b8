/**
 * What the two byte decoders (table JSON, CSV) share about the columns of the page they fill: each
 * column's kind as a small integer for their hot `switch`es, how buffers grow and how much string room to
 * reserve, and how a page's buffers become `DecodedColumn`s.
 */

import type { DecodedColumn } from '../convert/column-data.js';
import { grow } from '../convert/grow.js';
import type { ColumnPlan } from '../convert/plan.js';
import { usesDictionary } from '../convert/schema.js';

export const NUMBER = 0;
export const DATE = 1;
export const DATETIME = 2;
export const BOOLEAN = 3;
export const UTF8 = 4;
export const DICT = 5;

/** The kind code of a planned column (ticker-format strings are dictionary columns). */
export function kindCode(column: ColumnPlan): number {
  switch (column.kind) {
    case 'number':
      return NUMBER;
    case 'date':
      return DATE;
    case 'datetime':
      return DATETIME;
    case 'boolean':
      return BOOLEAN;
    case 'string':
      return usesDictionary(column.kind, column.descriptor) ? DICT : UTF8;
  }
}

/**
 * String bytes reserved per page, over the last page's bytes per row: pages of one result are alike, and
 * a page that becomes a batch as it is keeps this slack (more than 1/8 unused and the batch copies).
 */
export const STRING_HEADROOM = 1.0625;

/**
 * The first size of a string column's byte buffer for a page of `rows` rows: the last page's bytes per
 * row with headroom, but never more than the body (a column's bytes never exceed it; one huge page must
 * not make every later page ask for gigabytes).
 */
export function stringBytesGuess(bytesPerRow: number, rows: number, bodyLength: number): number {
  return Math.max(1024, Math.min(bodyLength, Math.ceil(bytesPerRow * rows * STRING_HEADROOM)));
}

/**
 * A string column's byte buffer, left as the allocator hands it over (not zeroed): zeroing a page's
 * ~5 MB of string bytes in one go (calloc touching fresh memory, a page fault per 4 kB, ~10 us each on our
 * 2-core VM) took 4-9 ms at the start of every page's decode, one of the stalls over 15 ms of a 500k-row
 * `toTable()`. Unzeroed, the memory is first touched by the decode's own writes, spread over its slices.
 * The decoder writes every byte below a column's end and must `zeroTail()` the rest once the page is
 * decoded: the batch keeps the whole ArrayBuffer, and stale process memory (a freed request's bytes)
 * must never be reachable through it.
 */
export function unzeroedBytes(size: number): Uint8Array {
  const bytes = Buffer.allocUnsafeSlow(size);
  // A plain Uint8Array over the Buffer's own ArrayBuffer (allocUnsafeSlow never hands out a pooled slab):
  // the batch's values must not be a Buffer, whose methods and `toJSON` differ.
  return new Uint8Array(bytes.buffer, bytes.byteOffset, size);
}

/** Zeroes `bytes` from `end` on: what `unzeroedBytes()` asks of its user once the bytes below are written. */
export function zeroTail(bytes: Uint8Array, end: number): void {
  if (end < bytes.length) bytes.fill(0, end);
}

/**
 * Rows to size a page's column buffers for: the rows asked for (the plan's own number, never the
 * server's), but no more than its body can hold at `minRowBytes` a row, so a `limit` far above what came
 * costs nothing. Sized so, a page of 27,000 rows fills buffers of 27,000 and its batch adopts them as
 * they are: from a fixed first guess (16,384 rows) they doubled once and were copied again to trim.
 */
export function pageRowCapacity(limit: number, bodyLength: number, minRowBytes: number): number {
  return Math.max(16, Math.min(limit, Math.floor(bodyLength / minRowBytes) + 1));
}

/** `a`, or a copy of its first `used` elements in a longer array when it is shorter than `need`. */
export function ensure<T extends Uint8Array | Int32Array | Float64Array>(
  a: T,
  need: number,
  used: number,
): T {
  return a.length >= need ? a : grow(a, need, used);
}

export { grow } from '../convert/grow.js';

/**
 * A string column's bytes, grown by a quarter rather than doubled: a page's estimate is usually close, and
 * doubling would leave the batch that adopts the page half empty (so it would be copied to trim it).
 */
export function growText(a: Uint8Array, need: number, used: number): Uint8Array {
  const next = new Uint8Array(Math.max(need, Math.ceil(a.length * 1.25)));
  next.set(a.subarray(0, used));
  return next;
}

export const EMPTY_F64 = new Float64Array(0);
export const EMPTY_I32 = new Int32Array(0);
export const EMPTY_U8 = new Uint8Array(0);

/**
 * A column of a decoded page from the buffers of its kind: `f64` (numbers, timestamps), `i32` (days,
 * string offsets, dictionary ids), `u8` (booleans, string bytes), `valid`; `entries` for a dictionary.
 */
export function decodedColumn(
  kind: number,
  f64: Float64Array,
  i32: Int32Array,
  u8: Uint8Array,
  valid: Uint8Array,
  entries: () => string[],
): DecodedColumn {
  switch (kind) {
    case NUMBER:
      return { kind: 'number', values: f64, valid };
    case DATE:
      return { kind: 'date', values: i32, valid };
    case DATETIME:
      return { kind: 'datetime', values: f64, valid };
    case BOOLEAN:
      return { kind: 'boolean', values: u8 };
    case UTF8:
      return { kind: 'utf8', offsets: i32, bytes: u8, valid };
    default:
      return { kind: 'dictionary', ids: i32, entries: entries() };
  }
}
