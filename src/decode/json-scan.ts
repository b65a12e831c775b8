/**
 * The JSON byte scanner the table-JSON byte decoder is built on: white space, numbers (exactly as
 * `JSON.parse` reads them), strings (their end, their escapes decoded into UTF-8), any value skipped with
 * `JSON.parse`'s strictness, and the members of the object that is a page. Every function declines what
 * is not ordinary by throwing `BAIL`, which the decoder catches to take the reference path.
 */

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
const TWO_POW_53 = 9_007_199_254_740_992;
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k);

/*
 * The scanner's module state, in one place. The scanning functions return the index they stopped at and
 * leave their second result here, so the hot loop allocates nothing per value (no result objects or
 * tuples). Each is written by a function of this module and read by its caller right after the call
 * (importers read the live binding); nothing here outlives one synchronous slice of a decode (the
 * decoder reads `loneSurrogate` after each slice and keeps it per page), so decoders that take turns
 * never see each other's values. Numbers, the common case, are written straight into the
 * caller's column instead (`scanNumber`'s `out`): read across modules per value, a module variable cost
 * the split 3-4 % of decoding.
 */
/** Where `skipValue` and `readGeneric` have `scanNumber` write (a typed array: a `let` double is boxed). */
const numberScratch = new Float64Array(1);
/**
 * Set by `unescapeInto` and `unicodeEscape` when a lone surrogate was written (as U+FFFD, like
 * `Buffer#write`); the decoder clears it per page through `setLoneSurrogate`.
 */
export let loneSurrogate = false;
/** The last value read by `readGeneric`. */
export let generic: string | number | boolean | null = null;

/** Sets `loneSurrogate` (cleared before a page or a string whose own surrogates matter). */
export function setLoneSurrogate(value: boolean): void {
  loneSurrogate = value;
}

/** Thrown to abandon a page for the reference path; caught in `decode()` and never escapes. */
export class Bail extends Error {}
export const BAIL = new Bail('not an ordinary page');

/**
 * Whether a byte decoder's error means "not an ordinary page" (the reference decides): a `Bail`, or the
 * `RangeError`/`SyntaxError` a slice's `JSON.parse` or a buffer's growth may throw on a hostile page.
 */
export function isDecline(error: unknown): boolean {
  return error instanceof Bail || error instanceof RangeError || error instanceof SyntaxError;
}

export function isWs(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

export function skipWs(b: Uint8Array, i: number): number {
  while (isWs(b[i])) i++;
  return i;
}

export function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}

/**
 * Scans a JSON number at `b[i]` (strict JSON grammar) into `out[at]`; returns the index
 * after it. The value is exactly `JSON.parse`'s: integers and short decimals by exact arithmetic (one
 * correctly rounded operation on exact operands), anything longer through `Number()` of the literal. An
 * integer literal outside ±2^53 declines the page: only the reference keeps its digits.
 */
export function scanNumber(b: Buffer, i: number, out: Float64Array, at: number): number {
  const s = i;
  let neg = false;
  if (b[i] === 0x2d) {
    neg = true;
    i++;
  }
  let c = b[i];
  let m = 0;
  let digits = 0;
  if (c === 0x30) {
    i++;
    c = b[i];
    if (isDigit(c)) throw BAIL; // leading zero
  } else if (c !== undefined && c >= 0x31 && c <= 0x39) {
    do {
      m = m * 10 + (c - 0x30);
      digits++;
      c = b[++i];
    } while (c !== undefined && c >= 0x30 && c <= 0x39);
  } else throw BAIL;
  let scale = 0;
  const integer = c !== 0x2e && c !== 0x65 && c !== 0x45;
  if (c === 0x2e) {
    c = b[++i];
    if (!isDigit(c)) throw BAIL;
    do {
      m = m * 10 + (c! - 0x30);
      digits++;
      scale--;
      c = b[++i];
    } while (c !== undefined && c >= 0x30 && c <= 0x39);
  }
  if (c === 0x65 || c === 0x45) {
    c = b[++i];
    let eneg = false;
    if (c === 0x2b || c === 0x2d) {
      eneg = c === 0x2d;
      c = b[++i];
    }
    if (!isDigit(c)) throw BAIL;
    let e = 0;
    do {
      if (e < 100_000) e = e * 10 + (c! - 0x30);
      c = b[++i];
    } while (c !== undefined && c >= 0x30 && c <= 0x39);
    scale += eneg ? -e : e;
  }
  let v: number;
  if (digits <= 15 && scale >= -22 && scale <= 22) {
    v = scale === 0 ? m : scale > 0 ? m * POW10[scale]! : m / POW10[-scale]!;
    if (neg) v = -v;
  } else if (scale === 0 && digits <= 16 && m < TWO_POW_53) {
    // Below 2^53 every step of `m` was exact (and a rounded `m` of 2^53 or more means the literal is).
    v = neg ? -m : m;
  } else if (integer && digits > 15) {
    // 2^53 itself is exact; past it, a double may round (2^53 + 1 reads as 2^53) and a rounded `m` cannot
    // tell: the reference keeps the literal's digits.
    if (digits !== 16 || m !== TWO_POW_53 || b.toString('latin1', neg ? s + 1 : s, i) !== '9007199254740992')
      throw BAIL;
    v = neg ? -m : m;
  } else {
    v = Number(b.toString('latin1', s, i));
    // A literal past a double's range (`1e400`): the reference reports it as an invalid value.
    if (!Number.isFinite(v)) throw BAIL;
  }
  out[at] = v;
  return i;
}

