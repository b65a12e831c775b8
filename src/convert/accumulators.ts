/**
 * Per-column accumulators: typed arrays filled by hand, handed to `makeData` at flush. Apache-arrow's
 * `makeBuilder` was measured 4-9x slower on this workload (PERF-NOTES), so we own the buffers:
 *
 * - Each accumulator appends a whole column of a page in one tight, monomorphic loop (`appendColumn`),
 *   rather than the builder dispatching per value over six accumulator classes.
 * - Buffers grow by doubling and are kept across flushes; a flush copies out exactly the used part
 *   (over-allocated buffers must not leak into batches) and zeroes the bits the next batch ORs into.
 * - `mark()`/`rollback()` make a page append all-or-nothing: a bad value in column 9 undoes columns 0-8.
 * - Values under nulls are written as zeros so batches (and their IPC bytes) are deterministic.
 */

import {
  type Bool,
  type Data,
  DataType,
  type DateDay,
  type Dictionary,
  type Float64,
  makeData,
  type TimestampMillisecond,
  Utf8,
  Vector,
} from 'apache-arrow';
import { DecodeError } from '../core/errors.js';
import type { WireValue } from '../core/wire.js';
import type { DecodedColumn } from './column-data.js';
import { grow as growArray, grownCapacity, type TypedArray } from './grow.js';
import type { ColumnPlan } from './plan.js';
import { toBooleanBit, toDateDays, toNumber, toText, toTimestampMs } from './values.js';

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

/** The accumulator for a planned column (its Arrow type decides the layout). */
export function accumulatorFor(column: ColumnPlan): ColumnAccumulator {
  const type = column.field.type as DataType;
  switch (column.kind) {
    case 'number':
      return new Float64Column(type);
    case 'date':
      return new DateDayColumn(type);
    case 'datetime':
      return new TimestampColumn(type);
    case 'boolean':
      return new BoolColumn(type);
    case 'string':
      return DataType.isDictionary(type) ? new DictionaryColumn(type) : new Utf8Column(type);
  }
}

const INITIAL_CAPACITY = 1024;
/**
 * Strings are joined and encoded this many at a time: enough to amortise the per-call cost of
 * `Buffer#write`, few enough that the joined temporary stays small and dies young (a page-sized join is
 * a large-object allocation, and those made the GC dominate).
 */
const UTF8_BLOCK_ROWS = 256;
/** Utf8 value offsets are Int32: one batch's string bytes must stay below 2 GiB. */
const MAX_UTF8_BYTES = 0x7fff_ffff;
/** Word order of an Int64 seen as two Int32s. Node runs little-endian everywhere today; be exact anyway. */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const LO = LITTLE_ENDIAN ? 0 : 1;
const HI = LITTLE_ENDIAN ? 1 : 0;
const TWO_POW_32 = 4_294_967_296;

/** Grown by the shared rule, from at least `INITIAL_CAPACITY` elements. */
function grow<T extends TypedArray>(array: T, needed: number): T {
  return growArray(array, needed, array.length, INITIAL_CAPACITY);
}

/**
 * A decoded buffer cut to `length` elements for a batch: as a view when little of it would go unused
 * (a batch pins its whole ArrayBuffer), else as a trimmed copy.
 */
function adopted<T extends TypedArray>(array: T, length: number): T {
  if (array.length === length) return array;
  return array.length - length <= length >> 3
    ? (array.subarray(0, length) as T)
    : (array.slice(0, length) as T);
}

