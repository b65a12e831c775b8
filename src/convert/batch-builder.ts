/**
 * Wire rows → Arrow RecordBatches, column by column into hand-filled typed arrays (see columns/).
 * One builder serves one result stream: appending pages in order and flushing whenever a batch is due.
 * Dictionary columns keep one growing dictionary over the builder's life, which is what lets the IPC
 * writers emit every flushed batch (deltas, never replacements): do not mix batches of two builders of
 * the same plan in one IPC stream or file.
 */

import { makeData, RecordBatch, type Schema, Struct } from 'apache-arrow';
import { DecodeError, type PageRef, safeRepr } from '../core/errors.js';
import { invalid } from '../core/validate.js';
import type { WireValue } from '../core/wire.js';
import type { DecodedColumns } from './column-data.js';
import { accumulatorFor, type ColumnAccumulator, type WireRows } from './columns/index.js';
import type { ColumnPlan } from './plan.js';
import { buildSchema } from './schema.js';
import { invalidValue, isValidFor } from './values.js';

export interface ConvertOptions {
  /**
   * A value that breaks its column's type: throw `InvalidValueError` (with page, row and column), or
   * store a null and go on.
   * @default 'error'
   */
  readonly onInvalid?: 'error' | 'null';
}

/** Validates `onInvalid`; shared with the row factory. */
export function normalizeOnInvalid(options: ConvertOptions | undefined): 'error' | 'null' {
  const value = options?.onInvalid ?? 'error';
  if (value !== 'error' && value !== 'null') {
    throw invalid('onInvalid', "'error' or 'null'", value);
  }
  return value;
}

/** The error for a row that is not an array of exactly one value per field. */
export function rowShapeError(
  row: unknown,
  fieldCount: number,
  rowNumber: number,
  page?: PageRef,
): DecodeError {
  const what = Array.isArray(row) ? `has ${row.length} values` : `is not an array (${safeRepr(row)})`;
  return new DecodeError(`A result row ${what}, expected ${fieldCount} (one per field)`, {
    page,
    row: rowNumber,
  });
}

/**
 * @example
 * const builder = new RecordBatchBuilder(planColumns(page.fields));
 * builder.appendRows(page.rows, page.start, { start: page.start, limit: page.limit });
 * const batch = builder.flush();
 */
export class RecordBatchBuilder {
  readonly schema: Schema;
  readonly #plan: readonly ColumnPlan[];
  readonly #columns: ColumnAccumulator[];
  readonly #struct: Struct;
  readonly #invalidToNull: boolean;
  #length = 0;

  constructor(plan: readonly ColumnPlan[], options: ConvertOptions = {}) {
    this.#invalidToNull = normalizeOnInvalid(options) === 'null';
    this.#plan = plan;
    this.schema = buildSchema(plan);
    this.#struct = new Struct(this.schema.fields);
    this.#columns = plan.map(accumulatorFor);
  }

  /** Rows appended since the last flush. */
  get length(): number {
    return this.#length;
  }

  /**
   * Appends wire rows (`rows[i][j]` is the value of field j). All or nothing: when a row has the wrong
   * number of values (`DecodeError`) or a value breaks its type (`InvalidValueError`, unless
   * `onInvalid: 'null'`), nothing of this call is kept.
   *
   * @param firstRow 1-based result position of `rows[0]`, for error locations.
   * @param page the page request the rows came from, for error locations.
   */
  appendRows(rows: readonly (readonly WireValue[])[], firstRow: number, page?: PageRef): void {
    const width = this.#columns.length;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      if (!Array.isArray(row) || row.length !== width) throw rowShapeError(row, width, firstRow + i, page);
    }
    const columns = this.#columns;
    for (const column of columns) column.mark();
    try {
      for (let j = 0; j < width; j++) {
        const bad = columns[j]!.appendColumn(rows, this.#plan[j]!.index, this.#invalidToNull);
        if (bad >= 0) throw this.#firstInvalid(rows, firstRow, page);
      }
    } catch (error) {
      for (const column of columns) column.rollback();
      throw error;
    }
    this.#length += rows.length;
  }

  /**
   * Appends rows `[from, to)` of a page already decoded to columns (by the table-JSON byte decoder,
   * which checked every value as `appendRows` would). Its columns must follow this builder's plan.
   */
  appendDecoded(page: DecodedColumns, from: number, to: number): void {
    const columns = this.#columns;
    if (page.columns.length !== columns.length || from < 0 || to > page.length || from > to) {
      throw new DecodeError('Decoded columns do not match the plan');
    }
    for (let j = 0; j < columns.length; j++) columns[j]!.appendDecoded(page.columns[j]!, from, to);
    this.#length += to - from;
  }

  /**
   * A batch of exactly the rows of a decoded page, built around the page's own buffers where they
   * already have Arrow's layout (numbers, dates, strings), so they are not copied twice more (into
   * the builder, then out of it). The builder must be empty (`length === 0`), and the page is the
   * batch's from then on: the decoder must not reuse it. Same batch as `appendDecoded` + `flush`.
   */
  adoptDecoded(page: DecodedColumns): RecordBatch {
    const columns = this.#columns;
    if (page.columns.length !== columns.length || this.#length !== 0) {
      throw new DecodeError('Decoded columns do not match the plan, or the builder is not empty');
    }
    const length = page.length;
    const children = columns.map((c, j) => c.adoptDecoded(page.columns[j]!, length));
    const data = makeData({ type: this.#struct, length, nullCount: 0, children });
    return new RecordBatch(this.schema, data);
  }

  /** A batch of everything appended since the last flush (possibly 0 rows, with the schema); resets. */
  flush(): RecordBatch {
    const children = this.#columns.map((c) => c.flush());
    const data = makeData({ type: this.#struct, length: this.#length, nullCount: 0, children });
    this.#length = 0;
    return new RecordBatch(this.schema, data);
  }

  /**
   * Columns are appended one at a time, so the first failing column need not hold the first bad value
   * in row order. Errors are rare: rescan row by row with the same validity test to report that one.
   */
  #firstInvalid(rows: WireRows, firstRow: number, page: PageRef | undefined): Error {
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      for (const column of this.#plan) {
        const v = row[column.index];
        if (v !== null && v !== undefined && !isValidFor(column.kind, v, column.bigNumbers)) {
          const where = { page, row: firstRow + i, column: column.id };
          return invalidValue(column.kind, v, where, column.bigNumbers);
        }
      }
    }
    return new DecodeError('A value failed conversion but could not be located again', { page });
  }
}