/** Index of the closing quote of the string whose content starts at `i` (escapes honoured, checked). */
export function stringEnd(b: Uint8Array, i: number): number {
  const n = b.length;
  for (;;) {
    if (i >= n) throw BAIL;
    const c = b[i]!;
    if (c === QUOTE) return i;
    if (c === BACKSLASH) {
      const e = b[i + 1];
      if (e === 0x75) {
        for (let k = i + 2; k < i + 6; k++) if (hexValue(b[k]) < 0) throw BAIL;
        i += 6;
      } else if (
        e === QUOTE ||
        e === BACKSLASH ||
        e === 0x2f ||
        e === 0x62 ||
        e === 0x66 ||
        e === 0x6e ||
        e === 0x72 ||
        e === 0x74
      ) {
        i += 2;
      } else throw BAIL;
    } else if (c < 0x20) throw BAIL;
    else i++;
  }
}

export function hexValue(c: number | undefined): number {
  if (c === undefined) return -1;
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  if (l >= 0x61 && l <= 0x66) return l - 0x61 + 10;
  return -1;
}

function hex4(b: Uint8Array, i: number): number {
  return (hexValue(b[i]) << 12) | (hexValue(b[i + 1]) << 8) | (hexValue(b[i + 2]) << 4) | hexValue(b[i + 3]);
}

/**
 * Decodes the string content `b[s, e)` (escapes already checked by `stringEnd`) into `out` at `o`, as
 * `Buffer#write` would encode the string `JSON.parse` makes of it; returns the new end in `out`. The
 * caller reserves `e - s` bytes: no escape decodes to more bytes than it takes.
 */
export function unescapeInto(b: Uint8Array, s: number, e: number, out: Uint8Array, o: number): number {
  let i = s;
  while (i < e) {
    const c = b[i]!;
    if (c !== BACKSLASH) {
      out[o++] = c;
      i++;
      continue;
    }
    const from = o;
    o = escapeInto(b, i, out, o);
    i += escapeLength(b, i, o - from);
  }
  return o;
}

/**
 * Decodes the `\uXXXX` escape at `b[i]` (and a low surrogate escape after a high one) into `out` at `o`
 * as `Buffer#write` encodes it (a lone surrogate as U+FFFD); returns the new end. It took 12 input bytes
 * when it wrote 4 (only a surrogate pair does), else 6.
 */
