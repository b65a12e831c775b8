/**
 * Per-value conversions from wire values to typed values, shared by the Arrow builder and the row
 * factory so both accept and reject exactly the same inputs. Each returns a sentinel instead of throwing
 * (NaN, -1, undefined): the callers sit in hot loops and decide themselves whether an invalid value
 * becomes an error or a null. `null`/`undefined` never reach these functions; callers handle nulls first.
 */

import { InvalidValueError, type ResultLocation } from '../core/errors.js';
import type { ColumnKind } from './column-kind.js';
import { parseDateDays, parseTimestampMs } from './dates.js';
import { exactInteger, keepsDigits } from './numbers.js';

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

/** 2^53: from here on a double cannot tell consecutive integers apart. */
const TWO_POW_53 = 9_007_199_254_740_992;

/**
 * A JSON number as is, or a decimal numeric string (a literal the decoders kept as its text, a CSV field,
 * a service that declares everything `string`) when its double keeps every digit it carries (numbers.ts);
 * NaN otherwise, never a rounded value.
 */
export function toNumber(v: unknown): number {
  // JSON has no infinities: a non-finite number is a literal too large for a double (`1e400`), an
  // invalid value like its string spelling, not Infinity.
  if (typeof v === 'number') return Number.isFinite(v) ? v : Number.NaN;
  if (typeof v === 'string') {
    const x = parseDecimal(v);
    return Number.isNaN(x) || keepsDigits(v, x) ? x : Number.NaN;
  }
  return Number.NaN;
}

/** How `number` columns carry their values (the `bigNumbers` stream option). */
export type BigNumbers = 'error' | 'bigint' | 'string';

/**
 * `bigNumbers: 'bigint'`: an integer → its exact BigInt (a double within ±2^53, or the text of a literal
 * in any spelling: `9007199254740993`, `9.007199254740993e15`); undefined for anything else (a fraction,
 * a non-number, past Int64's range).
 */
export function toBigIntValue(v: unknown): bigint | undefined {
  if (typeof v === 'number') {
    return Number.isInteger(v) && v >= -TWO_POW_53 && v <= TWO_POW_53 ? BigInt(v) : undefined;
  }
  return typeof v === 'string' && !Number.isNaN(parseDecimal(v)) ? exactInteger(v) : undefined;
}

/**
 * `bigNumbers: 'string'`: a number → its text as the service sent it (a literal the decoders kept as its
 * text, a numeric string as is; a double is the wire value of a literal that was its own spelling);
 * undefined when not a number.
 */
export function toNumberText(v: unknown): string | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : undefined;
  if (typeof v !== 'string') return undefined;
  return Number.isNaN(parseDecimal(v)) ? undefined : v;
}

/** The expected-value text of a `number` column, per `bigNumbers`. */
function expectedNumber(bigNumbers: BigNumbers, value: unknown): string {
  if (bigNumbers === 'bigint') return 'an integer within the 64-bit range';
  if (bigNumbers === 'error' && typeof value === 'string' && !Number.isNaN(parseDecimal(value))) {
    return "a number a double holds to its last digit (integers within ±2^53; bigNumbers: 'bigint' or 'string' reads it exactly)";
  }
  return EXPECTED.number;
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
export function isValidFor(kind: ColumnKind, v: unknown, bigNumbers: BigNumbers = 'error'): boolean {
  switch (kind) {
    case 'number':
      if (bigNumbers === 'bigint') return toBigIntValue(v) !== undefined;
      if (bigNumbers === 'string') return toNumberText(v) !== undefined;
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

export function invalidValue(
  kind: ColumnKind,
  value: unknown,
  loc: ResultLocation,
  bigNumbers: BigNumbers = 'error',
): InvalidValueError {
  const expected = kind === 'number' ? expectedNumber(bigNumbers, value) : EXPECTED[kind];
  return new InvalidValueError(expected, value, loc);
}
