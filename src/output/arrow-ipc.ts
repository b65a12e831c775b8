/**
 * `toArrowIpc()`: RecordBatches in (as a ResultStream emits them), Arrow IPC bytes out, for
 * `pipeline(stream, toArrowIpc(), createWriteStream(path))`. The encoding is `arrowIpcTransform`'s: a plain
 * Transform, so Node's backpressure applies on both sides and a failure tears it down cleanly.
 */
import type { Transform } from 'node:stream';
import { checkKeys, checkObject, invalid, optionKeys } from '../core/validate.js';
import { DEFAULT_BATCH_SIZE } from './fixed-batches.js';
import { arrowIpcTransform } from './ipc-transform.js';

export interface ArrowIpcOptions {
  /**
   * `'file'` (random access, `.arrow`; what `tableFromIPC`, Polars' `readIPC` and DuckDB read from disk) or
   * `'stream'` (`.arrows`; can be read while being written, e.g. through a pipe).
   * @default 'file'
   */
  readonly format?: 'file' | 'stream';
  /**
   * Rows per record batch in the output (minimum 1; the last batch may be shorter), whatever the batches
   * coming in: the bytes depend on the rows alone, so the same rows read with other page sizes, another
   * concurrency or from the cache write the same file.
   * @default 65_536
   */
  readonly batchSize?: number;
}

const KEYS = optionKeys<ArrowIpcOptions>({ format: true, batchSize: true });

export function toArrowIpc(options: ArrowIpcOptions = {}): Transform {
  checkKeys(checkObject(options, 'options'), KEYS, 'options of `toArrowIpc()`');
  const format = options.format ?? 'file';
  if (format !== 'file' && format !== 'stream') {
    throw invalid('format', "'file' or 'stream'", format);
  }
  return arrowIpcTransform(format, options.batchSize ?? DEFAULT_BATCH_SIZE);
}