/** A validity bitmap from one flag byte per row (1 = valid), or none when every row is valid. */
function bitmapOf(
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

/** A bit per row (validity, or Bool values). Bits past the used length are kept zero. */
class Bits {
  bytes = new Uint8Array(INITIAL_CAPACITY >> 3);

  reserve(bits: number): void {
    const need = (bits + 7) >> 3;
    if (need > this.bytes.length) this.bytes = grow(this.bytes, need);
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
abstract class Column implements ColumnAccumulator {
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

/**
 * Columns whose decoded form is already their Arrow buffer (Float64, DateDay): appending decoded rows is
 * one typed-array copy, and flushing hands the trimmed buffer to Arrow. Each subclass keeps its own
 * `appendColumn` loop, monomorphic on the hot path.
 */
abstract class FixedWidthColumn<A extends Float64Array | Int32Array> extends Column {
  protected abstract readonly kind: 'number' | 'date';
  protected abstract values: A;

  appendDecoded(column: DecodedColumn, from: number, to: number): void {
    if (column.kind !== this.kind) throw new TypeError(`a ${column.kind} column in a ${this.kind} column`);
    const end = this.len + (to - from);
    if (end > this.values.length) this.values = grow(this.values, end);
    this.values.set(column.values.subarray(from, to) as A, this.len);
    this.appendValidity(column.valid, from, to);
    this.len = end;
  }

  /** The decoded values are already Arrow's (Float64 / Int32 days, zeros under nulls): taken over. */
  override adoptDecoded(column: DecodedColumn, length: number): Data {
    if (column.kind !== this.kind) throw new TypeError(`a ${column.kind} column in a ${this.kind} column`);
    this.checkAdoptable();
    return makeData({
      type: this.type as Float64 | DateDay,
      length,
      ...bitmapOf(column.valid, length),
      data: adopted(column.values, length),
    } as Parameters<typeof makeData>[0]);
  }

  flush(): Data {
    const { nullCount, nullBitmap } = this.takeValidity();
    const data = makeData({
      type: this.type as Float64 | DateDay,
      length: this.len,
      nullCount,
      nullBitmap,
      data: this.values.slice(0, this.len),
    } as Parameters<typeof makeData>[0]);
    this.reset();
    return data;
  }
}

class Float64Column extends FixedWidthColumn<Float64Array> {
  protected readonly kind = 'number';
  protected values = new Float64Array(INITIAL_CAPACITY);

  appendColumn(rows: WireRows, col: number, invalidToNull: boolean): number {
    const n = rows.length;
    const end = this.len + n;
    if (end > this.values.length) this.values = grow(this.values, end);
    this.validity.reserve(end);
    const values = this.values;
    const valid = this.validity.bytes;
    let len = this.len;
    let nulls = 0;
    for (let i = 0; i < n; i++, len++) {
      const v = rows[i]![col];
      if (typeof v === 'number') {
        values[len] = v;
        valid[len >> 3]! |= 1 << (len & 7);
      } else if (v === null || v === undefined) {
        values[len] = 0;
        nulls++;
      } else {
        const x = toNumber(v);
        if (!Number.isNaN(x)) {
          values[len] = x;
          valid[len >> 3]! |= 1 << (len & 7);
        } else if (invalidToNull) {
          values[len] = 0;
          nulls++;
        } else return this.stop(len, nulls, i);
      }
    }
    this.len = len;
    this.nulls += nulls;
    return -1;
  }
}

/** DateDay: Int32 days since the epoch. */
class DateDayColumn extends FixedWidthColumn<Int32Array> {
  protected readonly kind = 'date';
  protected values = new Int32Array(INITIAL_CAPACITY);

  appendColumn(rows: WireRows, col: number, invalidToNull: boolean): number {
    const n = rows.length;
    const end = this.len + n;
    if (end > this.values.length) this.values = grow(this.values, end);
    this.validity.reserve(end);
    const values = this.values;
    const valid = this.validity.bytes;
    let len = this.len;
    let nulls = 0;
    for (let i = 0; i < n; i++, len++) {
      const v = rows[i]![col];
      if (v === null || v === undefined) {
        values[len] = 0;
        nulls++;
        continue;
      }
      const days = toDateDays(v);
      if (!Number.isNaN(days)) {
        values[len] = days;
        valid[len >> 3]! |= 1 << (len & 7);
      } else if (invalidToNull) {
        values[len] = 0;
        nulls++;
      } else return this.stop(len, nulls, i);
    }
    this.len = len;
    this.nulls += nulls;
    return -1;
  }
}

/**
 * Timestamp(ms): Arrow 21 stores Int64 as BigInt64Array. We write the two 32-bit halves through an
 * Int32Array view instead of creating a BigInt per value (measured: the BigInt path dominates otherwise).
 */
class TimestampColumn extends Column {
  #values = new BigInt64Array(INITIAL_CAPACITY);
  #words = new Int32Array(this.#values.buffer);

  appendColumn(rows: WireRows, col: number, invalidToNull: boolean): number {
    const n = rows.length;
    const end = this.len + n;
    if (end > this.#values.length) {
      this.#values = grow(this.#values, end);
      this.#words = new Int32Array(this.#values.buffer);
    }
    this.validity.reserve(end);
    const words = this.#words;
    const valid = this.validity.bytes;
    let len = this.len;
    let nulls = 0;
    for (let i = 0; i < n; i++, len++) {
      const v = rows[i]![col];
      let ms: number;
      if (v === null || v === undefined) {
        ms = 0;
        nulls++;
      } else {
        ms = toTimestampMs(v);
        if (!Number.isNaN(ms)) valid[len >> 3]! |= 1 << (len & 7);
        else if (invalidToNull) {
          ms = 0;
          nulls++;
        } else return this.stop(len, nulls, i);
      }
      // ms is an integer well inside ±2^53: split into a signed high word and an unsigned low word.
      const hi = Math.floor(ms / TWO_POW_32);
      words[2 * len + LO] = (ms - hi * TWO_POW_32) | 0;
      words[2 * len + HI] = hi;
    }
    this.len = len;
    this.nulls += nulls;
    return -1;
  }

  appendDecoded(column: DecodedColumn, from: number, to: number): void {
    if (column.kind !== 'datetime') throw new TypeError(`a ${column.kind} column in a datetime column`);
    const end = this.len + (to - from);
    if (end > this.#values.length) {
      this.#values = grow(this.#values, end);
      this.#words = new Int32Array(this.#values.buffer);
    }
    const words = this.#words;
    const values = column.values;
    let len = this.len;
    for (let i = from; i < to; i++, len++) {
      const ms = values[i]!;
      const hi = Math.floor(ms / TWO_POW_32);
      words[2 * len + LO] = (ms - hi * TWO_POW_32) | 0;
      words[2 * len + HI] = hi;
    }
    this.appendValidity(column.valid, from, to);
    this.len = end;
  }

  flush(): Data {
    const { nullCount, nullBitmap } = this.takeValidity();
    const data = makeData({
      type: this.type as TimestampMillisecond,
      length: this.len,
      nullCount,
      nullBitmap,
      data: this.#values.slice(0, this.len),
    });
    this.reset();
    return data;
  }
}

/** Bool: values are bits too, OR-ed in, so a rollback must clear them. */
class BoolColumn extends Column {
  readonly #values = new Bits();

  appendColumn(rows: WireRows, col: number, invalidToNull: boolean): number {
    const n = rows.length;
    const end = this.len + n;
    this.#values.reserve(end);
    this.validity.reserve(end);
    const values = this.#values.bytes;
    const valid = this.validity.bytes;
    let len = this.len;
    let nulls = 0;
    for (let i = 0; i < n; i++, len++) {
      const v = rows[i]![col];
      if (v === null || v === undefined) {
        nulls++;
        continue;
      }
      const bit = toBooleanBit(v);
      if (bit >= 0) {
        valid[len >> 3]! |= 1 << (len & 7);
        if (bit === 1) values[len >> 3]! |= 1 << (len & 7);
      } else if (invalidToNull) nulls++;
      else return this.stop(len, nulls, i);
    }
    this.len = len;
    this.nulls += nulls;
    return -1;
  }

  override rollback(): void {
    this.#values.clear(this.markLen, this.len);
    super.rollback();
  }

  appendDecoded(column: DecodedColumn, from: number, to: number): void {
    if (column.kind !== 'boolean') throw new TypeError(`a ${column.kind} column in a boolean column`);
    const end = this.len + (to - from);
    this.#values.reserve(end);
    this.validity.reserve(end);
    const values = this.#values.bytes;
    const valid = this.validity.bytes;
    const source = column.values;
    let len = this.len;
    let nulls = 0;
    for (let i = from; i < to; i++, len++) {
      const v = source[i]!;
      if (v === 2) nulls++;
      else {
        valid[len >> 3]! |= 1 << (len & 7);
        if (v === 1) values[len >> 3]! |= 1 << (len & 7);
      }
    }
    this.len = len;
    this.nulls += nulls;
  }

  flush(): Data {
    const { nullCount, nullBitmap } = this.takeValidity();
    const data = makeData({
      type: this.type as Bool,
      length: this.len,
      nullCount,
      nullBitmap,
      data: this.#values.take(this.len),
    });
    this.reset();
    return data;
  }
}

/**
 * Utf8 bytes and Int32 offsets, written with `Buffer#write` (UTF-8, returns the byte count without
 * allocating a result object). Room for the worst case (3 bytes per UTF-16 unit) is reserved before a
 * write, so a write is never cut short.
 */
class Utf8Writer {
  bytes: Buffer = Buffer.allocUnsafe(INITIAL_CAPACITY * 16);
  offsets = new Int32Array(INITIAL_CAPACITY + 1);
  /** Bytes used. */
  pos = 0;

  reserveRows(rows: number): void {
    if (rows + 1 > this.offsets.length) this.offsets = grow(this.offsets, rows + 1);
  }

  reserveBytes(extra: number): void {
    const need = this.pos + extra;
    if (need <= this.bytes.length) return;
    if (need > MAX_UTF8_BYTES) {
      throw new DecodeError('A string column holds more than 2 GiB in one batch; flush batches more often');
    }
    const next = Buffer.allocUnsafe(
      Math.min(grownCapacity(this.bytes.length, need, INITIAL_CAPACITY), MAX_UTF8_BYTES),
    );
    this.bytes.copy(next, 0, 0, this.pos);
    this.bytes = next;
  }

  /** Appends `s` as entry `index` (offsets[index + 1] marks its end). */
  write(index: number, s: string): void {
    if (this.pos + s.length * 3 > this.bytes.length) this.reserveBytes(s.length * 3);
    this.pos += this.bytes.write(s, this.pos);
    this.offsets[index + 1] = this.pos;
  }

  /**
   * Turns offsets of entries [from, to), written as `base + UTF-16 units`, into byte offsets by walking
   * the UTF-8 just written from `base`. False when an entry boundary falls inside a 4-byte sequence (a
   * surrogate pair split over two entries, which joined encode differently than apart).
   */
  unitsToBytes(from: number, to: number, base: number): boolean {
    const bytes = this.bytes;
    const offsets = this.offsets;
    let b = base;
    let units = 0;
    for (let r = from; r < to; r++) {
      const target = offsets[r + 1]! - base;
      while (units < target) {
        const c = bytes[b]!;
        if (c < 0x80) b += 1;
        else if (c < 0xe0) b += 2;
        else if (c < 0xf0) b += 3;
        else {
          b += 4;
          units++;
        }
        units++;
      }
      if (units !== target) return false;
      offsets[r + 1] = b;
    }
    return true;
  }

  /** Trimmed copies of the first `count` entries' offsets and bytes; then empty. */
  take(count: number): { valueOffsets: Int32Array; data: Uint8Array } {
    const valueOffsets = this.offsets.slice(0, count + 1);
    const data = new Uint8Array(this.pos);
    data.set(this.bytes.subarray(0, this.pos));
    this.pos = 0;
    return { valueOffsets, data };
  }
}

/**
 * Plain Utf8 column. Blocks of strings are joined and encoded with one `Buffer#write`, offsets first
 * counted in UTF-16 units: for ASCII (the common case: ids, URLs, codes) units are bytes and we are done;
 * otherwise one pass over the new bytes maps units to bytes. One write per string costs more: its
 * per-call overhead dominates short strings.
 */
class Utf8Column extends Column {
  readonly #text = new Utf8Writer();
  #markPos = 0;

  appendColumn(rows: WireRows, col: number, invalidToNull: boolean): number {
    const n = rows.length;
    const text = this.#text;
    text.reserveRows(this.len + n);
    this.validity.reserve(this.len + n);
    const offsets = text.offsets;
    const valid = this.validity.bytes;
    const parts: string[] = [];
    let len = this.len;
    let nulls = 0;
    for (let blockStart = 0; blockStart < n; blockStart += UTF8_BLOCK_ROWS) {
      const blockEnd = Math.min(n, blockStart + UTF8_BLOCK_ROWS);
      const base = text.pos;
      const firstRow = len;
      let units = 0;
      parts.length = 0;
      for (let i = blockStart; i < blockEnd; i++, len++) {
        const v = rows[i]![col];
        let s: string | undefined;
        if (typeof v === 'string') s = v;
        else if (v === null || v === undefined) s = undefined;
        else {
          s = toText(v);
          if (s === undefined && !invalidToNull) return this.stop(len, nulls, i);
        }
        if (s === undefined) nulls++;
        else {
          parts.push(s);
          units += s.length;
          valid[len >> 3]! |= 1 << (len & 7);
        }
        offsets[len + 1] = base + units;
      }
      if (units === 0) continue;
      text.reserveBytes(units * 3);
      const written = text.bytes.write(parts.length === 1 ? parts[0]! : parts.join(''), base);
      text.pos = base + written;
      if (written !== units && !text.unitsToBytes(firstRow, len, base))
        this.#writeEach(parts, firstRow, len, base);
    }
    this.len = len;
    this.nulls += nulls;
    return -1;
  }

  appendDecoded(column: DecodedColumn, from: number, to: number): void {
    if (column.kind !== 'utf8') throw new TypeError(`a ${column.kind} column in a string column`);
    const text = this.#text;
    const n = to - from;
    text.reserveRows(this.len + n);
    const first = column.offsets[from]!;
    const size = column.offsets[to]! - first;
    text.reserveBytes(size);
    const base = text.pos;
    text.bytes.set(column.bytes.subarray(first, first + size), base);
    const offsets = text.offsets;
    const source = column.offsets;
    const shift = base - first;
    let len = this.len;
    for (let i = from; i < to; i++, len++) offsets[len + 1] = source[i + 1]! + shift;
    text.pos = base + size;
    this.appendValidity(column.valid, from, to);
    this.len = len;
  }

  /** The decoded offsets and bytes are already Arrow's: taken over (the bytes trimmed if mostly unused). */
  override adoptDecoded(column: DecodedColumn, length: number): Data {
    if (column.kind !== 'utf8') throw new TypeError(`a ${column.kind} column in a string column`);
    this.checkAdoptable();
    const { offsets, bytes, valid } = column;
    // The decoder starts every page at offset 0; anything else goes the copying way.
    if (offsets[0] !== 0) return super.adoptDecoded(column, length);
    return makeData({
      type: this.type as Utf8,
      length,
      ...bitmapOf(valid, length),
      valueOffsets: adopted(offsets, length + 1),
      data: adopted(bytes, offsets[length]!),
    });
  }

  /** The exact fallback: one write per string. */
  #writeEach(parts: readonly string[], first: number, end: number, base: number): void {
    const text = this.#text;
    const valid = this.validity.bytes;
    text.pos = base;
    let k = 0;
    for (let r = first; r < end; r++) {
      if ((valid[r >> 3]! & (1 << (r & 7))) !== 0) text.write(r, parts[k++]!);
      else text.offsets[r + 1] = text.pos;
    }
  }

  override mark(): void {
    super.mark();
    this.#markPos = this.#text.pos;
  }

  override rollback(): void {
    super.rollback();
    this.#text.pos = this.#markPos;
  }

  flush(): Data {
    const { nullCount, nullBitmap } = this.takeValidity();
    const { valueOffsets, data } = this.#text.take(this.len);
    const out = makeData({
      type: this.type as Utf8,
      length: this.len,
      nullCount,
      nullBitmap,
      valueOffsets,
      data,
    });
    this.reset();
    return out;
  }
}

/**
 * Dictionary<Utf8, Int32> with one dictionary that only grows over the builder's life. Each flush
 * contributes one chunk (the entries first seen since the previous flush), and every batch's dictionary
 * is the Vector of all chunks so far. The IPC writers rely on exactly that shape: the stream writer sees
 * the same first chunk and writes the new chunks as delta dictionary batches; the file writer, which
 * forbids replacement dictionaries, sees only deltas too.
 */
class DictionaryColumn extends Column {
  #indices = new Int32Array(INITIAL_CAPACITY);
  readonly #ids = new Map<string, number>();
  /** Entries added since the last flush, in index order (the next dictionary chunk). */
  readonly #entries = new Utf8Writer();
  #entryCount = 0;
  #pendingKeys: string[] = [];
  #markEntries = 0;
  #markPos = 0;
  readonly #chunks: Data<Utf8>[] = [];
  #dictionary: Vector<Utf8> | undefined;
  readonly #utf8 = new Utf8();

  constructor(type: Dictionary) {
    super(type);
  }

  appendColumn(rows: WireRows, col: number, invalidToNull: boolean): number {
    const n = rows.length;
    const end = this.len + n;
    if (end > this.#indices.length) this.#indices = grow(this.#indices, end);
    this.validity.reserve(end);
    const indices = this.#indices;
    const ids = this.#ids;
    const valid = this.validity.bytes;
    let len = this.len;
    let nulls = 0;
    for (let i = 0; i < n; i++, len++) {
      const v = rows[i]![col];
      let s: string | undefined;
      if (typeof v === 'string') s = v;
      else if (v === null || v === undefined) s = undefined;
      else {
        s = toText(v);
        if (s === undefined && !invalidToNull) return this.stop(len, nulls, i);
      }
      if (s === undefined) {
        indices[len] = 0;
        nulls++;
        continue;
      }
      let id = ids.get(s);
      if (id === undefined) {
        id = ids.size;
        ids.set(s, id);
        this.#entries.reserveRows(this.#entryCount + 1);
        this.#entries.write(this.#entryCount++, s);
        this.#pendingKeys.push(s);
      }
      indices[len] = id;
      valid[len >> 3]! |= 1 << (len & 7);
    }
    this.len = len;
    this.nulls += nulls;
    return -1;
  }

  /** Per decoded page: its entries' ids in this dictionary, -1 until first used (first-seen order). */
  #decodedIds = new WeakMap<readonly string[], Int32Array>();

  appendDecoded(column: DecodedColumn, from: number, to: number): void {
    if (column.kind !== 'dictionary') throw new TypeError(`a ${column.kind} column in a dictionary column`);
    const end = this.len + (to - from);
    if (end > this.#indices.length) this.#indices = grow(this.#indices, end);
    this.validity.reserve(end);
    const { entries, ids: local } = column;
    let map = this.#decodedIds.get(entries);
    if (map === undefined) {
      map = new Int32Array(entries.length).fill(-1);
      this.#decodedIds.set(entries, map);
    }
    const indices = this.#indices;
    const ids = this.#ids;
    const valid = this.validity.bytes;
    let len = this.len;
    let nulls = 0;
    for (let i = from; i < to; i++, len++) {
      const k = local[i]!;
      if (k < 0) {
        indices[len] = 0;
        nulls++;
        continue;
      }
      let id = map[k]!;
      if (id < 0) {
        // Entries join the dictionary in the order rows first use them, as on the wire-row path.
        const s = entries[k]!;
        const known = ids.get(s);
        if (known === undefined) {
          id = ids.size;
          ids.set(s, id);
          this.#entries.reserveRows(this.#entryCount + 1);
          this.#entries.write(this.#entryCount++, s);
          this.#pendingKeys.push(s);
        } else id = known;
        map[k] = id;
      }
      indices[len] = id;
      valid[len >> 3]! |= 1 << (len & 7);
    }
    this.len = len;
    this.nulls += nulls;
  }

  override mark(): void {
    super.mark();
    this.#markEntries = this.#entryCount;
    this.#markPos = this.#entries.pos;
  }

  override rollback(): void {
    super.rollback();
    const undone = this.#pendingKeys.splice(this.#markEntries);
    for (const key of undone) this.#ids.delete(key);
    this.#entryCount = this.#markEntries;
    this.#entries.pos = this.#markPos;
  }

  flush(): Data {
    // The first batch always contributes a chunk (possibly empty): the writers compare first chunks.
    if (this.#dictionary === undefined || this.#entryCount > 0) {
      const { valueOffsets, data } = this.#entries.take(this.#entryCount);
      this.#chunks.push(
        makeData({ type: this.#utf8, length: this.#entryCount, nullCount: 0, valueOffsets, data }),
      );
      this.#dictionary = new Vector(this.#chunks.slice());
      this.#entryCount = 0;
      this.#pendingKeys = [];
    }
    const { nullCount, nullBitmap } = this.takeValidity();
    const out = makeData({
      type: this.type as Dictionary,
      length: this.len,
      nullCount,
      nullBitmap,
      data: this.#indices.slice(0, this.len),
      dictionary: this.#dictionary,
    });
    this.reset();
    return out;
  }

  override reset(): void {
    super.reset();
    this.#markEntries = 0;
    this.#markPos = 0;
  }
}
