/** The `number` kind (Float64): a JSON number read from its digits, anything else by `toNumber`. */

import { toNumber } from '../../convert/values.js';
import { BAIL, type Scan } from '../json-scan.js';
import { valuesKind } from './column.js';

/** A JSON number's double at `s.i` (NaN for another value); declines one that loses a digit. */
function number(s: Scan): number {
  const c = s.b[s.i];
  if (c !== 0x2d && (c === undefined || c < 0x30 || c > 0x39)) return Number.NaN;
  s.number();
  // The reference reports it (an InvalidValueError naming its place).
  if (Number.isNaN(s.num)) throw BAIL;
  return s.num;
}

export const NUMBER = valuesKind(Float64Array, {
  name: 'number',
  read: number,
  convert: toNumber,
  value: (x) => x,
});
