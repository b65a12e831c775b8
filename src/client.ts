/**
 * `DatasetClient`: every endpoint of the service (from `EndpointClient`) plus the query lifecycle:
 * `query()` creates, waits and describes a result; `stream()` does all of that inside a stream.
 *
 * Round trips: a small query that the create answers `complete` costs two requests, the POST and one
 * data GET. No HEAD (the handle has the total and formats; the GET's `X-Truncated` says the rest), and no
 * separate 1-row request for the descriptors: the first data page carries them and is kept for the
 * stream, which then starts at the page after it.
 */
import type { CacheEvent } from './cache/events.js';
import { type CacheOptions, normalizeCacheOptions } from './cache/options.js';
import { ResultCache } from './cache/result-cache.js';
import { ProtocolError, ResponseTooLargeError } from './core/errors.js';
import type { RawQueryBody } from './core/raw-body.js';
import { checkKeys, checkObject, optionalBoolean, optionalInteger, optionKeys } from './core/validate.js';
import {
  type FieldDescriptor,
  MediaType,
  type QueryBody,
  type QueryHandle,
  ROW_CAP,
  type WireBody,
} from './core/wire.js';
import { envelopeOf, parseTablePage } from './decode/table-json.js';
import { readTableEnvelope } from './decode/table-json-fast.js';
import { AdaptiveConcurrency } from './query/concurrency.js';
import type { PageRange } from './query/page-plan.js';
import { checkRowLimit } from './query/page-plan.js';
import { QueryResult } from './query/query-result.js';
import type { KeptPage, ResultSource } from './query/result-source.js';
import { ResultStream } from './query/result-stream.js';
import { type ConcurrencyChange, RequestScheduler } from './query/scheduler.js';
import { reportSplit, type SplitWarning, splitIfTruncated } from './query/split.js';
import {
  DEFAULT_MAX_CONCURRENCY,
  DEFAULT_PAGE_SIZE,
  normalizeStreamOptions,
  STREAM_OPTIONS,
  type StreamOptions,
} from './query/stream-options.js';
import { createAndWait, WAIT_OPTIONS, type WaitOptions, waitForQuery } from './query/wait.js';
import { inPhase, type QueryTelemetry, traced } from './telemetry/telemetry.js';
import { type CheckTickersMode, normalizeCheckTickers, tickerCheck } from './tickers/coverage.js';
import { EndpointClient, type PageBytes } from './transport/endpoints.js';
import { formatsHeader, truncatedHeader } from './transport/headers.js';
import { bodyText } from './transport/http.js';
import { CLIENT_OPTIONS, type ClientOptions } from './transport/options.js';
import { checkQueryBody } from './transport/validate.js';

export interface QueryOptions extends WaitOptions {
  /**
   * The most rows the service may say the result has: a larger total is a `RowLimitError` before any
   * page is read. @default 500_000 (the spec's row cap)
   */
  readonly maxRows?: number;
  /**
   * A result of at most this many rows is read whole by its first page; a larger one's first page is
   * its first `min(firstPageRows, 1000)` rows. Either way the first page's rows serve the first stream
   * and its descriptors describe the result. @default 10_000
   */
  readonly firstPageRows?: number;
  /**
   * With a caching client: `false` bypasses the cache for this query, `'refresh'` reads the service and
   * replaces the entry. @default true
   */
  readonly cache?: boolean | 'refresh' | undefined;
  /**
   * Before creating the query, check that the dataset carries each of `body.tickers`: one
   * `GET /datasets/?ticker=` per distinct ticker, 8 at a time. `'warn'` (or `true`) emits a process
   * warning naming the others (code `DQS_UNKNOWN_TICKERS`, on stderr unless handled) and goes on;
   * `'error'` refuses the query with an `InvalidArgumentError` (`tickers`). The service itself answers
   * a ticker it lacks with no rows, silently. With a caching client the answer is kept in the entry: a
   * hit validated with the service (or allowed by `maxAge`) warns or refuses as the first run did,
   * without asking again (docs/cache.md).
   * @default false
   */
  readonly checkTickers?: boolean | CheckTickersMode | undefined;
  /**
   * @internal The CLI's wording: with `checkTickers`, called with the unknown tickers (never empty)
   * instead of the warning or the error; it may throw to refuse the query.
   */
  readonly onUnknownTickers?: ((unknown: readonly string[]) => void) | undefined;
  /**
   * A result of `body.tickers` truncated at the row cap is read in parts that fit: the list is split in
   * halves, and each half again while the service truncates it (the HEAD says), then every part is read,
   * as one result: the parts in list order (repeated tickers dropped), each part's rows in the service's
   * order, one schema (`SplitSchemaError` otherwise), every row once. `result.parts` and the stream's
   * `'split'` event say how the list was split. A ticker whose rows alone pass the cap stays truncated
   * (the only truncated part, with a process warning `DQS_SPLIT_TICKER_OVER_CAP`); a query without
   * tickers cannot be split (warning `DQS_SPLIT_NO_TICKERS`). Costs nothing when the result fits.
   * @default false
   */
  readonly split?: boolean | undefined;
  /** @internal The CLI's wording: called with each warning of `split` instead of a process warning. */
  readonly onSplitWarning?: ((warning: SplitWarning) => void) | undefined;
}

