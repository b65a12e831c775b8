/**
 * `toParquet()`: a Duplex from `RecordBatch`es to Parquet bytes, through parquet-wasm (Rust's `parquet`
 * crate compiled to WebAssembly: no native build, the .wasm ships in the package and loads from disk).
 *
 * Streaming, with bounded memory: each incoming batch crosses into WebAssembly as an Arrow IPC message
 * and goes into parquet-wasm's `transformParquetStream`, which writes a row group every `rowGroupSize`
 * rows and hands its bytes out at once. So at most one row group (encoded) plus one batch in flight is held,
 * however long the result. Batches are pulled only as the writer asks for them, and bytes are produced
 * only as the consumer reads, so backpressure reaches the result stream (and from there the network).
 *
 * The batches are re-cut to fixed row counts with the writer's own dictionaries first (`FixedBatches`,
 * slices of `rowGroupSize` rows or 64 Ki, whichever is smaller): where parquet-wasm cuts its data pages
 * follows the batches it is given, so without this the same rows read with other page sizes or another
 * concurrency made another file.
 *
 * Types: Utf8 → BYTE_ARRAY (UTF8), Dictionary<Utf8> → the same, dictionary-encoded, Float64 → DOUBLE,
 * Bool → BOOLEAN, DateDay → DATE, Timestamp(ms, UTC) → TIMESTAMP(MILLIS, isAdjustedToUTC). The Arrow schema
 * (with the field metadata) is stored too, so Arrow readers get the dictionary type back.
 *
 * @example await pipeline(client.stream('job_listings'), toParquet(), createWriteStream('jobs.parquet'));
 */
import { Duplex } from 'node:stream';
import { type RecordBatch, Table, tableToIPC } from 'apache-arrow';
import type { RecordBatch as WasmRecordBatch } from 'parquet-wasm';
import { InvalidArgumentError } from '../core/errors.js';
import { checkInteger, checkKeys, checkObject, invalid, optionKeys } from '../core/validate.js';
import { VERSION } from '../core/version.js';
import { DEFAULT_BATCH_SIZE, fixedBatches } from './fixed-batches.js';

export type ParquetCompression = 'zstd' | 'snappy' | 'gzip' | 'none';

export interface ParquetOptions {
  /** Column compression. @default 'zstd' */
  readonly compression?: ParquetCompression;
  /**
   * Rows per row group (minimum 1). The writer holds one row group in memory before writing it out,
   * so this bounds memory; readers parallelise over row groups.
   * @default 65_536
   */
  readonly rowGroupSize?: number;
}

/**
 * parquet-wasm (~15 MB of WebAssembly) is loaded when the first Parquet file is written, not when the
 * package is imported: most importers never write Parquet, and every one of them paid for it in RSS.
 */
type ParquetWasm = typeof import('parquet-wasm');
let parquetWasm: Promise<ParquetWasm> | undefined;
/**
 * @internal Stripped from the published `.d.ts`: its type is parquet-wasm's, whose declarations need the
 * DOM and WebAssembly libs, which a Node consumer's strict `tsc` (skipLibCheck false) does not have.
 */
export function loadParquetWasm(): Promise<ParquetWasm> {
  parquetWasm ??= import('parquet-wasm');
  return parquetWasm;
}

const CODECS = {
  zstd: 'ZSTD',
  snappy: 'SNAPPY',
  gzip: 'GZIP',
  none: 'UNCOMPRESSED',
} as const satisfies Readonly<Record<ParquetCompression, string>>;

/** @internal */
export interface NormalizedParquetOptions {
  readonly compression: (typeof CODECS)[ParquetCompression];
  readonly rowGroupSize: number;
}

const KEYS = optionKeys<ParquetOptions>({ compression: true, rowGroupSize: true });

