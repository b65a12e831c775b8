/**
 * Per-value conversions from wire values to typed values, shared by the Arrow builder and the row
 * factory so both accept and reject exactly the same inputs. Each returns a sentinel instead of throwing
 * (NaN, -1, undefined): the callers sit in hot loops and decide themselves whether an invalid value
 * becomes an error or a null. `null`/`undefined` never reach these functions; callers handle nulls first.
 */

import { InvalidValueError, type ResultLocation } from '../core/errors.js';
import type { ColumnKind } from './column-kind.js';
import { parseDateDays, parseTimestampMs } from './dates.js';

/** What a value of each kind must look like, for `InvalidValueError.expected`. */
export const EXPECTED: Readonly<Record<ColumnKind, string>> = {
  string: 'a string',
  number: 'a number',
  date: 'a date YYYYMMDD',
  datetime: 'a timestamp YYYYMMDDTHHMMSSZ',
  boolean: 'a boolean',
};

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/**
 * A finite decimal literal (`12`, `-1.5e3`, `.5`, `1.`) → its number; NaN for anything else (empty,
 * whitespace around it, `0x10`, `Infinity`, `NaN`, `1_000`). `Number()` alone is too lenient: it reads
 * `''` as 0 and `'0x10'` as 16, which would silently invent values.
 */
export function parseDecimal(s: string): number {
  const n = s.length;
  if (n === 0) return Number.NaN;
  const first = s.charCodeAt(0);
  const last = s.charCodeAt(n - 1);
  if (!(isDigit(first) || first === 45 || first === 43 || first === 46) || !(isDigit(last) || last === 46)) {
    return Number.NaN;
  }
  // Number() accepts 0x/0o/0b prefixes (unsigned only); a decimal literal never has a letter second.
  if (first === 48 && n > 2) {
    const second = s.charCodeAt(1) | 32;
    if (second === 120 || second === 111 || second === 98) return Number.NaN;
  }
  const v = +s;
  return Number.isFinite(v) ? v : Number.NaN;
}

/** A JSON number as is, or a decimal numeric string (services that declare everything `string`). */
export function toNumber(v: unknown): number {
  // JSON has no infinities: a non-finite number is a literal too large for a double (`1e400`), an
  // invalid value like its string spelling, not Infinity.
  if (typeof v === 'number') return Number.isFinite(v) ? v : Number.NaN;
  if (typeof v === 'string') return parseDecimal(v);
  return Number.NaN;
}

/** `YYYYMMDD` (or `YYYYMMDDT000000Z`) → days since the epoch; NaN when not a real date. */
export function toDateDays(v: unknown): number {
  return typeof v === 'string' ? parseDateDays(v) : Number.NaN;
}

/** `YYYYMMDDTHHMMSSZ` (or `YYYYMMDD`, midnight) → ms since the epoch, UTC; NaN when invalid. */
export function toTimestampMs(v: unknown): number {
  return typeof v === 'string' ? parseTimestampMs(v) : Number.NaN;
}

/** `true`/`false`, `"true"`/`"false"`, `1`/`0` → 1/0; -1 for anything else. */
export function toBooleanBit(v: unknown): 1 | 0 | -1 {
  if (v === true || v === 1 || v === 'true') return 1;
  if (v === false || v === 0 || v === 'false') return 0;
  return -1;
}

/** A string as is; numbers and booleans as `String(v)` so no raw value is ever dropped. */
export function toText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  // A non-finite number is a literal past a double's range: not a value to print as "Infinity".
  if (typeof v === 'number') return v - v === 0 ? String(v) : undefined;
  if (typeof v === 'boolean') return String(v);
  return undefined;
}

/** Whether a non-null wire value converts to `kind`. The slow path used to locate errors. */
export function isValidFor(kind: ColumnKind, v: unknown): boolean {
  switch (kind) {
    case 'number':
      return !Number.isNaN(toNumber(v));
    case 'date':
      return !Number.isNaN(toDateDays(v));
    case 'datetime':
      return !Number.isNaN(toTimestampMs(v));
    case 'boolean':
      return toBooleanBit(v) >= 0;
    case 'string':
      return toText(v) !== undefined;
  }
}

export function invalidValue(kind: ColumnKind, value: unknown, loc: ResultLocation): InvalidValueError {
  return new InvalidValueError(EXPECTED[kind], value, loc);
}
