/** The `boolean` kind: Bool, whose values are bits too, OR-ed in, so a rollback must clear them. */

import { type Bool, type Data, makeData } from 'apache-arrow';
import type { DecodedColumn } from '../column-data.js';
import { toBooleanBit } from '../values.js';
import { Bits, Column, type WireRows, wrongKind } from './column.js';

export class BoolColumn extends Column {
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
    if (column.kind !== 'boolean') throw wrongKind(column, 'boolean');
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
