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
import type { ColumnPlan } from '../convert/plan.js';
import type { PageRef } from '../core/errors.js';
import { type CsvCore, coreOf, PARSER_OPTIONS } from './csv.js';
import { BAIL, isDecline } from './json-scan.js';
import { type Kind, kindOf, type PageColumn, pageRowCapacity } from './kinds/index.js';
import { allSlices, StepBytes } from './slices.js';

/** Most body bytes per slice: csv-parse reads ~30 MB/s, so the slice's time (5 ms) ends it first. */
const SLICE_BYTES = 1024 * 1024;

/**
 * Decodes CSV pages of one result into columns. One decoder per stream: it remembers the string bytes
 * per row of the last page, to size the next page's buffers.
 */
export class FastCsvDecoder {
  readonly #kinds: Kind[];
  readonly #ids: readonly string[];
  readonly #bytesPerRow: Float64Array;
  readonly #steps = new StepBytes(SLICE_BYTES);

  constructor(plan: readonly ColumnPlan[]) {
    this.#kinds = plan.map(kindOf);
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
      // A declined value, or a buffer that could not grow (a page beyond typed-array limits): the
      // reference decides.
      if (isDecline(error)) return undefined;
      throw error;
    }
  }

  *#decode(body: Buffer, where: PageRef, core: CsvCore): Generator<void, DecodedColumns, void> {
    const ids = this.#ids;
    const width = ids.length;
    // A record of `width` fields is at least its commas and a line end: `width` bytes.
    let cap = pageRowCapacity(where.limit, body.length, width);
    const columns: PageColumn[] = this.#kinds.map((kind, j) =>
      kind.column(
        { rows: cap, limit: where.limit, bodyLength: body.length, bytesPerRow: this.#bytesPerRow[j]! },
        undefined,
      ),
    );
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
      if (j === 0 && r === cap) {
        cap *= 2;
        for (const c of columns) c.grow(cap, r);
      }
      columns[j]!.field(field.buf, len, quoted, r);
      return undefined;
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
    yield* this.#steps.run(0, body.length, (from, to) => {
      if (core.parse(body.subarray(from, to), false, push, close) !== undefined || failed) throw BAIL;
      return to;
    });
    if (core.parse(undefined, true, push, close) !== undefined || failed || inHeader) throw BAIL;
    const decoded = columns.map((c) => c.decoded(r));
    decoded.forEach((c, j) => {
      if (c.kind === 'utf8') this.#bytesPerRow[j] = r > 0 ? c.offsets[r]! / r : 32;
    });
    return { length: r, columns: decoded };
  }
}
