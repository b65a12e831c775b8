/**
 * `RowCounter`: an object-mode pass-through for RecordBatches that counts their rows on the way, for
 * writers that report how many rows they wrote (the Parquet hand-off to DuckDB, partitioned exports).
 */
import { Transform, type TransformCallback } from 'node:stream';
import type { RecordBatch } from 'apache-arrow';

export class RowCounter extends Transform {
  /** Rows passed through so far; final once the pipeline has finished. */
  rows = 0;

  constructor() {
    super({ objectMode: true });
  }

  override _transform(batch: RecordBatch, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.rows += batch.numRows;
    callback(null, batch);
  }
}
