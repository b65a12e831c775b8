/**
 * Table JSON straight from bytes into columns, without `JSON.parse` and without a JS value per cell.
 *
 * A page body is scanned once: the envelope's small members (`total`, `count`, `start`, `fields`) are
 * located and read with `JSON.parse` on their slices; `rows` is decoded in place, each value written into
 * its column per the plan: string bytes copied (escapes decoded on the fly), `YYYYMMDD` digits turned
 * into day numbers by arithmetic, numbers parsed from their digits (Clinger's exact fast path, else
 * `Number()` of the literal). The rows are decoded a slice at a time (`slices()`): whoever drives the
 * decode lets the event loop run between slices (page-decoder.ts).
 *
 * The contract is "the same as the reference, or nothing": `decode()` returns `undefined` whenever the
 * page is anything but ordinary (not valid UTF-8, any JSON syntax error, a duplicate member, a row of the
 * wrong width, a value its column would reject, an escaped key, a lone surrogate in a dictionary column,
 * ...). The caller then takes the reference path (`parseTablePage` + the row converters), which produces
 * the same result or the same error. So rare cases cost a second parse, never a different answer.
 *
 * The pieces: the byte scanner (json-scan.ts), the envelope (table-json-envelope.ts), the cell writers
 * (table-json-cells.ts) and the byte dictionary (byte-dictionary.ts). Here: the decoder with its pool of
 * page buffers, and the row loop.
 */

import { isUtf8 } from 'node:buffer';
import type { DecodedColumn, DecodedColumns } from '../convert/column-data.js';
import type { ColumnPlan } from '../convert/plan.js';
import type { PageRef } from '../core/errors.js';
import { BodyBuffers } from './body-buffers.js';
import { ByteDictionary, EMPTY_DICT } from './byte-dictionary.js';
import {
  BAIL,
  copyPlainRun,
  escapeInto,
  escapeLength,
  isDecline,
  loneSurrogate,
  setLoneSurrogate,
  skipWs,
} from './json-scan.js';
import {
  BOOLEAN,
  DATE,
  DATETIME,
  DICT,
  decodedColumn,
  EMPTY_F64,
  EMPTY_I32,
  EMPTY_U8,
  kindCode,
  NUMBER,
  pageRowCapacity,
  stringBytesGuess,
  UTF8,
  unzeroedBytes,
  zeroTail,
} from './page-columns.js';
import { allSlices, StepBytes } from './slices.js';
import {
  booleanCell,
  dateCell,
  datetimeCell,
  dictCell,
  growRows,
  growString,
  numberCell,
  PageBuffers,
  utf8Other,
} from './table-json-cells.js';
import { PageFields, PageMembersWalk } from './table-json-envelope.js';
import { ByteRun, TablePageStream } from './table-json-stream.js';

/** The bytes the hot loops compare with, as local constants: read as imports, they cost ~2 % of decoding. */
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const QUOTE = 0x22;

export { readTableEnvelope } from './table-json-envelope.js';

/** A page decoded to columns, with the envelope members the page fetcher checks. */
export interface FastTablePage extends DecodedColumns {
  readonly total: number;
  readonly count: number;
  readonly start: number;
}

/**
 * Decodes table-JSON pages of one result into columns. One decoder per stream: it remembers the last
 * page's `fields` bytes (to check the next pages' cheaply) and the string bytes per row (to size buffers).
 */
