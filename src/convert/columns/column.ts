/**
 * What every column kind shares: the accumulator interface the batch builder drives, and the bookkeeping
 * (length, null count, validity bits, mark/rollback) of the per-kind classes in this folder. Apache-arrow's
 * `makeBuilder` measured 4-9x slower on this workload, so we own the buffers:
 *
 * - Each kind appends a whole column of a page in one tight, monomorphic loop (`appendColumn`), rather
 *   than the builder dispatching per value over the kinds. Keep those loops in the kinds' own files.
 * - Buffers grow by the one rule of `../grow.ts` and are kept across flushes; a flush copies out exactly
 *   the used part (over-allocated buffers must not leak into batches) and zeroes the bits the next batch
 *   ORs into.
 * - `mark()`/`rollback()` make a page append all-or-nothing: a bad value in column 9 undoes columns 0-8.
 * - Values under nulls are written as zeros so batches (and their IPC bytes) are deterministic.
 */

import type { Data, DataType } from 'apache-arrow';
import { DecodeError } from '../../core/errors.js';
import type { WireValue } from '../../core/wire.js';
import type { DecodedColumn } from '../column-data.js';
import { grow, type TypedArray } from '../grow.js';

export type WireRows = readonly (readonly WireValue[])[];

export interface ColumnAccumulator {
  readonly length: number;
  /**
   * Appends `rows[i][col]` for every row. Invalid values become nulls when `invalidToNull`; otherwise
   * the index (in `rows`) of the first invalid value is returned and the caller must `rollback()`.
   * Returns -1 when every value was appended.
   */
  appendColumn(rows: WireRows, col: number, invalidToNull: boolean): number;
  /**
   * Appends rows `[from, to)` of a column decoded from bytes (see column-data.ts). Its values were
   * checked when decoded, so this cannot fail; the column must be of this accumulator's kind.
   */
  appendDecoded(column: DecodedColumn, from: number, to: number): void;
  /**
   * All `length` rows of a decoded column as this batch's Arrow data, taking the column's buffers over
   * where they already have Arrow's layout instead of copying them (the caller must not reuse the
   * column afterwards). Only on an empty accumulator; equivalent to `appendDecoded` + `flush`.
   */
  adoptDecoded(column: DecodedColumn, length: number): Data;
  /** Remembers the current state, so `rollback()` can undo a partial append. */
  mark(): void;
  rollback(): void;
  /** Everything appended since the last flush, as Arrow data; then starts over (keeping capacity). */
  flush(): Data;
}

/**
 * Elements every column buffer starts with. Buffers of this size or more grow by `grow()`'s doubling
 * alone; the bit buffers, which start 8 times smaller, pass it as their minimum.
 */
export const INITIAL_CAPACITY = 1024;

/**
 * A decoded buffer cut to `length` elements for a batch: as a view when little of it would go unused
 * (a batch pins its whole ArrayBuffer), else as a trimmed copy.
 */
export function adopted<T extends TypedArray>(array: T, length: number): T {
  if (array.length === length) return array;
  return array.length - length <= length >> 3
    ? (array.subarray(0, length) as T)
    : (array.slice(0, length) as T);
}

/** A validity bitmap from one flag byte per row (1 = valid), or none when every row is valid. */
export function bitmapOf(
  flags: Uint8Array,
  length: number,
): { nullCount: number; nullBitmap: Uint8Array | undefined } {
  const bitmap = new Uint8Array((length + 7) >> 3);
  let valid = 0;
  for (let i = 0; i < length; i++) {
    if (flags[i] === 1) {
      bitmap[i >> 3]! |= 1 << (i & 7);
      valid++;
    }
  }
  const nullCount = length - valid;
  return { nullCount, nullBitmap: nullCount > 0 ? bitmap : undefined };
}

/** The error for a decoded column handed to an accumulator of another kind (a bug of the caller). */
export function wrongKind(got: DecodedColumn, expected: string): TypeError {
  return new TypeError(`a ${got.kind} column in a ${expected} column`);
}

/** A bit per row (validity, or Bool values). Bits past the used length are kept zero. */
export class Bits {
  bytes = new Uint8Array(INITIAL_CAPACITY >> 3);

  reserve(bits: number): void {
    const need = (bits + 7) >> 3;
    if (need > this.bytes.length) this.bytes = grow(this.bytes, need, this.bytes.length, INITIAL_CAPACITY);
  }

  /** Clears bits [from, to). */
  clear(from: number, to: number): void {
    const b = this.bytes;
    for (let i = from; i < to; i++) b[i >> 3]! &= ~(1 << (i & 7));
  }

  /** A trimmed copy of the first `bits` bits; the working bytes are zeroed for the next batch. */
  take(bits: number): Uint8Array {
    const n = (bits + 7) >> 3;
    const out = this.bytes.slice(0, n);
    this.bytes.fill(0, 0, n);
    return out;
  }
}

/** Shared bookkeeping: length, null count, validity, mark/rollback. */
export abstract class Column implements ColumnAccumulator {
  protected len = 0;
  protected nulls = 0;
  protected readonly validity = new Bits();
  protected markLen = 0;
  #markNulls = 0;

  constructor(protected readonly type: DataType) {}

  get length(): number {
    return this.len;
  }

  abstract appendColumn(rows: WireRows, col: number, invalidToNull: boolean): number;
  abstract appendDecoded(column: DecodedColumn, from: number, to: number): void;
  abstract flush(): Data;

  /** Columns whose decoded form is not Arrow's layout (booleans, timestamps, dictionaries) convert. */
  adoptDecoded(column: DecodedColumn, length: number): Data {
    this.checkAdoptable();
    this.appendDecoded(column, 0, length);
    return this.flush();
  }

  protected checkAdoptable(): void {
    if (this.len !== 0) throw new DecodeError('Decoded columns can only be adopted by an empty builder');
  }

  /** Copies validity flags (one byte per row, 1 = valid) of rows `[from, to)` into the bitmap. */
  protected appendValidity(flags: Uint8Array, from: number, to: number): void {
    const end = this.len + (to - from);
    this.validity.reserve(end);
    const valid = this.validity.bytes;
    let len = this.len;
    let nulls = 0;
    for (let i = from; i < to; i++, len++) {
      if (flags[i] === 1) valid[len >> 3]! |= 1 << (len & 7);
      else nulls++;
    }
    this.nulls += nulls;
  }

  mark(): void {
    this.markLen = this.len;
    this.#markNulls = this.nulls;
  }

  rollback(): void {
    this.validity.clear(this.markLen, this.len);
    this.len = this.markLen;
    this.nulls = this.#markNulls;
  }

  /** Records where a loop stopped on an invalid value; returns the row index for `appendColumn`. */
  protected stop(len: number, nulls: number, i: number): number {
    this.len = len;
    this.nulls += nulls;
    return i;
  }

  /** The validity bitmap only when there are nulls (Arrow reads a missing bitmap as all valid). */
  protected takeValidity(): { nullCount: number; nullBitmap: Uint8Array | undefined } {
    const nullCount = this.nulls;
    const bitmap = this.validity.take(this.len);
    return { nullCount, nullBitmap: nullCount > 0 ? bitmap : undefined };
  }

  protected reset(): void {
    this.len = 0;
    this.nulls = 0;
    this.mark();
  }
}
