/**
 * What a column kind is to the byte decoders: a `PageColumn` (a page's values of the column, filled by the
 * table-JSON row loop, `cell`, or by the CSV decoder, `field`) and a `RowCell` (a row object's value,
 * straight from the table-JSON bytes). Each kind is one file of this folder and one entry of `KINDS`
 * (index.ts): its typical cells read from the bytes, anything else through the reference's own wire check
 * (convert/values.ts) or row value (convert/row-factory.ts), so both paths accept exactly the same values.
 */

import type { DecodedColumn } from '../../convert/column-data.js';
import { grow } from '../../convert/grow.js';
import type { ColumnPlan } from '../../convert/plan.js';
import { type DatesAs, rowValueOf } from '../../convert/row-factory.js';
import type { WireValue } from '../../core/wire.js';
import { fieldValue } from '../csv.js';
import { BAIL, type Scan, utf8 } from '../json-scan.js';

/** A page's values of one column, as a byte decoder writes them. */
export interface PageColumn {
  /** The JSON value at `s.i` into row `r` (`s.i` then after it); declines any the reference reads otherwise. */
  cell(s: Scan, r: number): unknown;
  /** A CSV field, `field[0, len)`, into row `r`. */
  field(field: Buffer, len: number, quoted: boolean, r: number): void;
  /** Room for `rows` rows (the first `used` kept). */
  grow(rows: number, used: number): void;
  /** Drops rows from `r` on (a row cut by the end of the bytes in hand is read again). */
  rollBack(r: number): void;
  /** The page's first `length` rows as a decoded column; the column's buffers go with it. */
  decoded(length: number): DecodedColumn;
}

/** A row object's value of one column from the JSON value at `s.i`. */
export interface RowCell {
  cell(s: Scan, r: number): unknown;
  /** A new page begins (a cell may keep what it made of the last one, such as its repeated strings). */
  reset?(): void;
}

/**
 * A row cell's value of a JSON value in no typical spelling of its kind: null, or the reference's row
 * value of its wire value (an invalid one throws its `InvalidValueError`: the page is declined).
 */
export function otherValue(s: Scan, read: (v: WireValue) => unknown): unknown {
  const v = s.wire(s.value());
  return v === null ? null : read(v);
}

/** How a page's buffers are sized. */
export interface Sizing {
  /** Rows the buffers hold at first. */
  readonly rows: number;
  /** The rows the page was asked for (it may hold fewer). */
  readonly limit: number;
  /** The body's length, or what it is expected to be (a bound for string bytes; may be Infinity). */
  readonly bodyLength: number;
  /** String bytes per row on the stream's last page. */
  readonly bytesPerRow: number;
}

export interface Kind {
  /** A page column, into `spare`'s buffers (a page of this kind already appended) where they are big enough. */
  column(sizing: Sizing, spare: DecodedColumn | undefined): PageColumn;
  /** The row object cell of `column`. */
  row(column: ColumnPlan, dates: DatesAs): RowCell;
}

/** `a` when it holds `need` elements, else a copy of its first `used` in a longer array. */
export function ensure<T extends Uint8Array | Int32Array | Float64Array>(
  a: T,
  need: number,
  used: number,
): T {
  return a.length >= need ? a : grow(a, need, used);
}

/** `spare` when it holds `size` elements, else a new array. */
export function reuse<T extends Float64Array | Int32Array | Uint8Array>(
  spare: T | undefined,
  size: number,
  make: new (n: number) => T,
): T {
  return spare !== undefined && spare.length >= size ? spare : new make(size);
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

/** How a kind of one number per row (`number`, `date`, `datetime`) reads its values. */
interface ValuesOf {
  /** The kind's name for `fieldValue` (how a CSV field becomes a wire value). */
  readonly name: 'number' | 'date' | 'datetime';
  /** The kind's own spelling at `s.i`, read (`s.i` past it); NaN, `s.i` unmoved, for any other value. */
  readonly read: (s: Scan) => number;
  /** A CSV field in the kind's own spelling; NaN for any other. */
  readonly field?: ((field: Buffer, len: number) => number) | undefined;
  /** Any other wire value → the column's number, NaN when invalid (the reference's wire check). */
  readonly convert: (v: WireValue) => number;
  /** A row object's value of a number read. */
  readonly value: (x: number, dates: DatesAs) => unknown;
}

/** A page's values of a kind of one number per row, and a validity flag per row. */
class ValuesColumn<A extends Float64Array | Int32Array> implements PageColumn {
  valid: Uint8Array;

  constructor(
    public values: A,
    valid: Uint8Array | undefined,
    readonly of: ValuesOf,
  ) {
    this.valid = reuse(valid, values.length, Uint8Array);
  }

  cell(s: Scan, r: number): void {
    const x = this.of.read(s);
    if (Number.isNaN(x)) this.#put(r, s.wire(s.value()));
    else {
      this.values[r] = x;
      this.valid[r] = 1;
    }
  }

  field(field: Buffer, len: number, quoted: boolean, r: number): void {
    const x = this.of.field?.(field, len) ?? Number.NaN;
    if (!Number.isNaN(x)) {
      this.values[r] = x;
      this.valid[r] = 1;
    } else this.#put(r, len === 0 && !quoted ? null : fieldValue(utf8(field, 0, len), quoted, this.of.name));
  }

  /** Row `r` from a wire value (null, or what `convert` accepts). */
  #put(r: number, v: WireValue): void {
    if (v === null) {
      this.values[r] = 0;
      this.valid[r] = 0;
      return;
    }
    const x = this.of.convert(v);
    if (Number.isNaN(x)) throw BAIL;
    this.values[r] = x;
    this.valid[r] = 1;
  }

  grow(rows: number, used: number): void {
    this.values = ensure(this.values, rows, used);
    this.valid = ensure(this.valid, rows, used);
  }

  rollBack(): void {}

  decoded(): DecodedColumn {
    return { kind: this.of.name, values: this.values, valid: this.valid } as DecodedColumn;
  }
}

/** The kind of one number per row that `of` reads, into arrays made by `make`. */
export function valuesKind<A extends Float64Array | Int32Array>(
  make: new (n: number) => A,
  of: ValuesOf,
): Kind {
  return {
    column(sizing, spare) {
      const old =
        spare?.kind === of.name ? (spare as unknown as { values: A; valid: Uint8Array }) : undefined;
      return new ValuesColumn(reuse(old?.values, sizing.rows, make), old?.valid, of);
    },
    row(column, dates) {
      const read = rowValueOf(column, dates);
      return {
        cell(s) {
          const x = of.read(s);
          return Number.isNaN(x) ? otherValue(s, read) : of.value(x, dates);
        },
      };
    },
  };
}
