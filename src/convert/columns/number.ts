/** The `number` kind: Float64 values. */

import { grow } from '../grow.js';
import { toNumber } from '../values.js';
import { INITIAL_CAPACITY, type WireRows } from './column.js';
import { FixedWidthColumn } from './fixed-width.js';

export class Float64Column extends FixedWidthColumn<Float64Array> {
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
      // `v - v === 0`: finite (a literal past a double's range parses as Infinity: invalid, see toNumber).
      if (typeof v === 'number' && v - v === 0) {
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
