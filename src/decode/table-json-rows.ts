/**
 * Table JSON straight from bytes to row objects (`output: 'rows'`), each value read once from the page
 * bytes and each row object made once, as its row is scanned: no column buffers between the two, no
 * string built twice (bytes copied into a column, then a string made of the copy), a date read from its
 * 8 digits into its `Date`.
 *
 * The contract is the byte decoders' (table-json-fast.ts): the same objects the reference path makes
 * (`parseTablePage` + `makeRowFactory`: same keys in the same order, same values of the same types), or
 * nothing. `decode()` returns `undefined` whenever the page is anything but ordinary (not valid UTF-8,
 * any JSON syntax error, a duplicate member, a row of the wrong width, a value its column would reject,
 * ...), and the caller takes the reference path, which gives the same rows or the same error.
 *
 * The row loop is generated per plan (`new Function`, as `makeRowFactory` is): one value maker per column,
 * chosen once from the column's kind, each its own call site (so V8 can inline it), and one object literal
 * with the column ids as fixed keys, so every row gets the same hidden class. Column ids reach the source
 * only as `JSON.stringify` output; `__proto__` is a computed key (an own property, not the prototype).
 */

import { isUtf8 } from 'node:buffer';
import { isoDate, isoTimestamp } from '../convert/dates.js';
import type { MadeRows } from '../convert/page-parts.js';
import type { ColumnPlan } from '../convert/plan.js';
import type { DatesAs } from '../convert/row-factory.js';
import { toBooleanBit, toDateDays, toNumber, toText, toTimestampMs } from '../convert/values.js';
import type { PageRef } from '../core/errors.js';
import { BodyBuffers } from './body-buffers.js';
import { ByteDictionary } from './byte-dictionary.js';
import {
  BAIL,
  copyPlainRun,
  escapeInto,
  escapeLength,
  firstFlagged,
  generic,
  isDecline,
  isNullAt,
  loneSurrogate,
  readGeneric,
  scanNumber,
  setLoneSurrogate,
  skipWs,
  specialBytes,
} from './json-scan.js';
import { BOOLEAN, DATE, DATETIME, DICT, kindCode, NUMBER, UTF8 } from './page-columns.js';
import { wireDaysAt, wireMsAt, wireTimeEnd } from './table-json-cells.js';
import { PageFields, pageMembers } from './table-json-envelope.js';

/** The bytes the hot loops compare with, as local constants (read as imports they cost a few %). */
const BACKSLASH = 0x5c;
const QUOTE = 0x22;
const COMMA = 0x2c;
const CLOSE = 0x5d;
const MS_PER_DAY = 86_400_000;

/** A page decoded to row objects, with the envelope members the page fetcher checks. */
export interface FastRowPage extends MadeRows {
  readonly total: number;
  readonly count: number;
  readonly start: number;
}

/**
 * Where the scan is: the makers read a value at `i`, leave `i` after it and return the value (one object
 * with one field, not a module variable: read across modules per value, those cost a few % here).
 */
class Cursor {
  i = 0;
  constructor(
    /** The body, for reading four bytes at a time. */
    readonly view: DataView,
  ) {}
}

/** Reads one value of a column at `s.i` (white space before it skipped), or declines the page. */
type Maker = (b: Buffer, s: Cursor) => unknown;

/** The generated row loop: rows from `s.i` (the first row's `[`) to the array's `]`, appended to `out`. */
type RowLoop = (b: Buffer, s: Cursor, out: Record<string, unknown>[]) => void;

/**
 * Decodes table-JSON pages of one result into row objects. One decoder per stream: it keeps the page
 * body buffers between pages and remembers the last page's `fields` bytes.
 */
export class FastRowDecoder {
  readonly #fields: PageFields;
  readonly #loop: RowLoop | undefined;
  /** Per dictionary column (ticker-format strings): the page's dictionary and its strings by id. */
  readonly #dicts: StringCache[];
  readonly #bodies = new BodyBuffers();