export interface DatasetClientOptions extends ClientOptions {
  /**
   * A local result cache (docs/cache.md): `true` for the defaults, or `{ dir, maxAge, maxBytes, refresh }`.
   * A repeated query is then validated with two small requests and served from disk.
   * @default false
   */
  readonly cache?: boolean | CacheOptions | undefined;
}

const QUERY_OPTIONS = {
  ...WAIT_OPTIONS,
  maxRows: true,
  firstPageRows: true,
  cache: true,
  checkTickers: true,
  onUnknownTickers: true,
  split: true,
  onSplitWarning: true,
} as const satisfies { readonly [K in keyof Required<QueryOptions>]: true };
const QUERY_KEYS = optionKeys<QueryOptions>(QUERY_OPTIONS);
const STREAM_QUERY_KEYS = optionKeys<StreamOptions & QueryOptions>({ ...QUERY_OPTIONS, ...STREAM_OPTIONS });
const CLIENT_KEYS = optionKeys<DatasetClientOptions>({ ...CLIENT_OPTIONS, cache: true });

/** The client's options with no key it does not know (checked before anything else of them). */
function clientOptions(options: DatasetClientOptions): DatasetClientOptions {
  checkKeys(checkObject(options, 'options'), CLIENT_KEYS, 'options of `new DatasetClient()`');
  return options;
}

/**
 * Events: `'retry'` (see `EndpointClient`), `'concurrency'` and, with a cache, `'cache'` (a `CacheEvent`:
 * hit, miss, stale, stored, ...).
 */
export class DatasetClient extends EndpointClient {
  #scheduler: RequestScheduler | undefined;
  /** Column descriptors of results read, by `descriptorKey`: an empty result takes them from here. */
  readonly #descriptors = new Map<string, Described>();
  readonly #maxConcurrency: number;
  readonly #cache: ResultCache | undefined;

