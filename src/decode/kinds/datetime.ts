/** The `datetime` kind (ms since the epoch, UTC): `"YYYYMMDDTHHMMSSZ"` from its digits, else `toTimestampMs`. */

import { dateDaysAt, isoTimestamp, timeOfDayMsAt } from '../../convert/dates.js';
import { toTimestampMs } from '../../convert/values.js';
import { QUOTE, type Scan } from '../json-scan.js';
import { valuesKind } from './column.js';

const MS_PER_DAY = 86_400_000;

/**
 * The ms of a datetime cell in the wire's shape (`"YYYYMMDDTHHMMSSZ"`, or a bare `"YYYYMMDD"`: midnight) at
 * `s.i`, `s.i` moved past it; NaN (`s.i` unmoved) for any other value.
 */
function wireMs(s: Scan): number {
  const b = s.b;
  const i = s.i;
  if (b[i] !== QUOTE) return Number.NaN;
  if (b[i + 17] === QUOTE && b[i + 9] === 0x54 && b[i + 16] === 0x5a) {
    const ms = dateDaysAt(b, i + 1) * MS_PER_DAY + timeOfDayMsAt(b, i + 10);
    if (!Number.isNaN(ms)) s.i = i + 18;
    return ms;
  }
  if (b[i + 9] !== QUOTE) return Number.NaN;
  const ms = dateDaysAt(b, i + 1) * MS_PER_DAY;
  if (!Number.isNaN(ms)) s.i = i + 10;
  return ms;
}

export const DATETIME = valuesKind(Float64Array, {
  name: 'datetime',
  read: wireMs,
  convert: toTimestampMs,
  value: (ms, dates) => (dates === 'string' ? isoTimestamp(ms) : new Date(ms)),
});
