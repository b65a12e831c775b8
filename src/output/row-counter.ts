/**
 * `RowCounter`: an object-mode pass-through for RecordBatches that counts their rows on the way, for
 * writers that report how many rows they wrote (the Parquet hand-off to DuckDB, partitioned exports, the
 * CLI's progress bar, which is told each new count).
 */
import { Transform, type TransformCallback } from 'node:stream';
import type { RecordBatch } from 'apache-arrow';

export class RowCounter extends Transform {
  /** Rows passed through so far; final once the pipeline has finished. */
  rows = 0;
  readonly #onRows: ((rows: number) => void) | undefined;

  /**
   * `onRows`: told the count after each batch. Holds one batch at most (a display then shows rows that
   * were written, not rows buffered).
   */
  constructor(onRows?: (rows: number) => void) {
    super({ objectMode: true, highWaterMark: 1 });
    this.#onRows = onRows;
  }

  override _transform(batch: RecordBatch, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.rows += batch.numRows;
    this.#onRows?.(this.rows);
    callback(null, batch);
  }
}
