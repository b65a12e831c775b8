/**
 * CSV straight into columns. csv-parse's state machine still finds the fields (quotes, escapes, line
 * ends, column count); what changes is what happens to a field: a string's bytes are copied into its
 * column's UTF-8 buffer without becoming a JS string (then re-encoded), dates are read from their digits,
 * and nothing is built per row. Strings are most of a CSV page, so this is where the row path spends
 * beyond csv-parse itself (making each field a string, then encoding the strings back to UTF-8).
 *
 * The contract is the table-JSON byte decoder's: "the same as the reference, or nothing". `decode()`
 * returns `undefined` for any page that is not ordinary (not valid UTF-8, malformed CSV, a header that is
 * not the field ids, a value its column would reject, ...). The caller then takes the reference path
 * (`decodeCsv` + the row converters), which gives the same rows or the right error with its location.
 * Values that are not strings go through the very functions the reference uses (`fieldValue`, then
 * `toNumber`/`toDateDays`/...), so both paths accept exactly the same text.
 */

import { isUtf8 } from 'node:buffer';
import { Parser } from 'csv-parse';
import type { DecodedColumns } from '../convert/column-data.js';
import type { ColumnKind } from '../convert/column-kind.js';
import { dateDaysAt } from '../convert/dates.js';
import type { ColumnPlan } from '../convert/plan.js';
import { toBooleanBit, toDateDays, toNumber, toTimestampMs } from '../convert/values.js';
import type { PageRef } from '../core/errors.js';
import { ByteDictionary, EMPTY_DICT } from './byte-dictionary.js';
import { type CsvCore, coreOf, fieldValue, PARSER_OPTIONS } from './csv.js';
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
  growText,
  kindCode,
  NUMBER,
  pageRowCapacity,
  stringBytesGuess,
  UTF8,
  unzeroedBytes,
  zeroTail,
} from './page-columns.js';
import { allSlices, StepBytes } from './slices.js';

/** Thrown from inside csv-parse's loop to abandon a page; caught in `decode()` and never escapes. */
class Bail extends Error {}
const BAIL = new Bail('not an ordinary CSV page');

/** Strings shorter than this are copied by a loop: `Buffer#copy`'s call costs more than the bytes. */
const SHORT_COPY = 24;

/**
 * Per-column storage of the page being decoded: the buffers of its kind, as `decodedColumn()` takes them
 * (`f64` numbers and timestamps, `i32` days, string offsets or dictionary ids, `u8` booleans or string bytes).
 */
interface Column {
  kind: number;
  f64: Float64Array;
  i32: Int32Array;
  u8: Uint8Array;
  valid: Uint8Array;
  /** UTF8: bytes used in `u8`. */
  pos: number;
  /** DICT: the page's distinct values, keyed by their bytes (the table-JSON decoder's dictionary). */
  dict: ByteDictionary;
}

/** Most body bytes per slice: csv-parse reads ~30 MB/s, so the slice's time (5 ms) ends it first. */
const steps = new StepBytes(1024 * 1024);

/** The column kind of each kind code (NUMBER ... DICT, in that order), for `fieldValue`. */
const KIND_NAMES: readonly ColumnKind[] = ['number', 'date', 'datetime', 'boolean', 'string', 'string'];

/**
 * Decodes CSV pages of one result into columns. One decoder per stream: it remembers the string bytes
 * per row of the last page, to size the next page's buffers.
 */
export class FastCsvDecoder {
  readonly #kinds: Int8Array;
  readonly #ids: readonly string[];
  readonly #bytesPerRow: Float64Array;

  constructor(plan: readonly ColumnPlan[]) {
    this.#kinds = Int8Array.from(plan, kindCode);
    this.#ids = plan.map((c) => c.id);
    this.#bytesPerRow = new Float64Array(plan.length).fill(32);
  }

