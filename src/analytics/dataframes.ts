/**
 * Hand-offs from Arrow to data-frame engines. The engines are optional: nothing here imports them at
 * start-up, and a missing one is a `MissingPackageError` naming what is missing (optional-peer.ts).
 *
 * - `toPolars(table)`: Arrow IPC bytes into `pl.readIPC` (one copy, into Polars' Rust memory). The ticker
 *   column's growing dictionary is decoded to plain strings first: Polars refuses IPC with *delta*
 *   dictionaries, which is what a table of several batches with one growing dictionary serialises to.
 * - `toDuckDB(connection, source, name)`: streamed through `toParquet()` into a temporary file, then
 *   `CREATE TABLE name AS SELECT * FROM read_parquet(file)`. Parquet is the path DuckDB reads fastest
 *   with every type exact (DATE, TIMESTAMP WITH TIME ZONE, BOOLEAN, DOUBLE), it needs no extension, and
 *   the source may be a whole result stream that never fits in memory. (The appender would cross into
 *   DuckDB value by value from JavaScript: far slower for millions of rows.)
 * - arquero needs no helper: `aq.fromArrow(table)` uses the Arrow columns as they are (docs/analytics.md).
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { makeData, RecordBatch, type Schema, Struct, Table, tableToIPC, vectorFromArray } from 'apache-arrow';
import { MissingPackageError } from '../core/errors.js';
import { checkKeys, checkObject, invalid, optionKeys } from '../core/validate.js';
import { withoutDictionaries } from '../output/dictionaries.js';
import { ownBatch, ownTable } from '../output/own-arrow.js';
import { normalizeParquetOptions, type ParquetOptions, toParquet } from '../output/parquet.js';
import { RowCounter } from '../output/row-counter.js';
import { importOptionalPeer } from './optional-peer.js';

/**
 * The members of a nodejs-polars `DataFrame` that every version has. Declared here rather than imported:
 * nodejs-polars is an optional peer, and a `.d.ts` of ours that imports its types would not compile for
 * a consumer without it (unless they set `skipLibCheck`). Pass your `pl` (`{ polars: pl }`) or name the
 * type (`toPolars<pl.DataFrame>(table)`) to get the full `DataFrame`.
 */
export interface PolarsDataFrameLike {
  readonly height: number;
  readonly width: number;
  readonly columns: string[];
}

/** The part of nodejs-polars `toPolars()` uses; `DF` is what its `readIPC` returns. */
export interface PolarsLike<DF = PolarsDataFrameLike> {
  readIPC(buffer: Buffer): DF;
}

export interface ToPolarsOptions<DF = PolarsDataFrameLike> {
  /**
   * The nodejs-polars module to use (`import pl from 'nodejs-polars'`). When absent it is imported lazily:
   * pass it where that import cannot resolve (a Deno notebook with `npm:nodejs-polars`).
   */
  readonly polars?: PolarsLike<DF>;
}

async function loadPolars<DF>(): Promise<PolarsLike<DF>> {
  const name = 'nodejs-polars';
  const mod = await importOptionalPeer<{ default?: PolarsLike<DF> } & Partial<PolarsLike<DF>>>(
    name,
    'toPolars()',
  );
  const pl = mod.default ?? mod;
  if (typeof pl.readIPC !== 'function') {
    throw new MissingPackageError(
      name,
      name,
      `toPolars(): the module ${name} resolves to has no readIPC function; install nodejs-polars >= 0.24`,
    );
  }
  return pl as PolarsLike<DF>;
}

function asTable(source: Table | RecordBatch, argument: string): Table {
  // Tables and batches of another apache-arrow copy (a notebook's own) are rebuilt on this one's classes.
  const table = ownTable(source);
  if (table) return table;
  const batch = ownBatch(source);
  if (batch) return new Table(batch.schema, [batch]);
  throw invalid(argument, 'an apache-arrow Table or RecordBatch', source);
}

const POLARS_KEYS = optionKeys<ToPolarsOptions>({ polars: true });

/**
 * The table as a Polars DataFrame. Types: Utf8 and the ticker dictionary → String, Float64 → Float64,
 * DateDay → Date, Timestamp(ms, UTC) → Datetime(ms, UTC), Bool → Boolean.
 *
 * The type of the DataFrame is the one `readIPC` of the given `polars` returns; without it, name it:
 * `toPolars<pl.DataFrame>(table)` (this package's types do not depend on nodejs-polars').
 * A missing nodejs-polars, or its missing native binary, is a `MissingPackageError` (`DQS_MISSING_PACKAGE`).
 *
 * @example
 * import pl from 'nodejs-polars';
 * const df = await toPolars(await result.toTable(), { polars: pl });
 * df.groupBy('ticker').len();
 */
