/**
 * `exportPartitioned()`: one query per ticker, run a few at a time through one client, each streamed into
 * its own Parquet file of a Hive-partitioned dataset that DuckDB, Polars, Spark or Trino read as one table:
 *
 *     <outDir>/dataset=<dataset>/ticker=<ticker>/part-0.parquet
 *
 * Invariants:
 * - **A partition is finished exactly when its final file exists.** Bytes go through a `SafeFile`
 *   (core/safe-file): a hidden temporary file with a random name in the partition's directory
 *   (`.part-0.parquet.<pid>-<random>.tmp`: a `*.parquet` glob never matches it, Spark and Trino skip
 *   hidden files), never opened through a link, fsynced and renamed into place when complete. So a re-run
 *   skips finished partitions (resume), an interrupted one leaves no half file an engine would read, and
 *   the leftovers of a killed run are removed by the next one (never those of a run still going).
 * - **Partition values are percent-encoded** as DuckDB's own `PARTITION_BY` writer does: every byte of the
 *   UTF-8 value except `A-Z a-z 0-9 - . _ ~` becomes `%XX` (`nasdaq:aapl` → `ticker=nasdaq%3Aaapl`).
 *   DuckDB, Polars, Spark and Hive decode it back when reading; no value can make a path separator.
 * - **An empty partition is a 0-row file** with the full schema: it is a finished partition like any other
 *   (a re-run does not query it again), and the dataset stays readable when every ticker is empty.
 * - **One budget.** Every query goes through the one `DatasetClient` given: its connections, its
 *   `rateLimit` (or the one it learned from a 429) and its adaptive concurrency are shared by
 *   construction. At most `concurrency` queries run at once (default 8: a small query is two requests,
 *   so many at once keep a distant service busy); with `stream.concurrency` left at `'auto'`, all their
 *   page requests together stay within the one limit the client measures, backing off on 429s.
 * - The partition files keep the `ticker` column (the same value as the directory), so a file read on its
 *   own still says whose rows it holds; engines reading with Hive partitioning get one `ticker` column.
 *   It is a plain string in the files (not the stream's dictionary), the type Hive partitioning infers
 *   from the path, so that readers that match the two (pyarrow's dataset API) accept the lake.
 * - **Nothing but Parquet files** in the tree once a run is over: no manifest or `_SUCCESS` marker, since
 *   Polars refuses a directory with files of another extension (DuckDB and Spark would cope). The run's
 *   figures are its return value; a skipped partition's row count is read from its Parquet footer.
 * - One directory holds one query: resuming with other `body` members (filters) would mix two queries in
 *   one table, and nothing on disk can tell. Use another `outDir` for another query.
 *
 * @example
 * const report = await exportPartitioned(client, {
 *   dataset: 'job_listings', tickers: ['nasdaq:aapl', 'nyse:ibm'], outDir: 'lake',
 * });
 * // duckdb: SELECT ticker, count(*) FROM read_parquet('lake/dataset=job_listings/*\/*.parquet', hive_partitioning = true) GROUP BY ticker
 */
import { openAsBlob } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import PQueue from 'p-queue';
import type { DatasetClient } from '../client.js';
import { abortReason } from '../core/abortable.js';
import { checkOtherMembers, type RawQueryBody, withTickers } from '../core/raw-body.js';
import { SafeFile } from '../core/safe-file.js';
import { checkInteger, checkKeys, checkObject, checkSignal, invalid, optionKeys } from '../core/validate.js';
import { plainStringColumns } from '../output/dictionaries.js';
import {
  loadParquetWasm,
  normalizeParquetOptions,
  type ParquetOptions,
  toParquet,
} from '../output/parquet.js';
import { RowCounter } from '../output/row-counter.js';
import { normalizeStreamOptions, STREAM_OPTIONS, type StreamOptions } from '../query/stream-options.js';
import { checkDatasetId, checkTicker } from '../transport/validate.js';

/** Options of each partition's result stream. */
export type PartitionStreamOptions = Omit<StreamOptions, 'output' | 'signal' | 'startRow'>;

export interface PartitionedExportOptions {
  /** The dataset id, e.g. `job_listings`. */
  readonly dataset: string;
  /** One partition (one query) per ticker; repeats are dropped. At least one. */
  readonly tickers: readonly string[];
  /** The lake's root: the dataset goes to `<outDir>/dataset=<dataset>/`. Created if missing. */
  readonly outDir: string;
  /**
   * Members of each query's body the spec does not show (`filters`, `sorts`…), sent with every ticker:
   * `rawBody({ … })`, without `tickers`.
   */
  readonly body?: RawQueryBody;
  /** Queries (partitions) at once (minimum 1); their page requests share the client's adaptive limit. @default 8 */
  readonly concurrency?: number;
  /** Each partition's stream: `pageSize`, `concurrency` (page requests per query), `format`, `types`… */
  readonly stream?: PartitionStreamOptions;
  /** The Parquet writer's options. @default { compression: 'zstd', rowGroupSize: 65_536 } */
  readonly parquet?: ParquetOptions;
  /** Write finished partitions again instead of skipping them. @default false */
  readonly overwrite?: boolean;
  /** Stops every query; finished partitions stay, temporary files are removed. */
  readonly signal?: AbortSignal;
  /** Called as each partition is finished: written now, or skipped because it already was. */
  readonly onPartition?: (report: PartitionReport) => void;
  /** Called as each partition's rows are read (per page). */
  readonly onProgress?: (event: PartitionProgress) => void;
}

