/**
 * Table JSON straight from bytes into columns, without `JSON.parse` and without a JS value per cell.
 *
 * A page body is scanned once: the envelope's small members (`total`, `count`, `start`, `fields`) are
 * located and read with `JSON.parse` on their slices; `rows` is decoded in place, each value written into
 * its column per the plan: string bytes copied (escapes decoded on the fly), `YYYYMMDD` digits turned
 * into day numbers by arithmetic, numbers parsed from their digits (Clinger's exact fast path, else
 * `Number()` of the literal).
 *
 * The contract is "the same as the reference, or nothing": `decode()` returns `undefined` whenever the
 * page is anything but ordinary (not valid UTF-8, any JSON syntax error, a duplicate member, a row of the
 * wrong width, a value its column would reject, an escaped key, a lone surrogate in a dictionary column,
 * ...). The caller then takes the reference path (`parseTablePage` + the row converters), which produces
 * the same result or the same error. So rare cases cost a second parse, never a different answer.
 */

import { isUtf8 } from 'node:buffer';
import type { DecodedColumn, DecodedColumns } from '../convert/column-data.js';
import { dateDaysAt, timeOfDayMsAt } from '../convert/dates.js';
import type { ColumnPlan } from '../convert/plan.js';
import { toBooleanBit, toDateDays, toNumber, toText, toTimestampMs } from '../convert/values.js';
import type { PageRef } from '../core/errors.js';
import type { FieldDescriptor } from '../core/wire.js';
import {
  BOOLEAN,
  DATE,
  DATETIME,
  DICT,
  decodedColumn,
  EMPTY_F64,
  EMPTY_I32,
  EMPTY_U8,
  ensure,
  grow,
  growText,
  kindCode,
  NUMBER,
  STRING_HEADROOM,
  stringBytesGuess,
  UTF8,
} from './page-columns.js';
import type { TableEnvelope } from './table-json.js';

/** A page decoded to columns, with the envelope members the page fetcher checks. */
export interface FastTablePage extends DecodedColumns {
  readonly total: number;
  readonly count: number;
  readonly start: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const MS_PER_DAY = 86_400_000;
const TWO_POW_53 = 9_007_199_254_740_992;
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k);

/*
 * The scanner's module state, in one place. The scanning functions return the index they stopped at and
 * leave their second result here, so the hot loop allocates nothing per value (no result objects or
 * tuples). Each is written by one function and read by its caller right after the call; nothing here
 * outlives one `decode()`, and decoding is synchronous, so decoders never see each other's values.
 */
/**
 * The value of the last number scanned (set by `scanNumber`). A typed array, not a `let`: a double stored
 * in a module variable is boxed (a heap allocation per number).
 */
const scanned = new Float64Array(1);
/** Set by `unescapeInto` when a lone surrogate was written (as U+FFFD, like `Buffer#write`). */
let loneSurrogate = false;
/** Input bytes taken by the last `unicodeEscape` (6, or 12 for a surrogate pair) or `escapeInto`. */
let consumed = 6;
/** The last value read by `readGeneric`. */
let generic: string | number | boolean | null = null;
/** Where `#rows` stopped (the index after the `rows` array). */
let rowsEnd = 0;

/** Thrown to abandon a page for the reference path; caught in `decode()` and never escapes. */
class Bail extends Error {}
const BAIL = new Bail('not an ordinary page');

