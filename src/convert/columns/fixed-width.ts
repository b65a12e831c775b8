/**
 * The base of the kinds whose decoded form is already their Arrow buffer (number: Float64, date:
 * DateDay): appending decoded rows is one typed-array copy, and flushing hands the trimmed buffer to
 * Arrow. Each subclass keeps its own `appendColumn` loop, monomorphic on the hot path.
 */

import { type Data, type DateDay, type Float64, makeData } from 'apache-arrow';
import type { DecodedColumn } from '../column-data.js';
import { grow } from '../grow.js';
import { adopted, bitmapOf, Column, wrongKind } from './column.js';

export abstract class FixedWidthColumn<A extends Float64Array | Int32Array> extends Column {
  protected abstract readonly kind: 'number' | 'date';
  protected abstract values: A;

  appendDecoded(column: DecodedColumn, from: number, to: number): void {
    if (column.kind !== this.kind) throw wrongKind(column, this.kind);
    const end = this.len + (to - from);
    if (end > this.values.length) this.values = grow(this.values, end);
    this.values.set(column.values.subarray(from, to) as A, this.len);
    this.appendValidity(column.valid, from, to);
    this.len = end;
  }

  /** The decoded values are already Arrow's (Float64 / Int32 days, zeros under nulls): taken over. */
  override adoptDecoded(column: DecodedColumn, length: number): Data {
    if (column.kind !== this.kind) throw wrongKind(column, this.kind);
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
