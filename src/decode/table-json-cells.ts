/**
 * The cell writers of the table-JSON byte decoder: one per column kind but strings (those are inline in
 * the row loop, table-json-fast.ts), each reading a value at `b[i]` into its column's buffers and
 * returning the index after it, and the page's buffers they share.
 *
 * Small pages are decoded by code V8 is still learning, and one function for every kind (as this was)
 * took 30-60 ms of TurboFan per compile; any path its first pages had not taken (the page's end, a first
 * null, a first escape, a kind the previous dataset lacked) threw it away, to be interpreted (~10x
 * slower) until compiled again: ten compiles in bench/wan.js's fan-out (121 queries of three datasets).
 * Small functions compile in a few ms, and a deopt costs only the one it happens in.
 */

import { dateDaysAt, timeOfDayMsAt } from '../convert/dates.js';
import { toBooleanBit, toDateDays, toNumber, toText, toTimestampMs } from '../convert/values.js';
import type { ByteDictionary } from './byte-dictionary.js';
import {
  BAIL,
  generic,
  isNullAt,
  loneSurrogate,
  readGeneric,
  scanNumber,
  setLoneSurrogate,
  stringEnd,
  unescapeInto,
} from './json-scan.js';
import {
  BOOLEAN,
  DATE,
  DATETIME,
  DICT,
  ensure,
  grow,
  growText,
  NUMBER,
  STRING_HEADROOM,
  UTF8,
} from './page-columns.js';

/** The bytes the hot loops compare with, as local constants: read as imports, they cost ~2 % of decoding. */
const BACKSLASH = 0x5c;
const QUOTE = 0x22;

const MS_PER_DAY = 86_400_000;

/**
 * The buffers of the page being decoded, as the row loop and the cell readers share them. The arrays are
 * the decoder's own (`#rows` hands them on to `#columns`): a buffer that grows is replaced in place.
 */
export class PageBuffers {
  constructor(
    readonly kinds: Int8Array,
    /** Rows the buffers hold now. */
    public cap: number,
    readonly f64: Float64Array[],
    readonly i32: Int32Array[],
    readonly u8: Uint8Array[],
    readonly valid: Uint8Array[],
    /** Per string column: a view of its bytes in `u8`, for the four-byte copy. */
    readonly views: DataView[],
    /** Per string column: bytes written so far. */
    readonly strPos: Int32Array,
    readonly dicts: ByteDictionary[],
    /** The bytes being decoded: the whole body, or (a page decoded as it arrives) the bytes in hand. */
    public body: DataView,
    /** Rows the page was asked for (it may hold fewer). */
    readonly rows: number,
    /** The body's length, or what it is expected to be (a bound for string buffers; may be Infinity). */
    readonly bodyLength: number,
  ) {}

  /** Rows decoded so far. */
  length = 0;
  /** Set once the row loop has reached the array's end. */
  done = false;
  /**
   * The last row boundary the row loop has passed: rows decoded then, and the index of the next row's
   * `[`. A page decoded as it arrives goes back to it when the bytes in hand end inside a row.
   */
  resumeRow = 0;
  resumeAt = 0;
}

/** Doubles every column's room for rows (recycled buffers may already be longer: only those that are not). */
export function growRows(page: PageBuffers, r: number): void {
  const { kinds, f64, i32, u8, valid } = page;
  const next = page.cap * 2;
  for (let j = 0; j < kinds.length; j++) {
    const k = kinds[j]!;
    if (k === NUMBER || k === DATETIME) f64[j] = ensure(f64[j]!, next, r);
    if (k === DATE || k === DICT) i32[j] = ensure(i32[j]!, next, r);
    if (k === UTF8) i32[j] = ensure(i32[j]!, next + 1, r + 1);
    if (k === BOOLEAN) u8[j] = ensure(u8[j]!, next, r);
    if (k !== BOOLEAN && k !== DICT) valid[j] = ensure(valid[j]!, next, r);
  }
  page.cap = next;
}

/**
 * Column `j`'s string bytes, grown to hold at least 4096 more after `o` (its view follows). With `r` rows
 * read, to the page's rows at their bytes per row (never past the body's length): a page whose first
 * guess was far off (the first of a stream guesses 32 bytes a row) grew by a quarter at a time, a copy
 * each, 7-10 copies of a column on the fan-out's small pages.
 */