function unicodeEscape(b: Uint8Array, i: number, out: Uint8Array, o: number): number {
  let u = hex4(b, i + 2);
  if (u < 0) throw BAIL;
  if (u >= 0xd800 && u <= 0xdbff && b[i + 6] === BACKSLASH && b[i + 7] === 0x75) {
    const lo = hex4(b, i + 8);
    if (lo >= 0xdc00 && lo <= 0xdfff) {
      u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
      out[o++] = 0xf0 | (u >> 18);
      out[o++] = 0x80 | ((u >> 12) & 0x3f);
      out[o++] = 0x80 | ((u >> 6) & 0x3f);
      out[o++] = 0x80 | (u & 0x3f);
      return o;
    }
  }
  if (u >= 0xd800 && u <= 0xdfff) {
    loneSurrogate = true;
    u = 0xfffd;
  }
  if (u < 0x80) out[o++] = u;
  else if (u < 0x800) {
    out[o++] = 0xc0 | (u >> 6);
    out[o++] = 0x80 | (u & 0x3f);
  } else {
    out[o++] = 0xe0 | (u >> 12);
    out[o++] = 0x80 | ((u >> 6) & 0x3f);
    out[o++] = 0x80 | (u & 0x3f);
  }
  return o;
}

/** Returned by a `walkMembers` callback to stop the walk there (and by `walkMembers` then). */
export const STOP = -1;

/**
 * Walks the object that is the whole page: for each member, `value(keyStart, keyEnd, at)` reads or skips
 * its value at `b[at]` and returns the index after it, or STOP. Returns the index after the closing brace.
 * An escaped key could spell a member we read ("r\u006fws"): such pages are left to `JSON.parse`.
 * `after` resumes a walk that stopped: the index after the value of the member it stopped at.
 */
export function walkMembers(
  b: Buffer,
  value: (keyStart: number, keyEnd: number, at: number) => number,
  after?: number,
): number {
  let i: number;
  if (after === undefined) {
    i = skipWs(b, 0);
    if (b[i] !== 0x7b) throw BAIL;
    i = skipWs(b, i + 1);
    if (b[i] === 0x7d) throw BAIL;
  } else {
    i = skipWs(b, after);
    if (b[i] === 0x7d) return i + 1;
    if (b[i] !== COMMA) throw BAIL;
    i = skipWs(b, i + 1);
  }
  for (;;) {
    if (b[i] !== QUOTE) throw BAIL;
    const ks = i + 1;
    const ke = stringEnd(b, ks);
    i = skipWs(b, ke + 1);
    if (b[i] !== 0x3a) throw BAIL;
    for (let k = ks; k < ke; k++) if (b[k] === BACKSLASH) throw BAIL;
    const after = value(ks, ke, skipWs(b, i + 1));
    if (after === STOP) return STOP;
    i = skipWs(b, after);
    if (b[i] === COMMA) i = skipWs(b, i + 1);
    else if (b[i] === 0x7d) return i + 1;
    else throw BAIL;
  }
}

/**
 * Skips any JSON value at `b[i]`, checking its syntax as strictly as `JSON.parse`; returns the index
 * after it. Used for envelope members we do not decode.
 */
export function skipValue(b: Buffer, i: number, depth: number): number {
  if (depth > 512) throw BAIL;
  const c = b[i];
  if (c === QUOTE) return stringEnd(b, i + 1) + 1;
  if (c === 0x7b || c === 0x5b) {
    const close = c === 0x7b ? 0x7d : 0x5d;
    i = skipWs(b, i + 1);
    if (b[i] === close) return i + 1;
    for (;;) {
      if (c === 0x7b) {
        if (b[i] !== QUOTE) throw BAIL;
        i = skipWs(b, stringEnd(b, i + 1) + 1);
        if (b[i] !== 0x3a) throw BAIL;
        i = skipWs(b, i + 1);
      }
      i = skipWs(b, skipValue(b, i, depth + 1));
      if (b[i] === COMMA) i = skipWs(b, i + 1);
      else if (b[i] === close) return i + 1;
      else throw BAIL;
    }
  }
  if (c === 0x2d || isDigit(c)) return scanNumber(b, i, numberScratch, 0);
  return literalEnd(b, i);
}

/** The end of `true`, `false` or `null` at `b[i]`. */
export function literalEnd(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c === 0x74 && b[i + 1] === 0x72 && b[i + 2] === 0x75 && b[i + 3] === 0x65) return i + 4;
  if (c === 0x66 && b[i + 1] === 0x61 && b[i + 2] === 0x6c && b[i + 3] === 0x73 && b[i + 4] === 0x65)
    return i + 5;
  if (c === 0x6e && b[i + 1] === 0x75 && b[i + 2] === 0x6c && b[i + 3] === 0x6c) return i + 4;
  throw BAIL;
}