  constructor(options: DatasetClientOptions = {}) {
    super(clientOptions(options));
    this.#maxConcurrency = Math.min(
      DEFAULT_MAX_CONCURRENCY,
      this.http.connections ?? DEFAULT_MAX_CONCURRENCY,
    );
    const cache = normalizeCacheOptions(options.cache);
    const { token, apiKey } = options;
    // The credential only ever reaches the cache as an HMAC (cache/key.ts).
    const credential = token ? () => token() : () => apiKey ?? process.env.DQS_API_KEY;
    this.#cache =
      cache && new ResultCache(cache, credential, (event: CacheEvent) => this.emit('cache', event));
  }

  /**
   * Page requests this client's `concurrency: 'auto'` streams may have in flight now (all of them
   * together: they share one adaptive limit). Its changes are `'concurrency'` events of the client.
   */
  get concurrency(): number {
    return this.scheduler.limit;
  }

  /** @internal The scheduler every `'auto'` stream of this client shares. */
  get scheduler(): RequestScheduler {
    if (!this.#scheduler) {
      const http = this.http;
      this.#scheduler = new RequestScheduler(
        new AdaptiveConcurrency({ max: this.#maxConcurrency, metered: () => http.rateLimited }),
      );
      this.#scheduler.onChange((change: ConcurrencyChange) => this.emit('concurrency', change));
    }
    return this.#scheduler;
  }

  /**
   * Creates the query, waits until it is complete and reads its first page (which carries the column
   * descriptors; the first stream then starts after it). A small query that is complete at once costs
   * two requests in all.
   * @example
   * const result = await client.query('job_listings', { tickers: ['nasdaq:aapl'] });
   * for await (const batch of result.stream()) console.log(batch.numRows);
   */
  async query(
    datasetId: string,
    body: QueryBody | RawQueryBody = {},
    options: QueryOptions = {},
  ): Promise<QueryResult> {
    const limits = normalizeQueryOptions(options, 'client.query');
    return new QueryResult(await this.#traced(datasetId, checkQueryBody(body), options, limits, false));
  }

  /**
   * The query's lifecycle under its telemetry (a span when OpenTelemetry is there: telemetry/), kept beside
   * the source for its reads; `endsWithStream`: `client.stream()`'s query, whose span ends with the stream.
   */
  #traced(
    datasetId: string,
    body: WireBody,
    options: QueryOptions,
    limits: QueryLimits,
    endsWithStream: boolean,
  ): Promise<ResultSource> {
    return traced(this.telemetry?.query(datasetId, endsWithStream), (telemetry) =>
      this.#query(datasetId, body, options, limits, telemetry),
    );
  }

  /** The query's lifecycle, through the cache when there is one, with its limits already checked. */
  async #query(
    datasetId: string,
    body: WireBody,
    options: QueryOptions,
    limits: QueryLimits,
    telemetry: QueryTelemetry | undefined,
  ): Promise<ResultSource> {
    const tickers = tickerCheck(
      this,
      datasetId,
      body?.tickers,
      normalizeCheckTickers(options.checkTickers),
      options.onUnknownTickers,
      { signal: options.signal },
    );
    const cache = options.cache === false ? undefined : this.#cache;
    const split = optionalBoolean(options.split, 'split', false);
    const fetch = async (handle?: QueryHandle, signal?: AbortSignal): Promise<ResultSource> => {
      const opts = signal ? { ...options, signal } : options;
      const whole = await this.#fetch(datasetId, body, opts, limits, handle, telemetry);
      if (!split) return whole;
      return splitIfTruncated(whole, {
        client: this,
        datasetId,
        body,
        wait: opts,
        open: (part, partHandle, s) =>
          this.#fetch(datasetId, part, { ...opts, signal: s }, limits, partHandle, telemetry),
      });
    };
    let result: ResultSource;
    if (cache === undefined) {
      tickers?.report(await tickers.run());
      result = await fetch();
    } else {
      result = await cache.query({
        client: this,
        datasetId,
        body,
        split,
        signal: options.signal,
        tickers,
        refresh: options.cache === 'refresh' || cache.options.refresh,
        scheduler: this.scheduler,
        fetch,
      });
    }
    // From the result, hit or miss alike: a cached split result warns as the first run did.
    if (split) reportSplit(datasetId, body, result, options.onSplitWarning);
    return result;
  }

  /** The uncached lifecycle; from an existing POST's `handle` when given (the cache made it). */
  async #fetch(
    datasetId: string,
    body: WireBody,
    options: QueryOptions,
    limits: QueryLimits,
    existing?: QueryHandle,
    telemetry?: QueryTelemetry,
  ): Promise<ResultSource> {
    const { handle, status } = existing
      ? {
          handle: existing,
          status:
            existing.state === 'complete'
              ? undefined
              : await inPhase(telemetry, 'wait', () => waitForQuery(this, datasetId, existing.id, options)),
        }
      : await createAndWait(this, datasetId, body, options, telemetry);
    const known: Known = status
      ? { total: status.total, truncated: status.truncated, formats: [...status.formats] }
      : { total: handle.total, truncated: undefined, formats: [...handle.formats] };
    if (known.formats.length === 0) known.formats = [...handle.formats];
    return this.#result(
      datasetId,
      handle.id,
      known,
      options.signal,
      limits,
      descriptorKey(datasetId, body),
      telemetry,
    );
  }

  /**
   * A query that already exists, by id (e.g. from a `checkpoint` saved by a process that died): waits
   * until it is complete and describes it, without creating anything.
   * @example
   * const result = await client.result(checkpoint.datasetId, checkpoint.queryId);
   * result.stream({ startRow: checkpoint.nextRow });
   */
  async result(datasetId: string, queryId: string, options: QueryOptions = {}): Promise<QueryResult> {
    // A query known by its id is most often resumed (`startRow` from a checkpoint): a large one's first
    // page gives one row, for its descriptors, rather than rows its stream would not read.
    const limits = { ...normalizeQueryOptions(options, 'client.result'), largeFirstRows: 1 };
    const status = await waitForQuery(this, datasetId, queryId, options);
    const known = { total: status.total, truncated: status.truncated, formats: [...status.formats] };
    return new QueryResult(await this.#result(datasetId, queryId, known, options.signal, limits));
  }

  /** Describes a complete query; `key` is its `descriptorKey` (unset for a query known only by its id). */
  async #result(
    datasetId: string,
    queryId: string,
    known: Known,
    signal: AbortSignal | undefined,
    limits: QueryLimits,
    key?: string,
    telemetry?: QueryTelemetry,
  ): Promise<ResultSource> {
    // Before any page: a total the server made up is refused, not read.
    checkRowLimit(known.total, limits.maxRows);
    let fields: readonly FieldDescriptor[];
    let firstPage: KeptPage | undefined;
    let lastDateUpdated: string | undefined;
    // An empty result has nothing to read but its column descriptors, and a result of the same dataset
    // and body read before has shown them: the GET is spared (a fan-out of one query per ticker has many
    // empty results, 24 of 120 over every ticker of three emulator datasets: a round trip and the
    // service's per-page time each).
    const empty = key !== undefined && known.total === 0 && known.formats.length > 0;
    const reused = empty ? this.#descriptors.get(key) : undefined;
    if (reused) {
      fields = reused.fields;
      lastDateUpdated = reused.lastDateUpdated;
    } else if (known.formats.length === 0 || known.formats.includes(MediaType.table)) {
      const first = await inPhase(telemetry, 'first_page', () =>
        this.#firstPage(datasetId, queryId, known, signal, limits),
      );
      fields = first.fields;
      firstPage = first.page;
      lastDateUpdated = first.lastDateUpdated;
      if (key !== undefined) this.#remember(key, { fields, lastDateUpdated });
    } else {
      fields = (await this.getDataset(datasetId, { signal })).fields;
    }
    if (known.truncated === undefined) {
      // Only a result at the row cap can have been cut, and only a HEAD says so when the GET did not.
      known.truncated =
        known.total >= ROW_CAP ? (await this.checkQuery(datasetId, queryId, { signal })).truncated : false;
    }
    return {
      pages: this.pages,
      datasetId,
      id: queryId,
      total: known.total,
      truncated: known.truncated,
      formats: known.formats,
      fields,
      scheduler: this.scheduler,
      // The first stream that starts at row 1 in table JSON takes it instead of asking again (once).
      takeFirstPage: () => {
        const page = firstPage;
        firstPage = undefined;
        return page;
      },
      lastDateUpdated,
    };
  }

  /** Keeps a result's descriptors for empty results of the same query shape (a bounded number of shapes). */
  #remember(key: string, described: Described): void {
    this.#descriptors.delete(key);
    this.#descriptors.set(key, described);
    // The oldest shape goes first: a long-lived client querying ever new shapes holds 64 at most.
    if (this.#descriptors.size > MAX_DESCRIPTOR_SHAPES) {
      this.#descriptors.delete(this.#descriptors.keys().next().value as string);
    }
  }

  /**
   * The first data page: its descriptors describe the result, its headers complete what the create told
   * (truncation, formats), and its body is kept for the first stream when it holds rows.
   */
  async #firstPage(
    datasetId: string,
    queryId: string,
    known: Known,
    signal: AbortSignal | undefined,
    { firstPageRows, largeFirstRows = FIRST_PAGE_ROWS }: QueryLimits,
  ): Promise<{
    fields: readonly FieldDescriptor[];
    page: KeptPage | undefined;
    lastDateUpdated: string;
  }> {
    // A small result is read whole (it is the stream's only page). A large one's first page is a data
    // page too, of FIRST_PAGE_ROWS rows: its rows serve the stream (no request only for descriptors), and
    // it is small enough that the pages after it are not held back by it (every other page waits for
    // the descriptors it carries). A page over `maxResponseBytes` falls back to one row.
    let limit =
      known.total <= firstPageRows ? Math.max(1, known.total) : Math.min(firstPageRows, largeFirstRows);
    let read: PageBytes;
    try {
      read = await this.readPageBytes(datasetId, queryId, { start: 1, limit, signal });
    } catch (err) {
      if (!(err instanceof ResponseTooLargeError) || limit === 1) throw err;
      limit = 1;
      read = await this.readPageBytes(datasetId, queryId, { start: 1, limit, signal });
    }
    // One row of a bigger result was read only for its descriptors (`firstPageRows: 1`, or a page over
    // `maxResponseBytes`): the streams read their pages whole, from the first row.
    const probe = limit === 1 && known.total > 1;
    const range: PageRange = { start: 1, limit };
    // The envelope from the bytes, the rows not read (the stream decodes them once, from these same
    // bytes, and checks them against `count`); anything unusual takes the reference parse, which gives
    // the same envelope or the right error.
    const page =
      readTableEnvelope(read.bytes) ?? envelopeOf(parseTablePage(bodyText(read.bytes, read.info), range));
    if (page.total !== known.total) {
      throw new ProtocolError(
        `the result's total changed from ${known.total} to ${page.total} between the query and its first page`,
        read.info,
      );
    }
    const truncated = truncatedHeader(read.headers);
    if (truncated !== undefined) known.truncated = truncated;
    const formats = formatsHeader(read.headers);
    if (known.formats.length === 0 && formats.length > 0) known.formats = formats;
    const lastDateUpdated = page.lastDateUpdated;
    if (probe || page.rowCount === 0) return { fields: page.fields, page: undefined, lastDateUpdated };
    const kept: KeptPage = {
      range: { start: 1, limit: Math.min(limit, page.rowCount) },
      bytes: read.bytes,
      wireBytes: read.wireBytes,
      codings: read.codings,
      info: read.info,
      waitMs: read.waitMs,
      bodyMs: read.bodyMs,
    };
    return { fields: page.fields, page: kept, lastDateUpdated };
  }

  /**
   * A `ResultStream` at once; creating the query and waiting for it happen inside the stream, and
   * failures arrive as the stream's `'error'`.
   * @example
   * await pipeline(client.stream('job_listings', { tickers: ['nasdaq:aapl'] }), toArrowIpc(), createWriteStream('aapl.arrow'));
   */
  stream(
    datasetId: string,
    body: QueryBody | RawQueryBody = {},
    options: StreamOptions & Omit<QueryOptions, 'signal'> = {},
  ): ResultStream {
    const normalized = normalizeStreamOptions(options, STREAM_QUERY_KEYS, '`client.stream()`');
    const wire = checkQueryBody(body);
    // The stream's options are checked once, here; the query's limits follow from them.
    // The first page serves the stream when it reads table JSON from row 1; a page size of the caller's
    // own makes it a whole page (their pages, progress and batches follow their size), 'auto' one of
    // FIRST_PAGE_ROWS for a large result. Otherwise (CSV, XLSX, a `startRow`) it is one row, for the
    // descriptors alone.
    const served =
      normalized.startRow === 1 && (normalized.format === 'auto' || normalized.format === 'json');
    const limits: QueryLimits = {
      maxRows: normalized.maxRows,
      firstPageRows: served ? normalized.pageSize : 1,
      largeFirstRows: normalized.pageSizeAuto ? FIRST_PAGE_ROWS : normalized.pageSize,
    };
    return new ResultStream(
      (signal): Promise<ResultSource> => this.#traced(datasetId, wire, { ...options, signal }, limits, true),
      normalized,
    );
  }
}