export function growString(page: PageBuffers, j: number, o: number, r: number): Uint8Array {
  const expected = r === 0 ? 0 : Math.min(page.bodyLength, Math.ceil((o / r) * page.rows * STRING_HEADROOM));
  const out = growText(page.u8[j]!, Math.max(o + 4096, expected), o);
  page.u8[j] = out;
  page.views[j] = new DataView(out.buffer, out.byteOffset, out.byteLength);
  return out;
}

/** A `string` cell that is not a string literal (`c` is `b[i]`): null, or a scalar as its text. */
export function utf8Other(
  b: Buffer,
  i: number,
  c: number | undefined,
  j: number,
  r: number,
  page: PageBuffers,
): number {
  const offsets = page.i32[j]!;
  const valid = page.valid[j]!;
  if (c === 0x6e && isNullAt(b, i)) {
    offsets[r + 1] = page.strPos[j]!;
    valid[r] = 0;
    return i + 4;
  }
  i = readGeneric(b, i);
  const text = generic === null ? null : toText(generic);
  if (text === undefined) throw BAIL;
  if (text === null) {
    offsets[r + 1] = page.strPos[j]!;
    valid[r] = 0;
  } else {
    let out = page.u8[j]!;
    let o = page.strPos[j]!;
    if (o + text.length * 3 > out.length) {
      out = page.u8[j] = grow(out, o + text.length * 3, o);
      page.views[j] = new DataView(out.buffer, out.byteOffset, out.byteLength);
    }
    o += Buffer.from(out.buffer, out.byteOffset, out.byteLength).write(text, o);
    page.strPos[j] = o;
    offsets[r + 1] = o;
    valid[r] = 1;
  }
  return i;
}

/** A `number` cell at `b[i]` (`c` is `b[i]`) into row `r`; returns the index after it. */
export function numberCell(
  b: Buffer,
  i: number,
  c: number | undefined,
  values: Float64Array,
  valid: Uint8Array,
  r: number,
): number {
  if (c === 0x2d || (c !== undefined && c >= 0x30 && c <= 0x39)) {
    i = scanNumber(b, i, values, r);
    valid[r] = 1;
  } else if (c === 0x6e && isNullAt(b, i)) {
    i += 4;
    values[r] = 0;
    valid[r] = 0;
  } else {
    i = readGeneric(b, i);
    const x = toNumber(generic);
    if (Number.isNaN(x)) throw BAIL;
    values[r] = x;
    valid[r] = 1;
  }
  return i;
}

/** A `date` cell (days since the epoch); returns the index after it. */
export function dateCell(
  b: Buffer,
  i: number,
  c: number | undefined,
  values: Int32Array,
  valid: Uint8Array,
  r: number,
): number {
  if (c === QUOTE) {
    const days = wireDaysAt(b, i);
    if (!Number.isNaN(days)) {
      values[r] = days;
      valid[r] = 1;
      return wireTimeEnd(b, i);
    }
  }
  return otherTimeCell(b, i, c, values, valid, r, toDateDays);
}

/** A `datetime` cell (ms since the epoch); returns the index after it. */
export function datetimeCell(
  b: Buffer,
  i: number,
  c: number | undefined,
  values: Float64Array,
  valid: Uint8Array,
  r: number,
): number {
  if (c === QUOTE) {
    const ms = wireMsAt(b, i);
    if (!Number.isNaN(ms)) {
      values[r] = ms;
      valid[r] = 1;
      return wireTimeEnd(b, i);
    }
  }
  return otherTimeCell(b, i, c, values, valid, r, toTimestampMs);
}

/**
 * A date or datetime cell not in the wire's `YYYYMMDD` / `YYYYMMDDTHHMMSSZ` shape: `null`, or a value that
 * `convert` (the reference decoder's conversion) turns into days or ms; anything else declines the page.
 * Returns the index after it.
 */
function otherTimeCell(
  b: Buffer,
  i: number,
  c: number | undefined,
  values: Int32Array | Float64Array,
  valid: Uint8Array,
  r: number,
  convert: (value: unknown) => number,
): number {
  if (c === 0x6e && isNullAt(b, i)) {
    values[r] = 0;
    valid[r] = 0;
    return i + 4;
  }
  i = readGeneric(b, i);
  if (generic === null) {
    values[r] = 0;
    valid[r] = 0;
    return i;
  }
  const value = convert(generic);
  if (Number.isNaN(value)) throw BAIL;
  values[r] = value;
  valid[r] = 1;
  return i;
}