  constructor(plan: readonly ColumnPlan[], options: { readonly dates?: DatesAs } = {}) {
    this.#fields = new PageFields(plan.map((c) => c.id));
    this.#dicts = [];
    const makers = plan.map((c) => {
      const kind = kindCode(c);
      if (kind !== DICT && kind !== UTF8) return maker(kind, options.dates ?? 'date');
      const cache = new StringCache();
      this.#dicts.push(cache);
      return kind === DICT
        ? (b: Buffer, s: Cursor) => dictString(b, s, cache)
        : (b: Buffer, s: Cursor) => shortShared(b, s, cache);
    });
    this.#loop = plan.length === 0 ? undefined : rowLoop(plan, makers);
  }

  /**
   * The page as row objects, or `undefined` when it is not an ordinary page (the caller must then use
   * the reference path, which will produce the same rows or the right error).
   */
  decode(body: Buffer, _where: PageRef): FastRowPage | undefined {
    const loop = this.#loop;
    if (loop === undefined || !isUtf8(body)) return undefined;
    try {
      const objects: Record<string, unknown>[] = [];
      const s = new Cursor(new DataView(body.buffer, body.byteOffset, body.byteLength));
      const members = pageMembers(body, (at) => {
        if (body[at] !== 0x5b) throw BAIL;
        const first = skipWs(body, at + 1);
        if (body[first] === CLOSE) return first + 1;
        s.i = first;
        loop(body, s, objects);
        return s.i;
      });
      this.#fields.check(body, members.fields[0], members.fields[1]);
      return {
        length: objects.length,
        objects,
        total: members.total,
        count: members.count,
        start: members.start,
      };
    } catch (error) {
      if (isDecline(error)) return undefined;
      throw error;
    } finally {
      // The strings stay with the rows; the dictionaries' bytes are the next page's to fill.
      for (const cache of this.#dicts) cache.reset();
    }
  }

  bodyBuffer(size: number): Buffer {
    return this.#bodies.take(size);
  }

  releaseBody(buffer: Buffer): void {
    this.#bodies.release(buffer);
  }
}

/** The row loop of a plan: a maker call per column, then one object literal per row. */
function rowLoop(plan: readonly ColumnPlan[], makers: readonly Maker[]): RowLoop {
  const width = plan.length;
  const lines: string[] = [];
  for (let j = 0; j < width; j++) {
    lines.push(`    const v${j} = m${j}(b, s);`);
    // The separator: a comma between values, the row's `]` after the last.
    lines.push(
      `    if (b[s.i] === ${j < width - 1 ? COMMA : CLOSE}) s.i++; else sep(b, s, ${j < width - 1 ? COMMA : CLOSE});`,
    );
  }
  const props = plan.map((c, j) => {
    const key = JSON.stringify(c.id);
    return `${c.id === '__proto__' ? `[${key}]` : key}: v${j}`;
  });
  const source = [
    '"use strict";',
    ...makers.map((_, j) => `const m${j} = makers[${j}];`),
    'return function rows(b, s, out) {',
    '  for (;;) {',
    '    if (b[s.i] !== 0x5b) throw BAIL;',
    '    s.i++;',
    ...lines,
    `    out.push({${props.join(', ')}});`,
    '    if (!nextRow(b, s)) return;',
    '  }',
    '};',
  ].join('\n');
  const build = new Function('makers', 'sep', 'nextRow', 'BAIL', source) as (
    makers: readonly Maker[],
    separator: typeof sep,
    next: typeof nextRow,
    bail: typeof BAIL,
  ) => RowLoop;
  return build(makers, sep, nextRow, BAIL);
}

/** The separator `c` after white space at `s.i`; declines anything else. */
function sep(b: Buffer, s: Cursor, c: number): void {
  const i = skipWs(b, s.i);
  if (b[i] !== c) throw BAIL;
  s.i = i + 1;
}

/** After a row's `]`: true at a comma (`s.i` then at the next row), false at the array's `]` (after it). */
function nextRow(b: Buffer, s: Cursor): boolean {
  const i = skipWs(b, s.i);
  const c = b[i];
  if (c === COMMA) {
    s.i = skipWs(b, i + 1);
    return true;
  }
  if (c !== CLOSE) throw BAIL;
  s.i = i + 1;
  return false;
}

/** `b[i]`, past any white space (`s.i` moved there). */
function at(b: Buffer, s: Cursor): number | undefined {
  let c = b[s.i];
  if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
    s.i = skipWs(b, s.i);
    c = b[s.i];
  }
  return c;
}

