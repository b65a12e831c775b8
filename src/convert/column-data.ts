/**
 * Columns already decoded from the wire (by the table-JSON byte decoder), ready to be appended to the
 * Arrow accumulators without any JS value per cell. One `DecodedColumn` per planned column, `length`
 * rows each. Buffers may be longer than used: only `[0, length)` (and the used bytes) are read.
 *
 * Every value in here has already passed the same checks as the wire-row path (values.ts): a decoder
 * that meets a value those checks would reject does not produce decoded columns at all, so appending
 * them never fails.
 */

/** `number`: Float64 values; `valid[i]` is 1 for a value, 0 for null (the value is then 0). */
export interface DecodedNumbers {
  readonly kind: 'number';
  readonly values: Float64Array;
  readonly valid: Uint8Array;
}

/** `date`: days since the epoch. */
export interface DecodedDates {
  readonly kind: 'date';
  readonly values: Int32Array;
  readonly valid: Uint8Array;
}

/** `datetime`: ms since the epoch, UTC (integers well inside ±2^53). */
export interface DecodedTimestamps {
  readonly kind: 'datetime';
  readonly values: Float64Array;
  readonly valid: Uint8Array;
}

/** `boolean`: 0 false, 1 true, 2 null. */
export interface DecodedBooleans {
  readonly kind: 'boolean';
  readonly values: Uint8Array;
}

/** Plain strings: UTF-8 bytes, entry `i` is `bytes[offsets[i], offsets[i + 1])`. */
export interface DecodedStrings {
  readonly kind: 'utf8';
  readonly offsets: Int32Array;
  readonly bytes: Uint8Array;
  readonly valid: Uint8Array;
}

/**
 * Dictionary strings: `ids[i]` indexes `entries` (the page's own distinct values in first-seen order),
 * -1 for null. The accumulator maps them onto its growing dictionary in row order.
 */
export interface DecodedDictionary {
  readonly kind: 'dictionary';
  readonly ids: Int32Array;
  readonly entries: readonly string[];
}

export type DecodedColumn =
  | DecodedNumbers
  | DecodedDates
  | DecodedTimestamps
  | DecodedBooleans
  | DecodedStrings
  | DecodedDictionary;

/** A page of rows as columns, in plan order. */
export interface DecodedColumns {
  readonly length: number;
  readonly columns: readonly DecodedColumn[];
}