export async function toPolars<DF = PolarsDataFrameLike>(
  source: Table | RecordBatch,
  options: ToPolarsOptions<DF> = {},
): Promise<DF> {
  checkKeys(checkObject(options, 'options'), POLARS_KEYS, 'options of `toPolars()`');
  const table = asTable(source, 'source');
  const pl = options.polars ?? (await loadPolars<DF>());
  const batches = (table.batches.length ? table.batches : [emptyBatch(table.schema)]).map((b) =>
    withoutDictionaries(b),
  );
  return pl.readIPC(Buffer.from(tableToIPC(new Table(batches[0]!.schema, batches), 'file')));
}

/** A 0-row batch of `schema` (dictionary columns get an empty dictionary), for tables with no batch. */
function emptyBatch(schema: Schema): RecordBatch {
  const children = schema.fields.map((f) => vectorFromArray([], f.type).data[0]!);
  return new RecordBatch(
    schema,
    makeData({ type: new Struct(schema.fields), length: 0, nullCount: 0, children }),
  );
}

/** The part of a `@duckdb/node-api` `DuckDBConnection` that `toDuckDB()` uses. */
export interface DuckDBConnectionLike {
  run(sql: string): Promise<unknown>;
}

export interface ToDuckDBOptions {
  /**
   * `'create'`: `CREATE TABLE` (fails if it exists); `'replace'`: `CREATE OR REPLACE TABLE`;
   * `'append'`: `INSERT INTO` an existing table (columns by name).
   * @default 'create'
   */
  readonly mode?: 'create' | 'replace' | 'append';
  /** Where the temporary Parquet file goes (removed afterwards). @default os.tmpdir() */
  readonly tempDir?: string;
  /** The Parquet file's writer options; zstd by default, as `toParquet()`. */
  readonly parquet?: ParquetOptions;
  readonly signal?: AbortSignal;
}

/** Double quotes around an SQL identifier, inner ones doubled. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function quoteString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

function batchesOf(
  input: Table | RecordBatch | Iterable<RecordBatch> | AsyncIterable<RecordBatch>,
): Iterable<RecordBatch> | AsyncIterable<RecordBatch> {
  const source = ownTable(input) ?? ownBatch(input) ?? input;
  if (source instanceof Table) {
    // An empty table may have no batch at all; the Parquet writer needs one for the schema.
    return source.batches.length ? source.batches : [emptyBatch(source.schema)];
  }
  if (source instanceof RecordBatch) return [source];
  if (
    source !== null &&
    typeof source === 'object' &&
    (Symbol.asyncIterator in source || Symbol.iterator in source)
  ) {
    return source;
  }
  throw invalid('source', 'a Table, a RecordBatch or an (async) iterable of RecordBatches', source);
}

const DUCKDB_KEYS = optionKeys<ToDuckDBOptions>({ mode: true, tempDir: true, parquet: true, signal: true });

/**
 * Loads Arrow data into a DuckDB table through a temporary Parquet file, and returns the rows loaded.
 * `source` may be a `Table`, a `RecordBatch`, or a stream of batches (`result.stream()`,
 * `client.stream()`): then nothing is held in memory beyond a Parquet row group.
 *
 * @example
 * const instance = await DuckDBInstance.create(':memory:');
 * const connection = await instance.connect();
 * await toDuckDB(connection, client.stream('job_listings', { tickers: ['nasdaq:aapl'] }), 'jobs');
 * (await connection.runAndReadAll('SELECT count(*) FROM jobs')).getRows();
 */
export async function toDuckDB(
  connection: DuckDBConnectionLike,
  source: Table | RecordBatch | Iterable<RecordBatch> | AsyncIterable<RecordBatch>,
  tableName: string,
  options: ToDuckDBOptions = {},
): Promise<{ rows: number }> {
  if (typeof connection?.run !== 'function') {
    throw invalid('connection', 'a DuckDB connection (with a run(sql) method)', connection);
  }
  if (typeof tableName !== 'string' || tableName === '') {
    throw invalid('tableName', 'a non-empty string', tableName);
  }
  checkKeys(checkObject(options, 'options'), DUCKDB_KEYS, 'options of `toDuckDB()`');
  const mode = options.mode ?? 'create';
  if (mode !== 'create' && mode !== 'replace' && mode !== 'append') {
    throw invalid('mode', "'create', 'replace' or 'append'", mode);
  }
  normalizeParquetOptions(options.parquet ?? {}, 'parquet.');
  const batches = batchesOf(source);
  const dir = await mkdtemp(join(options.tempDir ?? tmpdir(), 'dqs-duckdb-'));
  try {
    const file = join(dir, `${randomUUID()}.parquet`);
    const counter = new RowCounter();
    await pipeline(Readable.from(batches), counter, toParquet(options.parquet), createWriteStream(file), {
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const name = quoteIdentifier(tableName);
    const read = `SELECT * FROM read_parquet(${quoteString(file)})`;
    const sql =
      mode === 'append'
        ? `INSERT INTO ${name} BY NAME ${read}`
        : `CREATE ${mode === 'replace' ? 'OR REPLACE ' : ''}TABLE ${name} AS ${read}`;
    await connection.run(sql);
    return { rows: counter.rows };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