function maker(kind: number, dates: DatesAs): Maker {
  switch (kind) {
    case NUMBER:
      return numberValue;
    case DATE:
      return dates === 'string' ? dateText : dateValue;
    case DATETIME:
      return dates === 'string' ? timestampText : timestampValue;
    case BOOLEAN:
      return booleanValue;
    default:
      return stringValue;
  }
}

/**
 * Buffer's own slicer (what `toString('utf8', start, end)` calls after checking its arguments). The body
 * is valid UTF-8 (checked first), so a string's bytes decode to exactly what `JSON.parse` makes of them.
 */
type Slicing = Buffer & { utf8Slice(s: number, e: number): string };

/** A plain `string` cell: a string literal made once from its bytes, null, or a scalar as its text. */
function stringValue(b: Buffer, s: Cursor): string | null {
  const c = at(b, s);
  if (c !== QUOTE) return otherText(b, s, c);
  const start = s.i + 1;
  const end = plainEnd(b, s.view, start);
  if (b[end] !== QUOTE) return escapedText(b, s, start);
  s.i = end + 1;
  return (b as Slicing).utf8Slice(start, end);
}

/**
 * The index of the first quote, backslash or control character from `b[i]` (the body's length if none),
 * four bytes at a time (`specialBytes`).
 */
function plainEnd(b: Buffer, view: DataView, i: number): number {
  const n = b.length;
  while (i + 4 <= n) {
    const special = specialBytes(view.getInt32(i, true));
    if (special !== 0) return i + firstFlagged(special);
    i += 4;
  }
  for (; i < n; i++) {
    const x = b[i]!;
    if (x === QUOTE || x === BACKSLASH || x < 0x20) return i;
  }
  return n;
}

/** Where escaped strings are decoded (grown as needed; strings are made from it, never kept). */
let unescaped = Buffer.allocUnsafeSlow(4096) as Slicing;
let unescapedView = new DataView(unescaped.buffer, unescaped.byteOffset, unescaped.byteLength);

/** `unescaped` grown to hold at least `need` bytes, its first `used` kept. */
function grown(need: number, used: number): Slicing {
  const next = Buffer.allocUnsafeSlow(Math.max(need, 2 * unescaped.length)) as Slicing;
  unescaped.copy(next, 0, 0, used);
  unescaped = next;
  unescapedView = new DataView(next.buffer, next.byteOffset, next.byteLength);
  return next;
}

/**
 * A string literal with escapes, from `b[start]` (its first content byte): decoded in one pass into UTF-8
 * (plain bytes copied four at a time, escapes decoded) and made from that; declines a malformed one. A
 * lone surrogate escape (`\ud800`, which UTF-8 cannot carry) takes `JSON.parse` of the literal instead,
 * which gives exactly the reference's string. The loop is the column decoder's (table-json-fast.ts).
 */