/** @internal Checks and defaults; `prefix`: the path of options nested in others (`parquet.`). */
export function normalizeParquetOptions(options: ParquetOptions, prefix = ''): NormalizedParquetOptions {
  checkKeys(
    checkObject(options, prefix ? prefix.slice(0, -1) : 'options'),
    KEYS,
    'options of `toParquet()`',
    prefix,
  );
  const compression = options.compression ?? 'zstd';
  if (!Object.hasOwn(CODECS, compression)) {
    throw invalid(`${prefix}compression`, `one of ${Object.keys(CODECS).join(', ')}`, compression);
  }
  const rowGroupSize = checkInteger(options.rowGroupSize ?? 65_536, `${prefix}rowGroupSize`, 1);
  return { compression: CODECS[compression], rowGroupSize };
}

/** The batch as WebAssembly-side batches (one, or none for a 0-row batch). */
function toWasm(pq: ParquetWasm, batch: RecordBatch): WasmRecordBatch[] {
  const table = pq.Table.fromIPCStream(tableToIPC(new Table(batch.schema, [batch]), 'stream'));
  try {
    return table.recordBatches();
  } finally {
    table.free();
  }
}

/** Rust errors arrive as strings or plain values; streams want Errors. */
function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(`Parquet writer: ${String(err)}`);
}

export function toParquet(options: ParquetOptions = {}): Duplex {
  const { compression, rowGroupSize } = normalizeParquetOptions(options);
  return Duplex.from(async function* (source: AsyncIterable<RecordBatch>) {
    const pq = await loadParquetWasm();
    const batches = fixedBatches(source, Math.min(rowGroupSize, DEFAULT_BATCH_SIZE))[Symbol.asyncIterator]();
    // The writer takes its schema from the first batch, so there must be one, even with no rows.
    const head = await batches.next();
    if (head.done) {
      throw new InvalidArgumentError(
        'input',
        'Expected at least one RecordBatch (it carries the schema), got none',
      );
    }
    const first: RecordBatch = head.value;
    let pending: RecordBatch | undefined = first;
    let sent = 0;
    const input = new ReadableStream<WasmRecordBatch>(
      {
        async pull(controller) {
          for (;;) {
            const batch = pending ?? (await nextOrUndefined(batches));
            pending = undefined;
            if (batch === undefined) {
              if (sent === 0) controller.enqueue(emptyBatch(pq, first));
              controller.close();
              return;
            }
            if (batch.numRows === 0) continue;
            const wasm = toWasm(pq, batch);
            for (const b of wasm) controller.enqueue(b);
            sent += wasm.length;
            if (wasm.length > 0) return;
          }
        },
        async cancel() {
          await batches.return?.(undefined);
        },
      },
      // Pull a batch only when the writer asks for one: nothing queues up on this side.
      { highWaterMark: 0 },
    );
    const properties = new pq.WriterPropertiesBuilder()
      .setCompression(pq.Compression[compression])
      .setMaxRowGroupSize(rowGroupSize)
      .setCreatedBy(`dqs-client ${VERSION} (parquet-wasm)`)
      .build();
    try {
      const output: ReadableStream<Uint8Array> = await pq.transformParquetStream(input, properties);
      for await (const chunk of output) yield chunk;
    } catch (err) {
      throw asError(err);
    }
  });
}

async function nextOrUndefined<T>(it: AsyncIterator<T>): Promise<T | undefined> {
  const next = await it.next();
  return next.done ? undefined : next.value;
}

/** A 0-row WebAssembly batch with `batch`'s schema, for results with no rows. */
function emptyBatch(pq: ParquetWasm, batch: RecordBatch): WasmRecordBatch {
  const table = pq.Table.fromIPCStream(tableToIPC(new Table(batch.schema, [batch.slice(0, 0)]), 'stream'));
  try {
    const [b] = table.recordBatches();
    if (!b) throw new Error('Parquet writer: could not make an empty batch for the schema');
    return b;
  } finally {
    table.free();
  }
}
