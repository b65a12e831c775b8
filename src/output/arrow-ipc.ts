/**
 * `toArrowIpc()`: a Duplex that takes `RecordBatch`es (as a ResultStream emits them) and gives Arrow IPC
 * bytes, for `pipeline(stream, toArrowIpc(), createWriteStream(path))`. apache-arrow's own Node adapter
 * does the work, with backpressure on both sides.
 */
import type { Duplex } from 'node:stream';
import { RecordBatchFileWriter, RecordBatchStreamWriter } from 'apache-arrow';
import { InvalidArgumentError } from '../core/errors.js';

export interface ArrowIpcOptions {
  /**
   * `'file'` (random access, `.arrow`; what `tableFromIPC`, Polars' `readIPC` and DuckDB read from disk) or
   * `'stream'` (`.arrows`; can be read while being written, e.g. through a pipe).
   * @default 'file'
   */
  readonly format?: 'file' | 'stream';
}

export function toArrowIpc(options: ArrowIpcOptions = {}): Duplex {
  const format = options.format ?? 'file';
  if (format !== 'file' && format !== 'stream') {
    throw new InvalidArgumentError('format', `Expected 'file' or 'stream', got ${JSON.stringify(format)}`);
  }
  const Writer = format === 'file' ? RecordBatchFileWriter : RecordBatchStreamWriter;
  return Writer.throughNode({ autoDestroy: true });
}