function escapedText(b: Buffer, s: Cursor, start: number): string {
  const n = b.length;
  const view = s.view;
  let out = unescaped;
  let outView = unescapedView;
  let o = 0;
  let i = start;
  const before = loneSurrogate;
  setLoneSurrogate(false);
  // No escape decodes to more bytes than it takes, so the output never runs ahead of the input: while
  // `i < stop` there is room for the next byte (`stop` also ends at the body's end).
  let stop = Math.min(n, i + out.length);
  for (;;) {
    const k = copyPlainRun(view, i, stop, outView, o);
    i += k;
    o += k;
    if (i >= stop) {
      if (i >= n) throw BAIL;
      out = grown(o + 4096, o);
      outView = unescapedView;
      stop = Math.min(n, i + (out.length - o));
    }
    const c = b[i]!;
    if (c === QUOTE) break;
    if (c === BACKSLASH) {
      if (o + 4 > out.length) {
        out = grown(o + 4096, o);
        outView = unescapedView;
        stop = Math.min(n, i + (out.length - o));
      }
      const from = o;
      o = escapeInto(b, i, out, o);
      i += escapeLength(b, i, o - from);
    } else if (c < 0x20) throw BAIL;
    else {
      out[o++] = c;
      i++;
    }
  }
  s.i = i + 1;
  const lone = loneSurrogate;
  setLoneSurrogate(before);
  if (lone) return JSON.parse((b as Slicing).utf8Slice(start - 1, i + 1)) as string;
  return out.utf8Slice(0, o);
}

/** A `string` cell that is not a string literal: null, or a number or boolean as its text. */
function otherText(b: Buffer, s: Cursor, c: number | undefined): string | null {
  if (c === 0x6e && isNullAt(b, s.i)) {
    s.i += 4;
    return null;
  }
  s.i = readGeneric(b, s.i);
  if (generic === null) return null;
  const text = toText(generic);
  if (text === undefined) throw BAIL;
  return text;
}

/**
 * A page's distinct strings of one dictionary column, keyed by their bytes: a repeated value (a ticker)
 * is one string shared by its rows, made the first time it is met. Page-local, as the column decoders'.
 */
class StringCache {
  dict = new ByteDictionary();
  strings: string[] = [];
  /** Values looked up in the page's cache that were already in it, and that were not. */
  hits = 0;
  misses = 0;

  reset(): void {
    this.hits = 0;
    this.misses = 0;
    if (this.dict.count > 0) {
      this.dict = new ByteDictionary();
      this.strings = [];
    }
  }
}

/** Strings up to this many bytes are shared when they repeat on a page (see `shortShared`). */
const SHORT = 32;

/**
 * A plain `string` cell whose short values are shared when they repeat on the page (a category, a city):
 * `toArray()` keeps every row, and a repeated value kept once is memory the GC neither copies nor marks
 * again. A column whose short values mostly differ (ids) stops being looked up for the rest of the page.
 */
function shortShared(b: Buffer, s: Cursor, cache: StringCache): string | null {
  const c = at(b, s);
  if (c !== QUOTE) return otherText(b, s, c);
  const start = s.i + 1;
  const end = plainEnd(b, s.view, start);
  if (b[end] !== QUOTE) return escapedText(b, s, start);
  s.i = end + 1;
  if (end - start > SHORT || (cache.misses > 256 && cache.misses > 2 * cache.hits)) {
    return (b as Slicing).utf8Slice(start, end);
  }
  const id = cache.dict.id(b, start, end);
  const strings = cache.strings;
  if (id < strings.length) {
    cache.hits++;
    return strings[id]!;
  }
  cache.misses++;
  const text = (b as Slicing).utf8Slice(start, end);
  strings.push(text);
  return text;
}

/** A dictionary `string` cell: as `stringValue`, a plain literal's string taken from the page's cache. */
function dictString(b: Buffer, s: Cursor, cache: StringCache): string | null {
  const c = at(b, s);
  if (c !== QUOTE) return otherText(b, s, c);
  const start = s.i + 1;
  const end = plainEnd(b, s.view, start);
  if (b[end] !== QUOTE) return escapedText(b, s, start);
  s.i = end + 1;
  const id = cache.dict.id(b, start, end);
  const strings = cache.strings;
  if (id < strings.length) return strings[id]!;
  const text = (b as Slicing).utf8Slice(start, end);
  strings.push(text);
  return text;
}

/** Where `numberValue` has `scanNumber` write (a typed array: no boxed double per value). */
const scratch = new Float64Array(1);