  /**
   * The page (a whole CSV body, header line first) as columns, or `undefined` when it is not an ordinary
   * page: the caller must then use the reference path, which gives the same rows or the right error.
   * All at once: see `slices()`.
   */
  decode(body: Buffer, where: PageRef): DecodedColumns | undefined {
    return allSlices(this.slices(body, where));
  }

  /**
   * `decode()` a slice of the body at a time (slices.ts: ~5 ms each), yielding between slices so that
   * its driver lets the event loop turn. In one go, a 20,000-row page was 100-180 ms of the main thread
   * (csv-parse's state machine reads ~30 MB/s): a 500k-row CSV `toTable()` held the loop in such stalls
   * most of the time (event-loop delay p99 175-260 ms). csv-parse is a streaming parser: a record or a
   * UTF-8 character cut by a slice's end is completed by the next slice.
   */
  *slices(body: Buffer, where: PageRef): Generator<void, DecodedColumns | undefined, void> {
    if (this.#kinds.length === 0 || !isUtf8(body)) return undefined;
    const core = coreOf(new Parser(PARSER_OPTIONS));
    if (core === undefined) return undefined;
    try {
      return yield* this.#decode(body, where, core);
    } catch (error) {
      // RangeError: a buffer that could not grow (a page beyond typed-array limits): the reference decides.
      if (error instanceof Bail || error instanceof RangeError) return undefined;
      throw error;
    }
  }

  *#decode(body: Buffer, where: PageRef, core: CsvCore): Generator<void, DecodedColumns, void> {
    const kinds = this.#kinds;
    const ids = this.#ids;
    const width = kinds.length;
    // A record of `width` fields is at least its commas and a line end: `width` bytes.
    let cap = pageRowCapacity(where.limit, body.length, width);
    const columns: Column[] = [];
    for (let j = 0; j < width; j++) {
      const k = kinds[j]!;
      columns.push({
        kind: k,
        f64: k === NUMBER || k === DATETIME ? new Float64Array(cap) : EMPTY_F64,
        i32:
          k === DATE || k === DICT ? new Int32Array(cap) : k === UTF8 ? new Int32Array(cap + 1) : EMPTY_I32,
        u8:
          k === BOOLEAN
            ? new Uint8Array(cap)
            : k === UTF8
              ? unzeroedBytes(stringBytesGuess(this.#bytesPerRow[j]!, cap, body.length))
              : EMPTY_U8,
        valid: k === BOOLEAN || k === DICT ? EMPTY_U8 : new Uint8Array(cap),
        pos: 0,
        dict: k === DICT ? new ByteDictionary() : EMPTY_DICT,
      });
    }
    const state = core.state;
    let inHeader = true;
    let r = 0; // the data row being filled

    core.__onField = () => {
      const field = state.field;
      const len = field.length;
      const record = state.record;
      const j = record.length;
      const quoted = state.wasQuoting;
      // csv-parse counts fields by the record's length (its column-count check): keep it counting.
      record.push(null);
      field.length = 0;
      state.wasQuoting = false;
      if (inHeader) {
        if (j >= width || len === 0 || field.buf.toString('utf8', 0, len) !== ids[j]) throw BAIL;
        return undefined;
      }
      if (j >= width) throw BAIL;
      if (j === 0 && r === cap) cap = growRows(columns, cap, r);
      const col = columns[j]!;
      const buf = field.buf;
      switch (col.kind) {
        case UTF8: {
          let out = col.u8;
          const o = col.pos;
          if (len === 0 && !quoted) col.valid[r] = 0;
          else {
            if (o + len > out.length) out = col.u8 = growText(out, o + len + 4096, o);
            if (len < SHORT_COPY) for (let k = 0; k < len; k++) out[o + k] = buf[k]!;
            else buf.copy(out, o, 0, len);
            col.valid[r] = 1;
          }
          col.pos = o + len;
          col.i32[r + 1] = o + len;
          return undefined;
        }
        case DICT:
          // A string's field is its value (`fieldValue` of a string column): its bytes key the dictionary
          // as they are, no JS string per value. Empty and unquoted is null.
          col.i32[r] = len === 0 && !quoted ? -1 : col.dict.id(buf, 0, len);
          return undefined;
        case DATE: {
          let days: number;
          if (len === 0 && !quoted) {
            col.i32[r] = 0;
            col.valid[r] = 0;
            return undefined;
          }
          if (len === 8) days = dateDaysAt(buf, 0);
          else days = toDateDays(fieldValue(buf.toString('utf8', 0, len), quoted, 'date'));
          if (Number.isNaN(days)) throw BAIL;
          col.i32[r] = days;
          col.valid[r] = 1;
          return undefined;
        }
        default:
          if (len === 0 && !quoted) {
            setNull(col, r);
            return undefined;
          }
          setValue(col, r, fieldValue(buf.toString('utf8', 0, len), quoted, KIND_NAMES[col.kind]));
          return undefined;
      }
    };

    let failed = false;
    const push = (record: unknown[]) => {
      if (!inHeader) r++;
      else if (record.length === width) inHeader = false;
      else failed = true;
    };
    const close = () => {};
    // A turn of its own for the buffers (as the table-JSON decoder's): a few ms for a big page.
    yield;
    yield* steps.run(0, body.length, (from, to) => {
      if (core.parse(body.subarray(from, to), false, push, close) !== undefined || failed) throw BAIL;
      return to;
    });
    if (core.parse(undefined, true, push, close) !== undefined || failed || inHeader) throw BAIL;
    for (let j = 0; j < width; j++) {
      if (kinds[j] !== UTF8) continue;
      // Not zeroed when made (see unzeroedBytes): nothing past the strings may reach the batch.
      zeroTail(columns[j]!.u8, columns[j]!.pos);
      this.#bytesPerRow[j] = r > 0 ? columns[j]!.pos / r : 32;
    }
    return {
      length: r,
      columns: columns.map((c) => decodedColumn(c.kind, c.f64, c.i32, c.u8, c.valid, () => c.dict.entries())),
    };
  }
}

/** A null in a column whose kind is not a string or a date (those are handled inline). */
function setNull(col: Column, r: number): void {
  switch (col.kind) {
    case NUMBER:
    case DATETIME:
      col.f64[r] = 0;
      col.valid[r] = 0;
      break;
    case BOOLEAN:
      col.u8[r] = 2;
      break;
    default:
      col.i32[r] = -1;
  }
}

/** The reference path's wire value of a field, through the reference's own conversion for its kind. */
function setValue(col: Column, r: number, v: ReturnType<typeof fieldValue>): void {
  switch (col.kind) {
    case NUMBER: {
      const x = toNumber(v);
      if (Number.isNaN(x)) throw BAIL;
      col.f64[r] = x;
      col.valid[r] = 1;
      break;
    }
    case DATETIME: {
      const ms = toTimestampMs(v);
      if (Number.isNaN(ms)) throw BAIL;
      col.f64[r] = ms;
      col.valid[r] = 1;
      break;
    }
    case BOOLEAN: {
      const bit = toBooleanBit(v);
      if (bit < 0) throw BAIL;
      col.u8[r] = bit;
      break;
    }
    default:
      // Only NUMBER, DATETIME and BOOLEAN columns come here (strings and dates are read inline).
      throw BAIL;
  }
}

/** Doubles every column's row capacity; returns the new capacity. */
function growRows(columns: Column[], cap: number, used: number): number {
  const next = cap * 2;
  for (const col of columns) {
    if (col.f64.length > 0) col.f64 = ensure(col.f64, next, used);
    if (col.kind === UTF8) col.i32 = ensure(col.i32, next + 1, used + 1);
    else if (col.i32.length > 0) col.i32 = ensure(col.i32, next, used);
    if (col.kind === BOOLEAN) col.u8 = ensure(col.u8, next, used);
    if (col.valid.length > 0) col.valid = ensure(col.valid, next, used);
  }
  return next;
}
