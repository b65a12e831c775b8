/** The `date` kind (days since the epoch): `"YYYYMMDD"` read from its digits, anything else by `toDateDays`. */

import { dateDaysAt, isoDate } from '../../convert/dates.js';
import { toDateDays } from '../../convert/values.js';
import { QUOTE, type Scan } from '../json-scan.js';
import { valuesKind } from './column.js';

const MS_PER_DAY = 86_400_000;

/** `T000000Z` at `b[i]`. */
function isMidnight(b: Uint8Array, i: number): boolean {
  return (
    b[i] === 0x54 &&
    b[i + 1] === 0x30 &&
    b[i + 2] === 0x30 &&
    b[i + 3] === 0x30 &&
    b[i + 4] === 0x30 &&
    b[i + 5] === 0x30 &&
    b[i + 6] === 0x30 &&
    b[i + 7] === 0x5a
  );
}

/**
 * The days of a date cell in the wire's shape (`"YYYYMMDD"` or `"YYYYMMDDT000000Z"`) at `s.i`, `s.i` moved
 * past it; NaN (`s.i` unmoved) for any other value.
 */
function wireDays(s: Scan): number {
  const b = s.b;
  const i = s.i;
  if (b[i] !== QUOTE) return Number.NaN;
  let days = Number.NaN;
  if (b[i + 9] === QUOTE) days = dateDaysAt(b, i + 1);
  else if (b[i + 17] === QUOTE && isMidnight(b, i + 9)) days = dateDaysAt(b, i + 1);
  if (!Number.isNaN(days)) s.i = b[i + 9] === QUOTE ? i + 10 : i + 18;
  return days;
}

export const DATE = valuesKind(Int32Array, {
  name: 'date',
  read: wireDays,
  field: (field, len) => (len === 8 ? dateDaysAt(field, 0) : Number.NaN),
  convert: toDateDays,
  value: (days, dates) => (dates === 'string' ? isoDate(days) : new Date(days * MS_PER_DAY)),
});