export class FastTableDecoder {
  readonly #kinds: Int8Array;
  readonly #exactStrings: boolean;
  readonly #fields: PageFields;
  readonly #spare: ColumnBuffers[] = [];
  readonly #bodies = new BodyBuffers();
  /** Windows of the pages decoded as they arrive (table-json-stream.ts), for the next ones. */
  readonly #windows: ByteRun[] = [];
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
    this.#fields = new PageFields(plan.map((c) => c.id));
    this.#bytesPerRow = new Float64Array(plan.length).fill(32);
  }

  /**
   * The page as columns, or `undefined` when it is not an ordinary page (the caller must then use the
   * reference path, which will produce the same rows or the right error). All at once: see `slices()`.
   */
  decode(body: Buffer, where: PageRef): FastTablePage | undefined {
    return allSlices(this.slices(body, where));
  }

  /**
   * `decode()` a slice of rows at a time: the generator yields after each slice (slices.ts: ~5 ms or
   * 1 MB of the body, whichever comes first; a page is ~4.5 MB, 20-30 ms in one go), so its driver can
   * let the event loop run between slices, and returns what `decode()` returns. Each decode keeps its own
   * state (its buffers, its lone-surrogate flag), so decodes may interleave, but a decode must be driven
   * to its end (its buffers go back to the pool only then).
   */
  *slices(body: Buffer, where: PageRef): Generator<void, FastTablePage | undefined, void> {
    if (this.#kinds.length === 0 || !isUtf8(body)) return undefined;
    let page: PageBuffers | undefined;
    try {
      const walk = new PageMembersWalk(body);
      const at = walk.toRows();
      if (body[at] !== 0x5b) throw BAIL;
      page = this.#page(body.length, where, new DataView(body.buffer, body.byteOffset, body.length));
      // A turn of its own for the buffers: a page's fresh buffers (~5-8 MB for a 20,000-row page of long
      // strings) take 1-9 ms to allocate, which with the first slice made a turn of 10-14 ms.
      yield;
      let i = skipWs(body, at + 1);
      let lone = false;
      if (body[i] === 0x5d) i++;
      else {
        const into = page;
        yield* steps.run(i, body.length, (from, to) => {
          setLoneSurrogate(false);
          i = decodeRows(body, from, into, to);
          lone ||= loneSurrogate;
          return into.done ? undefined : i;
        });
        if (!into.done) throw BAIL; // the body ended inside the rows
      }
      return this.#finish(page, body, walk, i, lone);
    } catch (error) {
      if (page) this.#giveBack(page);
      if (isDecline(error)) return undefined;
      throw error;
    }
  }

  /**
   * `decode()` of a body as it arrives (table-json-stream.ts): `push()` its chunks, then `finish()` returns
   * what `decode()` would. `bodyLength` is the body's declared length, if it has one (a sizing hint);
   * `margin` is for tests (see `TablePageStream`).
   */
  stream(where: PageRef, bodyLength?: number, margin?: number): TablePageStream<FastTablePage> {
    if (this.#kinds.length === 0) return new TablePageStream<FastTablePage>(undefined);
    const windows = this.#windows;
    return new TablePageStream(
      {
        page: () => this.#page(bodyLength ?? Number.POSITIVE_INFINITY, where, EMPTY_VIEW),
        rows: decodeRows,
        steps,
        finish: (page, envelope, walk, rowsEnd, lone) => this.#finish(page, envelope, walk, rowsEnd, lone),
        giveBack: (page) => this.#giveBack(page),
        takeWindow: () => windows.pop() ?? new ByteRun(WINDOW_BYTES),
        releaseWindow: (window) => {
          window.len = 0;
          if (windows.length < MAX_WINDOWS) windows.push(window);
        },
      },
      margin,
    );
  }

  /** The page once its rows are decoded (`rowsEnd`: the index after them in `body`); throws BAIL. */
  #finish(
    page: PageBuffers,
    body: Buffer,
    walk: PageMembersWalk,
    rowsEnd: number,
    lone: boolean,
  ): FastTablePage {
    if (lone && this.#exactStrings) throw BAIL;
    const members = walk.after(rowsEnd);
    this.#fields.check(body, members.fields[0], members.fields[1]);
    const r = page.length;
    for (let j = 0; j < this.#kinds.length; j++) {
      if (this.#kinds[j] !== UTF8) continue;
      // Unzeroed or recycled (see unzeroedBytes): nothing past the strings may reach the batch.
      zeroTail(page.u8[j]!, page.strPos[j]!);
      if (r > 0) this.#bytesPerRow[j] = page.strPos[j]! / r;
    }
    const { columns } = this.#columns(r, page.f64, page.i32, page.u8, page.valid, page.dicts);
    return { length: r, columns, total: members.total, count: members.count, start: members.start };
  }

  /** The buffers of a page that was declined, for the next page. */
  #giveBack(page: PageBuffers): void {
    if (this.#spare.length < MAX_SPARE) {
      this.#spare.push({ f64: page.f64, i32: page.i32, u8: page.u8, valid: page.valid });
    }
  }

  /**
   * The buffers to decode the rows of a body of `bodyLength` bytes into (Infinity: not known yet), spare
   * ones where they are large enough.
   */
  #page(bodyLength: number, where: PageRef, body: DataView): PageBuffers {
    const kinds = this.#kinds;
    const width = kinds.length;
    // A row of `width` values is at least `[` + a byte a value + commas + `],`: 2 x width + 1 bytes.
    const cap = pageRowCapacity(where.limit, bodyLength, 2 * width + 1);
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
            ? reuseBytes(spare?.u8[j], stringBytesGuess(this.#bytesPerRow[j]!, cap, bodyLength))
            : EMPTY_U8,
      );
      valid.push(k === BOOLEAN || k === DICT ? EMPTY_U8 : reuse(spare?.valid[j], cap, Uint8Array));
      dicts.push(k === DICT ? new ByteDictionary() : EMPTY_DICT);
    }
    // Filled by push like the arrays above: an array made by `map` got another hidden class on some
    // pages, and every such page threw the optimized decoder away ("wrong map" deopts).
    const views: DataView[] = [];
    for (const a of u8) views.push(new DataView(a.buffer, a.byteOffset, a.byteLength));
    return new PageBuffers(
      kinds,
      cap,
      f64,
      i32,
      u8,
      valid,
      views,
      new Int32Array(width),
      dicts,
      body,
      where.limit,
      bodyLength,
    );
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
    return this.#bodies.take(size);
  }

  /** Gives back a buffer from `bodyBuffer()` once nothing reads it any more. */
  releaseBody(buffer: Buffer): void {
    this.#bodies.release(buffer);
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

/*
 * The row loop. Strings stay inline (their rare paths are calls): a call per string cost 5-10 % on
 * string-heavy pages once warm. Every other kind is a call to its cell writer (table-json-cells.ts).
 */

/**
 * Decodes rows from `b[i]` (a row's `[`) until the array's `]` (then `page.done` is set and the index
 * after it returned) or until the first row to end at or past `stop` (then the index of the next row's `[`
 * is returned, to resume from). `page.length` counts the rows decoded so far.
 */
function decodeRows(b: Buffer, i: number, page: PageBuffers, stop: number): number {
  const { kinds, f64, i32, u8, valid, dicts, views, strPos } = page;
  const bodyView = page.body;
  const width = kinds.length;
  const n = b.length;
  let r = page.length;
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
          // the next byte (`room` also ends at the body's end); an escape checks for its 4 bytes.
          let out = u8[j]!;
          let outView = views[j]!;
          let o = strPos[j]!;
          i++;
          let room = Math.min(n, i + (out.length - o));
          for (;;) {
            // Plain bytes four at a time; the byte path below starts at the first special one.
            const k = copyPlainRun(bodyView, i, room, outView, o);
            i += k;
            o += k;
            if (i >= room) {
              if (i >= n) throw BAIL;
              out = growString(page, j, o, r);
              outView = views[j]!;
              room = Math.min(n, i + (out.length - o));
            }
            c = b[i]!;
            if (c === QUOTE) break;
            if (c === BACKSLASH) {
              if (o + 4 > out.length) {
                out = growString(page, j, o, r);
                outView = views[j]!;
                room = Math.min(n, i + (out.length - o));
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
    // Both tests (and the `+ 1`, and both stores) on every row: the loop is often compiled in the middle
    // of the first page, and an operation first made at its last row (or at a slice's) would throw that
    // code away there. Made only at the page's end, `page.done = true` did so on every 10th page or so.
    const c = b[i];
    const more = c === COMMA;
    const end = c === 0x5d;
    const after = i + 1;
    page.length = r;
    page.done = end;
    if (more) {
      i = skipWs(b, after);
      page.resumeRow = r;
      page.resumeAt = i;
      if (i >= stop) return i;
    } else if (end) return after;
    else throw BAIL;
  }
}

/**
 * Most body bytes per slice of `slices()`: ~4-5 ms of decoding once the row loop is compiled. Each slice's
 * end costs a turn of the event loop; at 256 kB (~1-2 ms) a 500k-row `toTable()` on loopback ran 6-12 %
 * slower (CPU +8-11 %) with an event-loop delay p99 of 24-30 ms, at 1 MB as fast as in one go.
 */
const steps = new StepBytes(1024 * 1024);

/** A page's window starts at this size (its bytes: the row in progress and the chunk that came). */
const WINDOW_BYTES = 256 * 1024;
/**
 * Windows kept per decoder: one per page in flight on a WAN (8 MB while none has grown; a window that
 * grew, rows waiting in it for more bytes, is kept at its size).
 */
const MAX_WINDOWS = 32;
const EMPTY_VIEW = new DataView(new ArrayBuffer(0));

/** Spare page buffers kept per decoder (pages in the window are decoded into fresh ones beyond this). */
const MAX_SPARE = 4;

interface ColumnBuffers {
  f64: Float64Array[];
  i32: Int32Array[];
  u8: Uint8Array[];
  valid: Uint8Array[];
}

/** `spare` when it holds `size` bytes, else new bytes that are not zeroed (see `unzeroedBytes`). */
function reuseBytes(spare: Uint8Array | undefined, size: number): Uint8Array {
  return spare !== undefined && spare.length >= size ? spare : unzeroedBytes(size);
}

function reuse<T extends Float64Array | Int32Array | Uint8Array>(
  spare: T | undefined,
  size: number,
  make: new (n: number) => T,
): T {
  return spare !== undefined && spare.length >= size ? spare : new make(size);
}
