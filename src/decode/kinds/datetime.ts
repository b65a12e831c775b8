/** The `datetime` kind (ms since the epoch, UTC): `"YYYYMMDDTHHMMSSZ"` from its digits, else `toTimestampMs`. */

import { dateDaysAt, isoTimestamp, timeOfDayMsAt } from '../../convert/dates.js';
import { rowValueOf } from '../../convert/row-factory.js';
import { toTimestampMs } from '../../convert/values.js';
import type { WireValue } from '../../core/wire.js';
import { QUOTE, type Scan } from '../json-scan.js';
import { type Kind, otherValue, reuse, ValuesColumn } from './column.js';

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

class DatetimeColumn extends ValuesColumn<Float64Array> {
  cell(s: Scan, r: number): void {
    const ms = wireMs(s);
    if (!Number.isNaN(ms)) {
      this.values[r] = ms;
      this.valid[r] = 1;
    } else this.put(r, s.wire(s.value()));
  }

  convert(v: WireValue): number {
    return toTimestampMs(v);
  }
}

export const DATETIME: Kind = {
  column: (sizing, spare) =>
    new DatetimeColumn(
      reuse(spare?.kind === 'datetime' ? spare.values : undefined, sizing.rows, Float64Array),
      spare?.kind === 'datetime' ? spare.valid : undefined,
      'datetime',
    ),
  row(column, dates) {
    const read = rowValueOf(column, dates);
    const value = dates === 'string' ? isoTimestamp : (ms: number) => new Date(ms);
    return {
      cell(s) {
        const ms = wireMs(s);
        return !Number.isNaN(ms) ? value(ms) : otherValue(s, read);
      },
    };
  },
};