export function isNullAt(b: Uint8Array, i: number): boolean {
  return b[i] === 0x6e && b[i + 1] === 0x75 && b[i + 2] === 0x6c && b[i + 3] === 0x6c;
}

/** Reads any scalar JSON value as `JSON.parse` would into `generic`; returns the index after it. */
export function readGeneric(b: Buffer, i: number): number {
  const c = b[i];
  if (c === QUOTE) {
    const e = stringEnd(b, i + 1);
    generic = JSON.parse(b.toString('utf8', i, e + 1)) as string;
    return e + 1;
  }
  if (c === 0x2d || isDigit(c)) {
    const end = scanNumber(b, i, numberScratch, 0);
    generic = numberScratch[0]!;
    return end;
  }
  const end = literalEnd(b, i);
  generic = c === 0x74 ? true : c === 0x66 ? false : null;
  return end;
}

/**
 * Decodes the escape at `b[i]` (a backslash, its sequence checked here) into `out` at `o`, which has
 * room for 4 bytes; returns the new end. The input bytes taken are `escapeLength` of the bytes written.
 */
export function escapeInto(b: Uint8Array, i: number, out: Uint8Array, o: number): number {
  const x = b[i + 1];
  if (x === 0x6e) out[o++] = 0x0a;
  else if (x === QUOTE || x === BACKSLASH || x === 0x2f) out[o++] = x;
  else if (x === 0x74) out[o++] = 0x09;
  else if (x === 0x72) out[o++] = 0x0d;
  else if (x === 0x62) out[o++] = 0x08;
  else if (x === 0x66) out[o++] = 0x0c;
  else if (x === 0x75) return unicodeEscape(b, i, out, o);
  else throw BAIL;
  return o;
}

/**
 * The input bytes of the escape at `b[i]` that `escapeInto` decoded into `written` bytes: 2, or for a
 * `\u` escape 12 when it wrote 4 (only a surrogate pair does), else 6. Computed by the caller rather than
 * left in a module variable: read across modules in the string loop, that cost 4 % (bench, job_listings).
 */
export function escapeLength(b: Uint8Array, i: number, written: number): number {
  return b[i + 1] !== 0x75 ? 2 : written === 4 ? 12 : 6;
}

/** An envelope member that must be an integer (as `parseTablePage` requires). */
export function integer(b: Buffer, [s, e]: [number, number]): number {
  const v: unknown = JSON.parse(b.toString('utf8', s, e));
  if (typeof v !== 'number' || !Number.isInteger(v)) throw BAIL;
  return v;
}

/**
 * The bytes of little-endian word `v` that are a quote, a backslash or a control character, as a mask
 * with each such byte's high bit set (SWAR: a byte's high bit survives `(x - 0x01) & ~x` only when x was
 * 0). The lowest flagged byte is always a real one (false alarms only sit above it, from the borrow):
 * `firstFlagged(mask)` is its index in the word. The test both table-JSON decoders scan strings with.
 */
export function specialBytes(v: number): number {
  const q = v ^ 0x22222222;
  const e = v ^ 0x5c5c5c5c;
  return (((q - 0x01010101) & ~q) | ((e - 0x01010101) & ~e) | ((v - 0x20202020) & ~v)) & 0x80808080;
}

/** The index (0-3) of the lowest byte flagged in a non-zero `specialBytes` mask. */
export function firstFlagged(mask: number): number {
  return (31 - Math.clz32(mask & -mask)) >> 3;
}

/**
 * Copies the plain bytes of a JSON string from `i` (before `stop`) to `out` at `o`, four at a time while
 * none of them is special (`specialBytes`). Returns how many bytes were copied: input and output advance
 * together, and the byte at `i + k` (if before `stop`) is special or within the last three. `out` must
 * have room for four bytes past every position before `stop`: all four are written, only those before a
 * special byte count. One loop for both table-JSON decoders (columns and row objects): the hottest of
 * either.
 */
export function copyPlainRun(view: DataView, i: number, stop: number, out: DataView, o: number): number {
  const from = i;
  while (i + 4 <= stop) {
    const v = view.getInt32(i, true);
    const special = specialBytes(v);
    out.setInt32(o + (i - from), v, true);
    if (special !== 0) return i - from + firstFlagged(special);
    i += 4;
  }
  return i - from;
}