/** A `number` cell: a JSON number as `JSON.parse` reads it, null, or a decimal string's value. */
function numberValue(b: Buffer, s: Cursor): number | null {
  const c = at(b, s);
  if (c === 0x2d || (c !== undefined && c >= 0x30 && c <= 0x39)) {
    s.i = scanNumber(b, s.i, scratch, 0);
    return scratch[0]!;
  }
  if (c === 0x6e && isNullAt(b, s.i)) {
    s.i += 4;
    return null;
  }
  s.i = readGeneric(b, s.i);
  const x = toNumber(generic);
  if (Number.isNaN(x)) throw BAIL;
  return x;
}

/**
 * Days since the epoch of a `date` cell in the wire's shape (`"YYYYMMDD"`, or `"YYYYMMDDT000000Z"`), `s.i`
 * moved after it; NaN (and `s.i` unmoved) for anything else.
 */
function wireDays(b: Buffer, s: Cursor): number {
  const days = wireDaysAt(b, s.i);
  if (!Number.isNaN(days)) s.i = wireTimeEnd(b, s.i);
  return days;
}

/** A `date` cell's days since the epoch, or NaN for a null (`s.i` after it); declines an invalid one. */
function dateDays(b: Buffer, s: Cursor): number {
  const c = at(b, s);
  if (c === QUOTE) {
    const days = wireDays(b, s);
    if (!Number.isNaN(days)) return days;
  }
  return otherTime(b, s, c, toDateDays);
}

function dateValue(b: Buffer, s: Cursor): Date | null {
  const days = dateDays(b, s);
  return Number.isNaN(days) ? null : new Date(days * MS_PER_DAY);
}

function dateText(b: Buffer, s: Cursor): string | null {
  const days = dateDays(b, s);
  return Number.isNaN(days) ? null : isoDate(days);
}

/** A `datetime` cell's ms since the epoch, or NaN for a null (`s.i` after it); declines an invalid one. */
function timestampMs(b: Buffer, s: Cursor): number {
  const c = at(b, s);
  if (c === QUOTE) {
    const ms = wireMsAt(b, s.i);
    if (!Number.isNaN(ms)) {
      s.i = wireTimeEnd(b, s.i);
      return ms;
    }
  }
  return otherTime(b, s, c, toTimestampMs);
}

function timestampValue(b: Buffer, s: Cursor): Date | null {
  const ms = timestampMs(b, s);
  return Number.isNaN(ms) ? null : new Date(ms);
}

function timestampText(b: Buffer, s: Cursor): string | null {
  const ms = timestampMs(b, s);
  return Number.isNaN(ms) ? null : isoTimestamp(ms);
}

/**
 * A date or datetime cell not in the wire's shape: NaN for null, or what `convert` (the reference's
 * conversion) makes of the value; anything it rejects declines the page.
 */
function otherTime(b: Buffer, s: Cursor, c: number | undefined, convert: (v: unknown) => number): number {
  if (c === 0x6e && isNullAt(b, s.i)) {
    s.i += 4;
    return Number.NaN;
  }
  s.i = readGeneric(b, s.i);
  if (generic === null) return Number.NaN;
  const value = convert(generic);
  if (Number.isNaN(value)) throw BAIL;
  return value;
}

/** A `boolean` cell. */
function booleanValue(b: Buffer, s: Cursor): boolean | null {
  const c = at(b, s);
  const i = s.i;
  if (c === 0x74 && b[i + 1] === 0x72 && b[i + 2] === 0x75 && b[i + 3] === 0x65) {
    s.i = i + 4;
    return true;
  }
  if (c === 0x66 && b[i + 1] === 0x61 && b[i + 2] === 0x6c && b[i + 3] === 0x73 && b[i + 4] === 0x65) {
    s.i = i + 5;
    return false;
  }
  if (c === 0x6e && isNullAt(b, i)) {
    s.i = i + 4;
    return null;
  }
  s.i = readGeneric(b, i);
  const bit = toBooleanBit(generic);
  if (bit < 0) throw BAIL;
  return bit === 1;
}