export interface PartitionReport {
  readonly ticker: string;
  /** The partition's file: `<outDir>/dataset=<dataset>/ticker=<encoded ticker>/part-0.parquet`. */
  readonly path: string;
  /** `'written'` by this run; `'skipped'`: the file was there (a partition finished by an earlier run). */
  readonly status: 'written' | 'skipped';
  /** Rows in the file (0 for an empty partition); for a skipped one, from its Parquet footer. */
  readonly rows: number;
  /** Size of the file. */
  readonly bytes: number;
  /** The service cut this ticker's result at its row cap (the file holds `rows` of more). Unknown when skipped. */
  readonly truncated: boolean | undefined;
  /** The query's id; unknown when skipped. */
  readonly queryId: string | undefined;
  /** Time spent on the partition by this run. */
  readonly ms: number;
}

export interface PartitionProgress {
  readonly ticker: string;
  /** Rows of this partition read so far. */
  readonly rows: number;
  /** Rows of this partition in all. */
  readonly total: number;
}

export interface PartitionedExportResult {
  readonly dataset: string;
  /** `<outDir>/dataset=<dataset>`: the directory engines read as one table. */
  readonly root: string;
  /** One report per ticker, in the order given. */
  readonly partitions: readonly PartitionReport[];
  readonly written: number;
  readonly skipped: number;
  /** Rows and bytes written by this run. */
  readonly rowsWritten: number;
  readonly bytesWritten: number;
}

/**
 * The columns a partition's path names. A file's own column of that name is written as a plain string:
 * what Hive partitioning infers from the path. pyarrow's dataset reader refused the lake while the files
 * kept the stream's Dictionary<Utf8> ticker ("ticker has incompatible types: dictionary vs string");
 * DuckDB, Polars and pandas read either.
 */
export const PARTITION_COLUMNS: ReadonlySet<string> = new Set(['dataset', 'ticker']);

/** The file in each partition directory. */
export const PARTITION_FILE = 'part-0.parquet';

/**
 * A Hive partition value as it appears in a directory name: percent-encoded UTF-8 except for RFC 3986's
 * unreserved characters, which is what DuckDB's `PARTITION_BY` writes and what DuckDB, Polars, Spark and
 * Hive decode on reading. `nasdaq:aapl` → `nasdaq%3Aaapl`, `a/b` → `a%2Fb`.
 */
