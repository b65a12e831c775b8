/**
 * `QueryResult`: a completed query (id, total, truncation, formats, column descriptors) that can be read
 * as many times as wanted: as a stream, a whole Arrow table, row objects, or a raw body download.
 */
import type { Readable } from 'node:stream';
import { inspect } from 'node:util';
import { type RecordBatch, Table } from 'apache-arrow';
import { checkKeys, checkObject, invalid, optionKeys } from '../core/validate.js';
import { type FieldDescriptor, type FormatName, MediaType } from '../core/wire.js';
import type { CallOptions } from '../transport/endpoints.js';
import { JUPYTER_DISPLAY, type MimeBundle, resultBundle, resultText } from './result-display.js';
import type { ResultInfo, ResultSource } from './result-source.js';
import { ResultStream } from './result-stream.js';
import type { ResultPart, SplitInfo } from './split-info.js';
import { normalizeStreamOptions, type StreamOptions } from './stream-options.js';

export interface DownloadOptions extends CallOptions {
  /** Any offered format, by name or media type. @default 'json' (table JSON) */
  readonly format?: FormatName | 'json' | (string & {});
  /** @default 1 */
  readonly start?: number;
  /** @default the whole result from `start` */
  readonly limit?: number;
}

/** Each result's source: how its pages are reached (internal to the library, see `resultSource`). */
const sources = new WeakMap<QueryResult, ResultSource>();

/** The source behind a result: for the library's own layers (the result cache), not its users. */
export function resultSource(result: QueryResult): ResultSource {
  return sources.get(result)!;
}

const DOWNLOAD_KEYS = optionKeys<DownloadOptions>({
  format: true,
  start: true,
  limit: true,
  signal: true,
  timeoutMs: true,
});

export class QueryResult implements ResultInfo {
  readonly datasetId: string;
  /** The query id (64 lower-case hex). */
  readonly id: string;
  /** Rows in the result (at most the row cap). */
  readonly total: number;
  /** True when the service cut the result at the row cap (`X-Truncated: true`). */
  readonly truncated: boolean;
  /** Media types the result can be read in. */
  readonly formats: readonly string[];
  /** The column descriptors, in row-value order. */
  readonly fields: readonly FieldDescriptor[];
  /** The client's `maxResponseBytes`: no page body of this result is read past it. */
  readonly maxResponseBytes: number;
  /** `last_date_updated` of the result's pages, when the query offers table JSON. */
  readonly lastDateUpdated: string | undefined;
  /** How a result of `split: true` was split (`undefined`: read as one query). */
  readonly split: SplitInfo | undefined;

  /** @internal Use `client.query()`. */
  constructor(source: ResultSource) {
    sources.set(this, source);
    this.datasetId = source.datasetId;
    this.id = source.id;
    this.total = source.total;
    this.truncated = source.truncated;
    this.formats = source.formats;
    this.fields = source.fields;
    this.maxResponseBytes = source.pages.maxResponseBytes;
    this.lastDateUpdated = source.lastDateUpdated;
    this.split = source.split;
  }

  /**
   * The parts of a result of `split: true` that the service truncated as a whole, in the order their rows
   * are read: each part's tickers, query id, rows, first row, and whether it is still truncated (a single
   * ticker over the cap). `undefined` for a result read as one query.
   */
  get parts(): readonly ResultPart[] | undefined {
    return this.split?.parts;
  }

  /** A Readable of `RecordBatch`es (or row objects with `output: 'rows'`), in row order. */
  stream(options: StreamOptions = {}): ResultStream {
    return this.#stream(options, '`result.stream()`');
  }

  /** `where`: the method the options were given to, as messages name it. */
  #stream(options: StreamOptions, where: string): ResultStream {
    const source = resultSource(this);
    return new ResultStream(async () => source, normalizeStreamOptions(options, undefined, where));
  }

  /** The whole result as one Arrow table (held in memory: for large results prefer `stream()`). */
  async toTable(options: Omit<StreamOptions, 'output'> = {}): Promise<Table> {
    const stream = this.#stream({ ...options, output: 'arrow' }, '`result.toTable()`');
    const batches: RecordBatch[] = [];
    // A batch is a page: the stream's step per chunk costs nothing here (unlike a row's, see toArray).
    for await (const batch of stream) batches.push(batch as RecordBatch);
    return new Table(stream.schema!, batches);
  }

  /** The whole result as row objects (dates as `Date`, nulls as null). */
  async toArray(options: Omit<StreamOptions, 'output'> = {}): Promise<Record<string, unknown>[]> {
    const rows: Record<string, unknown>[] = [];
    // A group (up to a thousand rows) at a time: no stream step per row.
    for await (const group of this.#stream({ ...options, output: 'rows' }, '`result.toArray()`').groups()) {
      for (const row of group) rows.push(row as Record<string, unknown>);
    }
    return rows;
  }

  /**
   * The raw response body of one GET in any offered format (XLS and map JSON included), for saving as is.
   * Large ranges are the server's to clamp: check `X-Total` and page yourself for more than one page.
   */
  async download(options: DownloadOptions = {}): Promise<Readable> {
    checkKeys(checkObject(options, 'options'), DOWNLOAD_KEYS, 'options of `result.download()`');
    if (this.split) {
      throw invalid(
        'download',
        'a result read as one query (a split result has a body per part: query each of `result.parts`)',
        this.id,
      );
    }
    const requested = options.format ?? 'json';
    const byName: Record<string, string> = { ...MediaType, json: MediaType.table };
    const mediaType = byName[requested] ?? requested;
    if (!this.formats.includes(mediaType)) {
      throw invalid('format', `one of the offered formats (${this.formats.join(', ')})`, requested);
    }
    const start = options.start ?? 1;
    const limit = options.limit ?? Math.max(1, this.total - start + 1);
    const response = await resultSource(this).pages.openPage(this.datasetId, this.id, {
      start,
      limit,
      mediaType,
      signal: options.signal,
      timeoutMs: options.timeoutMs,
    });
    // A whole result can take longer than timeoutMs to arrive: only silence between chunks times out.
    response.streaming();
    response.body.once('close', response.done);
    return response.body;
  }

  /**
   * `console.log(result)` / the REPL: dataset, query id, total, truncation and the columns with the Arrow
   * types a stream will produce. Fetches nothing.
   */
  [inspect.custom](depth: number): string {
    return depth < 0 ? `[QueryResult ${this.datasetId} ${this.id.slice(0, 12)}…]` : resultText(this);
  }

  /** Deno's Jupyter kernel: the same summary as HTML (schema, row count, truncation). Fetches nothing. */
  [JUPYTER_DISPLAY](): MimeBundle {
    return resultBundle(this);
  }
}
