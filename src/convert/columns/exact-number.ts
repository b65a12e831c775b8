/**
 * The `number` kind read exactly (`bigNumbers: 'bigint' | 'string'`): Int64 values, or each number's
 * canonical decimal text in a Utf8 column. Only wire rows reach these: the fast decoders fill Float64
 * columns, so streams with these options read through the reference decoders.
 */

import { type Data, type Int64, makeData } from 'apache-arrow';
import type { DecodedColumn } from '../column-data.js';
import { grow } from '../grow.js';
import { toBigIntValue, toNumberText } from '../values.js';
import { Column, INITIAL_CAPACITY, type WireRows, wrongKind } from './column.js';
import { Utf8Column } from './utf8.js';

/** `bigNumbers: 'bigint'`: an Int64 column; a fraction or a value past Int64's range is invalid. */
export class Int64Column extends Column {
  #values = new BigInt64Array(INITIAL_CAPACITY);

  appendColumn(rows: WireRows, col: number, invalidToNull: boolean): number {
    const n = rows.length;
    const end = this.len + n;
    if (end > this.#values.length) this.#values = grow(this.#values, end, this.len);
    this.validity.reserve(end);
    const values = this.#values;
    const valid = this.validity.bytes;
    let len = this.len;
    let nulls = 0;
    for (let i = 0; i < n; i++, len++) {
      const v = rows[i]![col];
      const x = v === null || v === undefined ? undefined : toBigIntValue(v);
      if (x !== undefined) {
        values[len] = x;
        valid[len >> 3]! |= 1 << (len & 7);
      } else if (v === null || v === undefined || invalidToNull) {
        values[len] = 0n;
        nulls++;
      } else return this.stop(len, nulls, i);
    }
    this.len = len;
    this.nulls += nulls;
    return -1;
  }

  appendDecoded(column: DecodedColumn): void {
    throw wrongKind(column, 'int64');
  }

  flush(): Data {
    const { nullCount, nullBitmap } = this.takeValidity();
    const data = makeData({
      type: this.type as Int64,
      length: this.len,
      nullCount,
      nullBitmap,
      data: this.#values.slice(0, this.len),
    } as Parameters<typeof makeData>[0]);
    this.reset();
    return data;
  }
}

/** `bigNumbers: 'string'`: each number as its canonical text (`toNumberText`) in a Utf8 column. */
export class NumberTextColumn extends Utf8Column {
  override appendColumn(rows: WireRows, col: number, invalidToNull: boolean): number {
    const texts: (readonly (string | null)[])[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const v = rows[i]![col];
      const s = v === null || v === undefined ? null : (toNumberText(v) ?? null);
      // Nothing appended yet: the batch builder's rollback has nothing to undo.
      if (s === null && v !== null && v !== undefined && !invalidToNull) return i;
      texts[i] = [s];
    }
    return super.appendColumn(texts, 0, false);
  }

  override appendDecoded(column: DecodedColumn): void {
    throw wrongKind(column, 'number text');
  }
}