function isWs(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipWs(b: Uint8Array, i: number): number {
  while (isWs(b[i])) i++;
  return i;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}

/**
 * Scans a JSON number at `b[i]` (strict JSON grammar), leaving its value in `scanned`; returns the index
 * after it. The value is exactly `JSON.parse`'s: integers and short decimals by exact arithmetic (one
 * correctly rounded operation on exact operands), anything longer through `Number()` of the literal. An
 * integer literal outside ±2^53 declines the page: only the reference keeps its digits.
 */
function scanNumber(b: Buffer, i: number): number {
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
  scanned[0] = v;
  return i;
}

/** Index of the closing quote of the string whose content starts at `i` (escapes honoured, checked). */
function stringEnd(b: Uint8Array, i: number): number {
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

function hexValue(c: number | undefined): number {
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
function unescapeInto(b: Uint8Array, s: number, e: number, out: Uint8Array, o: number): number {
  let i = s;
  while (i < e) {
    const c = b[i]!;
    if (c !== BACKSLASH) {
      out[o++] = c;
      i++;
      continue;
    }
    const x = b[i + 1]!;
    i += 2;
    switch (x) {
      case 0x6e:
        out[o++] = 0x0a;
        break;
      case 0x74:
        out[o++] = 0x09;
        break;
      case 0x72:
        out[o++] = 0x0d;
        break;
      case 0x62:
        out[o++] = 0x08;
        break;
      case 0x66:
        out[o++] = 0x0c;
        break;
      case 0x75: {
        let u = hex4(b, i);
        i += 4;
        if (u >= 0xd800 && u <= 0xdbff && b[i] === BACKSLASH && b[i + 1] === 0x75) {
          const lo = hex4(b, i + 2);
          if (lo >= 0xdc00 && lo <= 0xdfff) {
            i += 6;
            u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
            out[o++] = 0xf0 | (u >> 18);
            out[o++] = 0x80 | ((u >> 12) & 0x3f);
            out[o++] = 0x80 | ((u >> 6) & 0x3f);
            out[o++] = 0x80 | (u & 0x3f);
            break;
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
        break;
      }
      default:
        out[o++] = x; // \" \\ \/
    }
  }
  return o;
}

/**
 * Decodes the `\uXXXX` escape at `b[i]` (and a low surrogate escape after a high one) into `out` at `o`
 * as `Buffer#write` encodes it (a lone surrogate as U+FFFD); returns the new end, `consumed` the bytes read.
 */
function unicodeEscape(b: Uint8Array, i: number, out: Uint8Array, o: number): number {
  let u = hex4(b, i + 2);
  if (u < 0) throw BAIL;
  consumed = 6;
  if (u >= 0xd800 && u <= 0xdbff && b[i + 6] === BACKSLASH && b[i + 7] === 0x75) {
    const lo = hex4(b, i + 8);
    if (lo >= 0xdc00 && lo <= 0xdfff) {
      consumed = 12;
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
const STOP = -1;

/**
 * Walks the object that is the whole page: for each member, `value(keyStart, keyEnd, at)` reads or skips
 * its value at `b[at]` and returns the index after it, or STOP. Returns the index after the closing brace.
 * An escaped key could spell a member we read ("r\u006fws"): such pages are left to `JSON.parse`.
 */
function walkMembers(b: Buffer, value: (keyStart: number, keyEnd: number, at: number) => number): number {
  let i = skipWs(b, 0);
  if (b[i] !== 0x7b) throw BAIL;
  i = skipWs(b, i + 1);
  if (b[i] === 0x7d) throw BAIL;
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
function skipValue(b: Buffer, i: number, depth: number): number {
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
  if (c === 0x2d || isDigit(c)) return scanNumber(b, i);
  return literalEnd(b, i);
}

/** The end of `true`, `false` or `null` at `b[i]`. */
function literalEnd(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c === 0x74 && b[i + 1] === 0x72 && b[i + 2] === 0x75 && b[i + 3] === 0x65) return i + 4;
  if (c === 0x66 && b[i + 1] === 0x61 && b[i + 2] === 0x6c && b[i + 3] === 0x73 && b[i + 4] === 0x65)
    return i + 5;
  if (c === 0x6e && b[i + 1] === 0x75 && b[i + 2] === 0x6c && b[i + 3] === 0x6c) return i + 4;
  throw BAIL;
}

function isNullAt(b: Uint8Array, i: number): boolean {
  return b[i] === 0x6e && b[i + 1] === 0x75 && b[i + 2] === 0x6c && b[i + 3] === 0x6c;
}

/** Reads any scalar JSON value as `JSON.parse` would into `generic`; returns the index after it. */
function readGeneric(b: Buffer, i: number): number {
  const c = b[i];
  if (c === QUOTE) {
    const e = stringEnd(b, i + 1);
    generic = JSON.parse(b.toString('utf8', i, e + 1)) as string;
    return e + 1;
  }
  if (c === 0x2d || isDigit(c)) {
    const end = scanNumber(b, i);
    generic = scanned[0]!;
    return end;
  }
  const end = literalEnd(b, i);
  generic = c === 0x74 ? true : c === 0x66 ? false : null;
  return end;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** A page-local dictionary keyed by UTF-8 bytes: open addressing over FNV-1a hashes. */
class ByteDictionary {
  slots = new Int32Array(256).fill(-1);
  hashes = new Int32Array(128);
  bytes = new Uint8Array(4096);
  offsets = new Int32Array(129);
  count = 0;

  /** The id of `b[s, e)`, added when new. */
  id(b: Uint8Array, s: number, e: number): number {
    let h = FNV_OFFSET;
    for (let k = s; k < e; k++) h = Math.imul(h ^ b[k]!, FNV_PRIME);
    const mask = this.slots.length - 1;
    const len = e - s;
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const id = this.slots[slot]!;
      if (id < 0) return this.#add(b, s, e, h, slot);
      if (this.hashes[id] !== h) continue;
      const at = this.offsets[id]!;
      if (this.offsets[id + 1]! - at !== len) continue;
      let k = 0;
      while (k < len && this.bytes[at + k] === b[s + k]) k++;
      if (k === len) return id;
    }
  }

  #add(b: Uint8Array, s: number, e: number, h: number, slot: number): number {
    const id = this.count++;
    if (id + 1 >= this.hashes.length) {
      this.hashes = grow(this.hashes, id + 2, id);
      this.offsets = grow(this.offsets, id + 2, id + 1);
    }
    const at = this.offsets[id]!;
    if (at + (e - s) > this.bytes.length) this.bytes = grow(this.bytes, at + (e - s), at);
    this.bytes.set(b.subarray(s, e), at);
    this.offsets[id + 1] = at + (e - s);
    this.hashes[id] = h;
    this.slots[slot] = id;
    if (this.count * 2 > this.slots.length) this.#rehash();
    return id;
  }

  #rehash(): void {
    const slots = new Int32Array(this.slots.length * 2).fill(-1);
    const mask = slots.length - 1;
    for (let id = 0; id < this.count; id++) {
      let slot = this.hashes[id]! & mask;
      while (slots[slot]! >= 0) slot = (slot + 1) & mask;
      slots[slot] = id;
    }
    this.slots = slots;
  }

  entries(): string[] {
    const buf = Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
    const out = new Array<string>(this.count);
    for (let id = 0; id < this.count; id++)
      out[id] = buf.toString('utf8', this.offsets[id], this.offsets[id + 1]);
    return out;
  }
}

/**
 * Decodes table-JSON pages of one result into columns. One decoder per stream: it remembers the last
 * page's `fields` bytes (to check the next pages' cheaply) and the string bytes per row (to size buffers).
 */
export class FastTableDecoder {
  readonly #kinds: Int8Array;
  readonly #ids: readonly string[];
  readonly #exactStrings: boolean;
  #fields: Buffer | undefined;
  readonly #spare: ColumnBuffers[] = [];
  readonly #bodies: Buffer[] = [];
  /** The buffers of the page being decoded (returned to `#spare` when it is declined). */
  #building: ColumnBuffers | undefined;
  /** Per column: string bytes per row seen on the last page (a sizing hint). */
  readonly #bytesPerRow: Float64Array;

  /**
   * @param options.strings `'utf8'` (Arrow output): a lone surrogate escape is stored as U+FFFD, as
   * `Buffer#write` stores the JS string. `'exact'` (row objects, whose strings are JS strings): pages with
   * one are declined, since U+FFFD would not give back the string `JSON.parse` makes.
   */
  constructor(plan: readonly ColumnPlan[], options: { readonly strings?: 'utf8' | 'exact' } = {}) {
    this.#exactStrings = options.strings === 'exact';
    this.#kinds = Int8Array.from(plan, kindCode);
    this.#ids = plan.map((c) => c.id);
    this.#bytesPerRow = new Float64Array(plan.length).fill(32);
  }

  /**
   * The page as columns, or `undefined` when it is not an ordinary page (the caller must then use the
   * reference path, which will produce the same rows or the right error).
   */
  decode(body: Buffer, where: PageRef): FastTablePage | undefined {
    if (this.#kinds.length === 0 || !isUtf8(body)) return undefined;
    try {
      return this.#decode(body, where);
    } catch (error) {
      if (this.#building && this.#spare.length < MAX_SPARE) this.#spare.push(this.#building);
      if (error instanceof Bail || error instanceof RangeError || error instanceof SyntaxError)
        return undefined;
      throw error;
    } finally {
      this.#building = undefined;
    }
  }

  #decode(b: Buffer, where: PageRef): FastTablePage {
    let rows: DecodedColumns | undefined;
    let total: [number, number] | undefined;
    let count: [number, number] | undefined;
    let start: [number, number] | undefined;
    let fields: [number, number] | undefined;
    const end = walkMembers(b, (ks, ke, s) => {
      switch (ke - ks >= 4 && ke - ks <= 6 ? b.toString('latin1', ks, ke) : '') {
        case 'rows':
          if (rows) throw BAIL;
          rows = this.#rows(b, s, where);
          return rowsEnd;
        case 'total':
          if (total) throw BAIL;
          total = [s, skipValue(b, s, 0)];
          return total[1];
        case 'count':
          if (count) throw BAIL;
          count = [s, skipValue(b, s, 0)];
          return count[1];
        case 'start':
          if (start) throw BAIL;
          start = [s, skipValue(b, s, 0)];
          return start[1];
        case 'fields':
          if (fields) throw BAIL;
          fields = [s, skipValue(b, s, 0)];
          return fields[1];
        default:
          return skipValue(b, s, 0);
      }
    });
    if (skipWs(b, end) !== b.length) throw BAIL;
    if (!rows || !total || !count || !start || !fields) throw BAIL;
    this.#checkFields(b, fields[0], fields[1]);
    return {
      length: rows.length,
      columns: rows.columns,
      total: integer(b, total),
      count: integer(b, count),
      start: integer(b, start),
    };
  }

  /** The page's `fields` must be descriptors with the plan's ids, in order; unchanged bytes pass at once. */
  #checkFields(b: Buffer, s: number, e: number): void {
    const slice = b.subarray(s, e);
    if (this.#fields?.equals(slice)) return;
    const fields: unknown = JSON.parse(slice.toString('utf8'));
    if (!Array.isArray(fields) || fields.length !== this.#ids.length) throw BAIL;
    for (let j = 0; j < fields.length; j++) {
      const f: unknown = fields[j];
      if (typeof f !== 'object' || f === null || Array.isArray(f)) throw BAIL;
      if ((f as { id?: unknown }).id !== this.#ids[j]) throw BAIL;
    }
    this.#fields = Buffer.from(slice);
  }

  /** Decodes the `rows` array at `b[i]` into columns; leaves the index after it in `rowsEnd`. */
  #rows(b: Buffer, i: number, where: PageRef): DecodedColumns {
    if (b[i] !== 0x5b) throw BAIL;
    const kinds = this.#kinds;
    const width = kinds.length;
    const cap = Math.max(16, Math.min(where.limit, 16_384));
    // Buffers of a page already appended to the builder are reused (see `recycle()`): a page's worth
    // of fresh allocations per page is what keeps the allocator's footprint (RSS) high.
    const spare = this.#spare.pop();
    const f64: Float64Array[] = [];
    const i32: Int32Array[] = [];
    const u8: Uint8Array[] = [];
    const valid: Uint8Array[] = [];
    const dicts: ByteDictionary[] = [];
    for (let j = 0; j < width; j++) {
      const k = kinds[j]!;
      f64.push(k === NUMBER || k === DATETIME ? reuse(spare?.f64[j], cap, Float64Array) : EMPTY_F64);
      i32.push(
        k === DATE || k === UTF8 || k === DICT
          ? reuse(spare?.i32[j], k === UTF8 ? cap + 1 : cap, Int32Array)
          : EMPTY_I32,
      );
      u8.push(
        k === BOOLEAN
          ? reuse(spare?.u8[j], cap, Uint8Array)
          : k === UTF8
            ? reuse(spare?.u8[j], stringBytesGuess(this.#bytesPerRow[j]!, cap, b.length), Uint8Array)
            : EMPTY_U8,
      );
      valid.push(k === BOOLEAN || k === DICT ? EMPTY_U8 : reuse(spare?.valid[j], cap, Uint8Array));
      dicts.push(k === DICT ? new ByteDictionary() : EMPTY_DICT);
    }
    this.#building = { f64, i32, u8, valid };
    // Filled by push like the arrays above: an array made by `map` got another hidden class on some
    // pages, and every such page threw the optimized decoder away ("wrong map" deopts).
    const views: DataView[] = [];
    for (const a of u8) views.push(new DataView(a.buffer, a.byteOffset, a.byteLength));
    const page = new PageBuffers(
      kinds,
      cap,
      f64,
      i32,
      u8,
      valid,
      views,
      new Int32Array(width),
      dicts,
      new DataView(b.buffer, b.byteOffset, b.byteLength),
      where.limit,
    );
    loneSurrogate = false;
    i = skipWs(b, i + 1);
    if (b[i] === 0x5d) {
      rowsEnd = i + 1;
      return this.#columns(0, f64, i32, u8, valid, dicts);
    }
    const r = decodeRows(b, i, page);
    if (loneSurrogate && this.#exactStrings) throw BAIL;
    for (let j = 0; j < width; j++) if (kinds[j] === UTF8) this.#bytesPerRow[j] = page.strPos[j]! / r;
    return this.#columns(r, f64, i32, u8, valid, dicts);
  }

  /**
   * Hands back the buffers of a page returned by `decode()` once its rows have been appended (copied)
   * to a builder: the next page decodes into them. The page must not be read afterwards.
   */
  recycle(page: DecodedColumns): void {
    if (this.#spare.length >= MAX_SPARE || page.columns.length !== this.#kinds.length) return;
    const set: ColumnBuffers = { f64: [], i32: [], u8: [], valid: [] };
    for (const c of page.columns) {
      set.f64.push(c.kind === 'number' || c.kind === 'datetime' ? c.values : EMPTY_F64);
      set.i32.push(
        c.kind === 'date'
          ? c.values
          : c.kind === 'utf8'
            ? c.offsets
            : c.kind === 'dictionary'
              ? c.ids
              : EMPTY_I32,
      );
      set.u8.push(c.kind === 'boolean' ? c.values : c.kind === 'utf8' ? c.bytes : EMPTY_U8);
      set.valid.push(c.kind === 'boolean' || c.kind === 'dictionary' ? EMPTY_U8 : c.valid);
    }
    this.#spare.push(set);
  }

  /** A buffer for a page body of `size` bytes, from the spare ones when possible; see `releaseBody()`. */
  bodyBuffer(size: number): Buffer {
    const k = this.#bodies.findIndex((b) => b.length >= size && b.length <= 2 * size);
    if (k >= 0) return this.#bodies.splice(k, 1)[0]!;
    return Buffer.allocUnsafeSlow(Math.ceil(size * 1.125));
  }

  /** Gives back a buffer from `bodyBuffer()` once nothing reads it any more. */
  releaseBody(buffer: Buffer): void {
    if (this.#bodies.length < MAX_SPARE) this.#bodies.push(buffer);
  }

  #columns(
    length: number,
    f64: Float64Array[],
    i32: Int32Array[],
    u8: Uint8Array[],
    valid: Uint8Array[],
    dicts: ByteDictionary[],
  ): DecodedColumns {
    const columns: DecodedColumn[] = [];
    for (let j = 0; j < this.#kinds.length; j++)
      columns.push(
        decodedColumn(this.#kinds[j]!, f64[j]!, i32[j]!, u8[j]!, valid[j]!, () => dicts[j]!.entries()),
      );
    return { length, columns };
  }
}

/**
 * The buffers of the page being decoded, as the row loop and the cell readers share them. The arrays are
 * the decoder's own (`#rows` hands them on to `#columns`): a buffer that grows is replaced in place.
 */
class PageBuffers {
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
    readonly body: DataView,
    /** Rows the page was asked for (it may hold fewer). */
    readonly rows: number,
  ) {}
}

/*
 * The row loop, and a reader per column kind but strings. Small pages are decoded by code V8 is still
 * learning, and one function for every kind (as this was) took 30-60 ms of TurboFan per compile; any path
 * its first pages had not taken (the page's end, a first null, a first escape, a kind the previous
 * dataset lacked) threw it away, to be interpreted (~10x slower) until compiled again: ten compiles in
 * bench/wan.js's fan-out (121 queries of three datasets). Small functions compile in a few ms, and a
 * deopt costs only the one it happens in. Strings stay inline (their rare paths are calls): a call per
 * string cost 5-10 % on string-heavy pages once warm.
 */

/**
 * Decodes the rows from `b[i]` (the first row's `[`) to the array's `]`; returns the number of rows and
 * leaves the index after the `]` in `rowsEnd`.
 */
function decodeRows(b: Buffer, i: number, page: PageBuffers): number {
  const { kinds, f64, i32, u8, valid, dicts, views, strPos } = page;
  const bodyView = page.body;
  const width = kinds.length;
  const n = b.length;
  let r = 0;
  for (;;) {
    if (b[i] !== 0x5b) throw BAIL;
    if (r === page.cap) growRows(page, r);
    i++;
    for (let j = 0; j < width; j++) {
      let c = b[i];
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
        i = skipWs(b, i);
        c = b[i];
      }
      switch (kinds[j]) {
        case UTF8: {
          // Inline, unlike the other kinds: a call per string cost 7-10 % on string-heavy pages.
          if (c !== QUOTE) {
            i = utf8Other(b, i, c, j, r, page);
            break;
          }
          // One pass: scan, copy and decode escapes together. No escape decodes to more bytes than it
          // takes, so the output never runs ahead of the input: while `i < stop` there is room for
          // the next byte (`stop` also ends at the body's end); an escape checks for its 4 bytes.
          let out = u8[j]!;
          let outView = views[j]!;
          let o = strPos[j]!;
          i++;
          let stop = Math.min(n, i + (out.length - o));
          for (;;) {
            // Four bytes at a time while none of them is a quote, a backslash or a control character
            // (SWAR: a byte's high bit survives `(x - 0x01) & ~x` only when x was 0). The lowest
            // flagged byte is always a real one (false alarms only sit above it, from the borrow), so
            // the bytes before it are kept and the byte path below starts right at it.
            while (i + 4 <= stop) {
              const v = bodyView.getInt32(i, true);
              const q = v ^ 0x22222222;
              const e = v ^ 0x5c5c5c5c;
              const special =
                (((q - 0x01010101) & ~q) | ((e - 0x01010101) & ~e) | ((v - 0x20202020) & ~v)) & 0x80808080;
              // All four are written (`stop` leaves room); only those before a special byte count.
              outView.setInt32(o, v, true);
              if (special !== 0) {
                const k = (31 - Math.clz32(special & -special)) >> 3;
                i += k;
                o += k;
                break;
              }
              i += 4;
              o += 4;
            }
            if (i >= stop) {
              if (i >= n) throw BAIL;
              out = growString(page, j, o, r);
              outView = views[j]!;
              stop = Math.min(n, i + (out.length - o));
            }
            c = b[i]!;
            if (c === QUOTE) break;
            if (c === BACKSLASH) {
              if (o + 4 > out.length) {
                out = growString(page, j, o, r);
                outView = views[j]!;
                stop = Math.min(n, i + (out.length - o));
              }
              o = escapeInto(b, i, out, o);
              i += consumed;
            } else if (c < 0x20) throw BAIL;
            else {
              out[o++] = c;
              i++;
            }
          }
          i++;
          strPos[j] = o;
          i32[j]![r + 1] = o;
          valid[j]![r] = 1;
          break;
        }
        case NUMBER:
          i = numberCell(b, i, c, f64[j]!, valid[j]!, r);
          break;
        case DATE:
          i = dateCell(b, i, c, i32[j]!, valid[j]!, r);
          break;
        case DATETIME:
          i = datetimeCell(b, i, c, f64[j]!, valid[j]!, r);
          break;
        case BOOLEAN:
          i = booleanCell(b, i, c, u8[j]!, r);
          break;
        case DICT:
          i = dictCell(b, i, c, i32[j]!, dicts[j]!, r);
          break;
      }
      c = b[i];
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
        i = skipWs(b, i);
        c = b[i];
      }
      if (j < width - 1) {
        if (c !== COMMA) throw BAIL;
        i++;
      } else if (c !== 0x5d) throw BAIL;
    }
    i++;
    r++;
    i = skipWs(b, i);
    // Both tests (and the `+ 1`) on every row: the loop is often compiled in the middle of the first
    // page, and an operation first made at its last row would throw that code away there.
    const c = b[i];
    const more = c === COMMA;
    const end = c === 0x5d;
    const after = i + 1;
    if (more) i = skipWs(b, after);
    else if (end) {
      rowsEnd = after;
      return r;
    } else throw BAIL;
  }
}

/** Doubles every column's room for rows (recycled buffers may already be longer: only those that are not). */
function growRows(page: PageBuffers, r: number): void {
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
function growString(page: PageBuffers, j: number, o: number, r: number): Uint8Array {
  const expected =
    r === 0 ? 0 : Math.min(page.body.byteLength, Math.ceil((o / r) * page.rows * STRING_HEADROOM));
  const out = growText(page.u8[j]!, Math.max(o + 4096, expected), o);
  page.u8[j] = out;
  page.views[j] = new DataView(out.buffer, out.byteOffset, out.byteLength);
  return out;
}

/**
 * Decodes the escape at `b[i]` (a backslash, its sequence checked here) into `out` at `o`, which has
 * room for 4 bytes; returns the new end, `consumed` the input bytes taken.
 */
function escapeInto(b: Buffer, i: number, out: Uint8Array, o: number): number {
  const x = b[i + 1];
  consumed = 2;
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

/** A `string` cell that is not a string literal (`c` is `b[i]`): null, or a scalar as its text. */
function utf8Other(
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
function numberCell(
  b: Buffer,
  i: number,
  c: number | undefined,
  values: Float64Array,
  valid: Uint8Array,
  r: number,
): number {
  if (c === 0x2d || (c !== undefined && c >= 0x30 && c <= 0x39)) {
    i = scanNumber(b, i);
    values[r] = scanned[0]!;
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
function dateCell(
  b: Buffer,
  i: number,
  c: number | undefined,
  values: Int32Array,
  valid: Uint8Array,
  r: number,
): number {
  if (c === QUOTE) {
    let days = Number.NaN;
    let end = i;
    if (b[i + 9] === QUOTE) {
      days = dateDaysAt(b, i + 1);
      end = i + 10;
    } else if (b[i + 17] === QUOTE && isMidnight(b, i + 9)) {
      days = dateDaysAt(b, i + 1);
      end = i + 18;
    }
    if (!Number.isNaN(days)) {
      values[r] = days;
      valid[r] = 1;
      return end;
    }
  }
  return otherTimeCell(b, i, c, values, valid, r, toDateDays);
}

/** A `datetime` cell (ms since the epoch); returns the index after it. */
function datetimeCell(
  b: Buffer,
  i: number,
  c: number | undefined,
  values: Float64Array,
  valid: Uint8Array,
  r: number,
): number {
  if (c === QUOTE) {
    let ms = Number.NaN;
    let end = i;
    if (b[i + 17] === QUOTE && b[i + 9] === 0x54 && b[i + 16] === 0x5a) {
      ms = dateDaysAt(b, i + 1) * MS_PER_DAY + timeOfDayMsAt(b, i + 10);
      end = i + 18;
    } else if (b[i + 9] === QUOTE) {
      ms = dateDaysAt(b, i + 1) * MS_PER_DAY;
      end = i + 10;
    }
    if (!Number.isNaN(ms)) {
      values[r] = ms;
      valid[r] = 1;
      return end;
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
function booleanCell(b: Buffer, i: number, c: number | undefined, bits: Uint8Array, r: number): number {
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
function dictCell(
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
      loneSurrogate = false;
      const len = unescapeInto(b, s, e, scratch, 0);
      // Two lone surrogates both encode as U+FFFD but are different strings, so different
      // entries on the reference path: bytes cannot key them.
      if (loneSurrogate) throw BAIL;
      loneSurrogate = before;
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

/** Spare page buffers kept per decoder (pages in the window are decoded into fresh ones beyond this). */
const MAX_SPARE = 4;

interface ColumnBuffers {
  f64: Float64Array[];
  i32: Int32Array[];
  u8: Uint8Array[];
  valid: Uint8Array[];
}

function reuse<T extends Float64Array | Int32Array | Uint8Array>(
  spare: T | undefined,
  size: number,
  make: new (n: number) => T,
): T {
  return spare !== undefined && spare.length >= size ? spare : new make(size);
}

const EMPTY_DICT = new ByteDictionary();

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

/** An envelope member that must be an integer (as `parseTablePage` requires). */
function integer(b: Buffer, [s, e]: [number, number]): number {
  const v: unknown = JSON.parse(b.toString('utf8', s, e));
  if (typeof v !== 'number' || !Number.isInteger(v)) throw BAIL;
  return v;
}

/**
 * A page's envelope read from its bytes, its rows never read: the query's first page (up to 10,000 rows,
 * read for its descriptors) is then decoded once, by the stream's decoder. The members before `rows` are
 * walked forward and those after it (`fields` comes after `rows` in the service's pages) backward from the
 * closing brace, so the cost is that of the envelope, not of the page: delimiting the rows was ~0.9 ms of
 * client CPU per query in a fan-out of 121 small queries, where the library and five lines of `fetch` were
 * otherwise within 1 %. `rowCount` is the page's own `count`: the stream's decoder checks it against the
 * rows it decodes (a `ProtocolError` naming the page), as it checks every page; a row the reference would
 * reject fails there too, as a `DecodeError` or `InvalidValueError` naming the page. `undefined` whenever
 * the rest is anything but ordinary (not UTF-8, a syntax error outside the rows, a duplicate or escaped
 * member name, a member of the wrong shape): the caller then takes `parseTablePage`, which gives the same
 * envelope or the right `DecodeError`.
 */
export function readTableEnvelope(body: Buffer): TableEnvelope | undefined {
  if (!isUtf8(body)) return undefined;
  try {
    return envelope(body);
  } catch (error) {
    if (error instanceof Bail || error instanceof RangeError || error instanceof SyntaxError)
      return undefined;
    throw error;
  }
}

function envelope(b: Buffer): TableEnvelope {
  const members = new Map<string, [number, number]>();
  let rowsAt = -1;
  walkMembers(b, (ks, ke, at) => {
    const key = b.toString('utf8', ks, ke);
    if (members.has(key)) throw BAIL;
    if (key === 'rows') {
      rowsAt = at;
      return STOP;
    }
    const after = skipValue(b, at, 0);
    members.set(key, [at, after]);
    return after;
  });
  if (rowsAt < 0 || b[rowsAt] !== 0x5b) throw BAIL;
  membersAfterRows(b, rowsAt, members);
  const member = (name: string): unknown => {
    const at = members.get(name);
    return at === undefined ? undefined : JSON.parse(b.toString('utf8', at[0], at[1]));
  };
  const required = (name: string): [number, number] => {
    const at = members.get(name);
    if (at === undefined) throw BAIL;
    return at;
  };
  const fields = member('fields');
  if (!Array.isArray(fields)) throw BAIL;
  for (const f of fields as unknown[]) {
    if (typeof f !== 'object' || f === null || Array.isArray(f)) throw BAIL;
    if (typeof (f as { id?: unknown }).id !== 'string') throw BAIL;
  }
  const count = integer(b, required('count'));
  // An empty page's rows are checked here: no decoder reads them when the result is empty.
  if (count < 0 || (count === 0 && b[skipWs(b, rowsAt + 1)] !== 0x5d)) throw BAIL;
  return {
    fields: fields as FieldDescriptor[],
    total: integer(b, required('total')),
    count,
    start: integer(b, required('start')),
    // Required here (the service always sends it): a member missed behind another array of arrays
    // (see `membersAfterRows`) then cannot be one this envelope reports.
    lastDateUpdated: JSON.parse(b.toString('utf8', ...required('last_date_updated'))) as string,
    rowCount: count,
  };
}

/**
 * The members after the `rows` array that opens at `rowsAt`, read backward from the page's closing brace
 * into `members`; each value found is checked forward (`skipValue`) as strictly as `JSON.parse`. An array
 * whose last element is an array (`]]`) is taken to be `rows` without reading it: in a result page only
 * `rows` is an array of arrays. Were another member one, the members between it and `rows` would go
 * unread: a missing member the envelope reports declines the page (all of them are required here), one
 * it does not report is not needed.
 */
function membersAfterRows(b: Buffer, rowsAt: number, members: Map<string, [number, number]>): void {
  let e = skipWsBack(b, b.length);
  if (b[e - 1] !== 0x7d) throw BAIL;
  e = skipWsBack(b, e - 1);
  for (;;) {
    if (b[e - 1] === 0x5d && b[skipWsBack(b, e - 1) - 1] === 0x5d) return; // `]]`: the rows
    const s = valueStartBack(b, e, rowsAt);
    if (s === rowsAt) return; // rows with no row in it
    if (s < rowsAt || skipValue(b, s, 0) !== e) throw BAIL;
    let i = skipWsBack(b, s);
    if (b[i - 1] !== 0x3a) throw BAIL;
    i = skipWsBack(b, i - 1);
    if (b[i - 1] !== QUOTE) throw BAIL;
    const ke = i - 1;
    const ks = b.lastIndexOf(QUOTE, ke - 1) + 1;
    if (ks <= rowsAt) throw BAIL;
    // A key with a backslash could spell a member we read ("r\u006fws"): left to `JSON.parse`.
    for (let k = ks; k < ke; k++) if (b[k] === BACKSLASH || b[k]! < 0x20) throw BAIL;
    const key = b.toString('utf8', ks, ke);
    if (key === 'rows' || members.has(key)) throw BAIL;
    members.set(key, [s, e]);
    i = skipWsBack(b, ks - 1);
    if (b[i - 1] !== COMMA) throw BAIL;
    e = skipWsBack(b, i - 1);
  }
}

/** The index after the last byte before `i` that is not JSON white space. */
function skipWsBack(b: Uint8Array, i: number): number {
  while (i > 0 && isWs(b[i - 1])) i--;
  return i;
}

/**
 * Where the value that ends just before `e` starts, reading backward and never below `floor`: a string
 * back to its opening quote (a quote after an odd run of backslashes is escaped), an array or object back
 * to its opening bracket (strings skipped), a number or literal back over its characters. The caller
 * checks the value forward.
 */
function valueStartBack(b: Buffer, e: number, floor: number): number {
  const last = b[e - 1];
  if (last === QUOTE) return openingQuote(b, e - 1, floor);
  if (last === 0x5d || last === 0x7d) {
    let depth = 0;
    for (let i = e - 1; i >= floor; i--) {
      const c = b[i];
      if (c === QUOTE) i = openingQuote(b, i, floor);
      else if (c === 0x5d || c === 0x7d) depth++;
      else if ((c === 0x5b || c === 0x7b) && --depth === 0) return i;
    }
    throw BAIL;
  }
  let i = e;
  while (i > floor && isScalarByte(b[i - 1]!)) i--;
  if (i === e) throw BAIL;
  return i;
}

/** The opening quote of the string whose closing quote is at `close`. */
function openingQuote(b: Buffer, close: number, floor: number): number {
  let q = b.lastIndexOf(QUOTE, close - 1);
  for (;;) {
    if (q < floor) throw BAIL;
    let k = q - 1;
    while (k >= 0 && b[k] === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q; // an even run of backslashes: the quote is not escaped
    q = b.lastIndexOf(QUOTE, q - 1);
  }
}

/** Bytes of a number, `true`, `false` or `null`. */
function isScalarByte(c: number): boolean {
  return (
    (c >= 0x30 && c <= 0x39) ||
    (c >= 0x61 && c <= 0x7a) ||
    c === 0x2d ||
    c === 0x2b ||
    c === 0x2e ||
    c === 0x45
  );
}
