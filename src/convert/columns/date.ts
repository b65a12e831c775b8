/** The `date` kind: DateDay, Int32 days since the epoch. */

import { grow } from '../grow.js';
import { toDateDays } from '../values.js';
import { INITIAL_CAPACITY, type WireRows } from './column.js';
import { FixedWidthColumn } from './fixed-width.js';

export class DateDayColumn extends FixedWidthColumn<Int32Array> {
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