export function hivePartitionValue(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** `<outDir>/dataset=<dataset>`. */
export function datasetDirectory(outDir: string, dataset: string): string {
  return join(outDir, `dataset=${hivePartitionValue(dataset)}`);
}

/** `<outDir>/dataset=<dataset>/ticker=<ticker>/part-0.parquet`. */
export function partitionPath(outDir: string, dataset: string, ticker: string): string {
  return join(datasetDirectory(outDir, dataset), `ticker=${hivePartitionValue(ticker)}`, PARTITION_FILE);
}

async function fileSize(path: string): Promise<number | undefined> {
  try {
    const s = await stat(path);
    return s.isFile() ? s.size : undefined;
  } catch {
    return undefined;
  }
}

interface Normalized {
  readonly dataset: string;
  readonly tickers: readonly string[];
  readonly outDir: string;
  readonly body: RawQueryBody | undefined;
  readonly concurrency: number;
  readonly stream: PartitionStreamOptions;
  readonly parquet: ParquetOptions;
  readonly overwrite: boolean;
  readonly onProgress: ((event: PartitionProgress) => void) | undefined;
}

const KEYS = optionKeys<PartitionedExportOptions>({
  dataset: true,
  tickers: true,
  outDir: true,
  body: true,
  concurrency: true,
  stream: true,
  parquet: true,
  overwrite: true,
  signal: true,
  onPartition: true,
  onProgress: true,
});
const { output: _output, signal: _signal, startRow: _startRow, ...PARTITION_STREAM_OPTIONS } = STREAM_OPTIONS;
const STREAM_KEYS = optionKeys<PartitionStreamOptions>(PARTITION_STREAM_OPTIONS);

function normalize(options: PartitionedExportOptions): Normalized {
  checkKeys(checkObject(options, 'options'), KEYS, 'options of `exportPartitioned()`');
  const dataset = checkDatasetId(options.dataset, 'dataset');
  if (!Array.isArray(options.tickers) || options.tickers.length === 0) {
    throw invalid('tickers', 'a non-empty array of tickers (one partition each)', options.tickers);
  }
  const tickers = [...new Set(options.tickers.map((t) => checkTicker(t, 'tickers')))];
  if (typeof options.outDir !== 'string' || options.outDir === '') {
    throw invalid('outDir', 'a directory path', options.outDir);
  }
  const body = checkOtherMembers(options.body);
  const concurrency = checkInteger(options.concurrency ?? 8, 'concurrency', 1);
  const stream = options.stream ?? {};
  // Validated now, so a bad page size fails before any partition is touched.
  normalizeStreamOptions(stream, STREAM_KEYS, '`exportPartitioned()`', 'stream.');
  checkSignal(options.signal);
  normalizeParquetOptions(options.parquet ?? {}, 'parquet.');
  return {
    dataset,
    tickers,
    outDir: options.outDir,
    body,
    concurrency,
    stream,
    parquet: options.parquet ?? {},
    overwrite: options.overwrite === true,
    onProgress: options.onProgress,
  };
}

/**
 * Exports one Parquet partition per ticker (see the module comment for the layout and guarantees).
 * Rejects with the first failure after every query in flight has stopped and its temporary file is gone;
 * partitions finished before it stay, and calling again with the same options resumes.
 */
export async function exportPartitioned(
  client: DatasetClient,
  options: PartitionedExportOptions,
): Promise<PartitionedExportResult> {
  if (typeof client?.stream !== 'function') {
    throw invalid('client', 'a DatasetClient', client);
  }
  const opts = normalize(options);
  const root = datasetDirectory(opts.outDir, opts.dataset);
  await mkdir(root, { recursive: true });
  const controller = new AbortController();
  const userSignal = options.signal;
  const onUserAbort = () => controller.abort(abortReason(userSignal!, 'The partitioned export'));
  if (userSignal?.aborted) onUserAbort();
  else userSignal?.addEventListener('abort', onUserAbort, { once: true });

  const reports: (PartitionReport | undefined)[] = new Array(opts.tickers.length);
  let failure: { error: unknown } | undefined;
  // One task per ticker; a task never rejects, so awaiting them all waits for every query in flight to
  // stop (and remove its temporary file) after a failure. The tickers not started then are dropped.
  const queue = new PQueue({ concurrency: opts.concurrency });
  opts.tickers.forEach((ticker, i) => {
    void queue.add(async () => {
      if (failure || controller.signal.aborted) return;
      try {
        const report = await exportPartition(client, opts, ticker, controller.signal);
        reports[i] = report;
        options.onPartition?.(report);
      } catch (err) {
        if (!failure) {
          failure = { error: err };
          controller.abort(err);
          queue.clear();
        }
      }
    });
  });
  try {
    // A task removed by `clear()` never settles: wait for those that started (the queue then goes idle).
    await queue.onIdle();
  } finally {
    userSignal?.removeEventListener('abort', onUserAbort);
  }
  if (failure) throw failure.error;
  if (controller.signal.aborted) throw abortReason(controller.signal, 'The partitioned export');

  const partitions = reports as PartitionReport[];
  const done = partitions.filter((p) => p.status === 'written');
  return {
    dataset: opts.dataset,
    root,
    partitions,
    written: done.length,
    skipped: partitions.length - done.length,
    rowsWritten: done.reduce((n, p) => n + p.rows, 0),
    bytesWritten: done.reduce((n, p) => n + p.bytes, 0),
  };
}

async function exportPartition(
  client: DatasetClient,
  opts: Normalized,
  ticker: string,
  signal: AbortSignal,
): Promise<PartitionReport> {
  const started = performance.now();
  const path = partitionPath(opts.outDir, opts.dataset, ticker);
  const dir = dirname(path);
  if (!opts.overwrite) {
    const size = await fileSize(path);
    if (size !== undefined) {
      return {
        ticker,
        path,
        status: 'skipped',
        rows: await footerRows(path),
        bytes: size,
        truncated: undefined,
        queryId: undefined,
        ms: performance.now() - started,
      };
    }
  }
  await mkdir(dir, { recursive: true });
  const file = await SafeFile.create(path);
  try {
    const stream = client.stream(opts.dataset, withTickers(opts.body, [ticker]), { ...opts.stream, signal });
    const onProgress = opts.onProgress;
    if (onProgress) stream.on('progress', (e) => onProgress({ ticker, rows: e.rows, total: e.total }));
    const counter = new RowCounter();
    await pipeline(
      stream,
      counter,
      plainStringColumns(PARTITION_COLUMNS),
      toParquet(opts.parquet),
      file.stream,
    );
    const bytes = await file.commit();
    const source = stream.source;
    return {
      ticker,
      path,
      status: 'written',
      rows: counter.rows,
      bytes,
      truncated: source?.truncated,
      queryId: source?.id,
      ms: performance.now() - started,
    };
  } catch (err) {
    await file.abort();
    throw err;
  }
}

/** The row count in a Parquet file's footer; reads the footer only, not the data. */
async function footerRows(path: string): Promise<number> {
  const { ParquetFile } = await loadParquetWasm();
  const file = await ParquetFile.fromFile(await openAsBlob(path));
  try {
    const metadata = file.metadata();
    const fileMetadata = metadata.fileMetadata();
    try {
      return Number(fileMetadata.numRows());
    } finally {
      fileMetadata.free();
      metadata.free();
    }
  } finally {
    file.free();
  }
}