/** A `boolean` cell (0 false, 1 true, 2 null); returns the index after it. */
export function booleanCell(
  b: Buffer,
  i: number,
  c: number | undefined,
  bits: Uint8Array,
  r: number,
): number {
  if (c === 0x74 && b[i + 1] === 0x72 && b[i + 2] === 0x75 && b[i + 3] === 0x65) {
    bits[r] = 1;
    return i + 4;
  }
  if (c === 0x66 && b[i + 1] === 0x61 && b[i + 2] === 0x6c && b[i + 3] === 0x73 && b[i + 4] === 0x65) {
    bits[r] = 0;
    return i + 5;
  }
  if (c === 0x6e && isNullAt(b, i)) {
    bits[r] = 2;
    return i + 4;
  }
  i = readGeneric(b, i);
  const bit = toBooleanBit(generic);
  if (bit < 0) throw BAIL;
  bits[r] = bit;
  return i;
}

/** A dictionary `string` cell: its id in the page's dictionary (-1 for null); returns the index after it. */
export function dictCell(
  b: Buffer,
  i: number,
  c: number | undefined,
  ids: Int32Array,
  dict: ByteDictionary,
  r: number,
): number {
  if (c === QUOTE) {
    const n = b.length;
    const s = ++i;
    for (; i < n; i++) {
      c = b[i]!;
      if (c === QUOTE || c === BACKSLASH || c < 0x20) break;
    }
    if (c === QUOTE) ids[r] = dict.id(b, s, i);
    else {
      const e = stringEnd(b, i);
      const scratch = new Uint8Array(e - s);
      const before: boolean = loneSurrogate;
      setLoneSurrogate(false);
      const len = unescapeInto(b, s, e, scratch, 0);
      // Two lone surrogates both encode as U+FFFD but are different strings, so different
      // entries on the reference path: bytes cannot key them.
      if (loneSurrogate) throw BAIL;
      setLoneSurrogate(before);
      ids[r] = dict.id(scratch, 0, len);
      i = e;
    }
    return i + 1;
  }
  if (c === 0x6e && isNullAt(b, i)) {
    ids[r] = -1;
    return i + 4;
  }
  i = readGeneric(b, i);
  if (generic === null) ids[r] = -1;
  else {
    const text = toText(generic);
    if (text === undefined) throw BAIL;
    const bytes = Buffer.from(text);
    ids[r] = dict.id(bytes, 0, bytes.length);
  }
  return i;
}

/**
 * Days since the epoch of a `date` cell in the wire's shape at `b[i]` (its opening quote): `"YYYYMMDD"`,
 * or `"YYYYMMDDT000000Z"`; NaN for anything else. Shared by the column and the row decoders.
 */
export function wireDaysAt(b: Buffer, i: number): number {
  if (b[i + 9] === QUOTE) return dateDaysAt(b, i + 1);
  if (b[i + 17] === QUOTE && isMidnight(b, i + 9)) return dateDaysAt(b, i + 1);
  return Number.NaN;
}

/**
 * Ms since the epoch of a `datetime` cell in the wire's shape at `b[i]` (its opening quote):
 * `"YYYYMMDDTHHMMSSZ"`, or a bare `"YYYYMMDD"` (midnight); NaN for anything else.
 */
export function wireMsAt(b: Buffer, i: number): number {
  if (b[i + 17] === QUOTE && b[i + 9] === 0x54 && b[i + 16] === 0x5a) {
    return dateDaysAt(b, i + 1) * MS_PER_DAY + timeOfDayMsAt(b, i + 10);
  }
  if (b[i + 9] === QUOTE) return dateDaysAt(b, i + 1) * MS_PER_DAY;
  return Number.NaN;
}

/**
 * The index after a cell `wireDaysAt` or `wireMsAt` read (not NaN): the short form has its closing quote
 * at `b[i + 9]`, the long one a `T` there.
 */
export function wireTimeEnd(b: Buffer, i: number): number {
  return b[i + 9] === QUOTE ? i + 10 : i + 18;
}

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
