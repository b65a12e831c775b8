/** The `number` kind (Float64): a JSON number read from its digits, anything else by `toNumber`. */

import { rowValueOf } from '../../convert/row-factory.js';
import { toNumber } from '../../convert/values.js';
import type { WireValue } from '../../core/wire.js';
import { BAIL, type Scan } from '../json-scan.js';
import { type Kind, otherValue, reuse, ValuesColumn } from './column.js';

function isNumberStart(c: number | undefined): boolean {
  return c === 0x2d || (c !== undefined && c >= 0x30 && c <= 0x39);
}

/** A JSON number's double, declined when it does not keep every digit (the reference reports it). */
function exact(s: Scan): number {
  s.number();
  const x = s.num;
  if (Number.isNaN(x)) throw BAIL;
  return x;
}

class NumberColumn extends ValuesColumn<Float64Array> {
  cell(s: Scan, r: number): void {
    if (isNumberStart(s.b[s.i])) {
      this.values[r] = exact(s);
      this.valid[r] = 1;
    } else this.put(r, s.wire(s.value()));
  }

  convert(v: WireValue): number {
    return toNumber(v);
  }
}

export const NUMBER: Kind = {
  column: (sizing, spare) =>
    new NumberColumn(
      reuse(spare?.kind === 'number' ? spare.values : undefined, sizing.rows, Float64Array),
      spare?.kind === 'number' ? spare.valid : undefined,
      'number',
    ),
  row(column, dates) {
    const read = rowValueOf(column, dates);
    return { cell: (s) => (isNumberStart(s.b[s.i]) ? exact(s) : otherValue(s, read)) };
  },
};
