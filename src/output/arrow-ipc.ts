/**
 * `toArrowIpc()`: RecordBatches in (as a ResultStream emits them), Arrow IPC bytes out, for
 * `pipeline(stream, toArrowIpc(), createWriteStream(path))`. The encoding is `arrowIpcTransform`'s: a plain
 * Transform, so Node's backpressure applies on both sides and a failure tears it down cleanly.
 */
import type { Transform } from 'node:stream';
import { invalid } from '../core/validate.js';
import { arrowIpcTransform } from './ipc-transform.js';

export interface ArrowIpcOptions {
  /**
   * `'file'` (random access, `.arrow`; what `tableFromIPC`, Polars' `readIPC` and DuckDB read from disk) or
   * `'stream'` (`.arrows`; can be read while being written, e.g. through a pipe).
   * @default 'file'
   */
  readonly format?: 'file' | 'stream';
}

export function toArrowIpc(options: ArrowIpcOptions = {}): Transform {
  const format = options.format ?? 'file';
  if (format !== 'file' && format !== 'stream') {
    throw invalid('format', "'file' or 'stream'", format);
  }
  return arrowIpcTransform(format);
}