/**
 * Rows of a large result's first page (one over `firstPageRows`). Its time comes before every other
 * page's, so it is small: on the WAN bench (40 ms RTT, 30 ms + 0.02 ms a row, 25 MB/s a connection) 1,000
 * rows of job_listings (0.4 MB) cost ~40 ms more than the one-row page it replaces, against ~370 ms for a
 * 10,000-row page; and 1,000 rows show the bytes per row well enough to size the pages after it.
 */
export const FIRST_PAGE_ROWS = 1000;

/** What a first page told of a result's shape, kept for empty results of the same shape. */
interface Described {
  readonly fields: readonly FieldDescriptor[];
  readonly lastDateUpdated: string | undefined;
}

/** Query shapes whose column descriptors a client keeps for empty results. */
const MAX_DESCRIPTOR_SHAPES = 64;

/**
 * What a result's columns depend on: the dataset and the body, tickers aside (the spec's body filters
 * rows by ticker; the columns are the dataset's). Members other than `tickers` are kept in the key, so
 * a body that might choose columns never borrows another's descriptors.
 */
function descriptorKey(datasetId: string, body: WireBody): string {
  const { tickers: _tickers, ...rest } = (body ?? {}) as Record<string, unknown>;
  return `${datasetId}\n${JSON.stringify(rest)}`;
}

interface Known {
  total: number;
  truncated: boolean | undefined;
  formats: string[];
}

/** A query's checked limits: the most rows its total may say, and the rows of its first page. */
interface QueryLimits {
  readonly maxRows: number;
  readonly firstPageRows: number;
  /** Rows of the first page of a result over `firstPageRows` (unset: FIRST_PAGE_ROWS). */
  readonly largeFirstRows?: number;
}

function normalizeQueryOptions(options: QueryOptions, method: string): QueryLimits {
  checkKeys(checkObject(options, 'options'), QUERY_KEYS, `options of \`${method}()\``);
  return {
    maxRows: optionalInteger(options.maxRows, 'maxRows', 0, ROW_CAP),
    firstPageRows: optionalInteger(options.firstPageRows, 'firstPageRows', 1, DEFAULT_PAGE_SIZE),
  };
}
