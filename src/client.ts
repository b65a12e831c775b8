/**
 * `DatasetClient`: every endpoint of the service (from `EndpointClient`) plus the query lifecycle:
 * `query()` creates, waits and describes a result; `stream()` does all of that inside a stream.
 */
import type { CacheEvent } from './cache/events.js';
import { type CacheOptions, normalizeCacheOptions } from './cache/options.js';
import { ResultCache } from './cache/result-cache.js';
import { MediaType, type QueryBody, type QueryHandle, type QueryStatus } from './core/wire.js';
import { QueryResult, type QueryResult as QueryResultType } from './query/query-result.js';
import { type ResultSource, ResultStream } from './query/result-stream.js';
import { normalizeStreamOptions, type StreamOptions } from './query/stream-options.js';
import { createAndWait, type WaitOptions, waitForQuery } from './query/wait.js';
import { type CallOptions, EndpointClient } from './transport/endpoints.js';
import type { ClientOptions } from './transport/options.js';

export interface QueryOptions extends WaitOptions {
  /**
   * With a caching client: `false` bypasses the cache for this query, `'refresh'` reads the service and
   * replaces the entry. @default true
   */
  readonly cache?: boolean | 'refresh' | undefined;
}

export interface DatasetClientOptions extends ClientOptions {
  /**
   * A local result cache (docs/cache.md): `true` for the defaults, or `{ dir, maxAge, maxBytes, refresh }`.
   * A repeated query is then validated with two small requests and served from disk.
   * @default false
   */
  readonly cache?: boolean | CacheOptions | undefined;
}

/**
 * Events: `'retry'` (see `EndpointClient`) and, with a cache, `'cache'` (a `CacheEvent`: hit, miss, stale,
 * stored, ...).
 */
export class DatasetClient extends EndpointClient {
  readonly #cache: ResultCache | undefined;

  constructor(options: DatasetClientOptions = {}) {
    super(options);
    const cache = normalizeCacheOptions(options.cache);
    const { token, apiKey } = options;
    // The credential only ever reaches the cache as an HMAC (cache/key.ts).
    const credential = token ? () => token() : () => apiKey ?? process.env.DQS_API_KEY;
    this.#cache =
      cache && new ResultCache(cache, credential, (event: CacheEvent) => this.emit('cache', event));
  }

  /**
   * Creates the query, waits until it is complete (HEAD with backoff) and reads its column descriptors.
   * @example
   * const result = await client.query('job_listings', { tickers: ['nasdaq:aapl'] });
   * for await (const batch of result.stream()) console.log(batch.numRows);
   */
  async query(datasetId: string, body: QueryBody = {}, options: QueryOptions = {}): Promise<QueryResultType> {
    const cache = options.cache === false ? undefined : this.#cache;
    if (cache === undefined) return this.#fetch(datasetId, body, options);
    return cache.query({
      client: this,
      datasetId,
      body,
      signal: options.signal,
      refresh: options.cache === 'refresh' || cache.options.refresh,
      fetch: (handle, signal) =>
        this.#fetch(datasetId, body, signal ? { ...options, signal } : options, handle),
    });
  }

  /** The uncached lifecycle; from an existing POST's `handle` when given. */
  async #fetch(
    datasetId: string,
    body: QueryBody,
    options: QueryOptions,
    handle?: QueryHandle,
  ): Promise<QueryResultType> {
    const done = handle
      ? { handle, status: await waitForQuery(this, datasetId, handle.id, options) }
      : await createAndWait(this, datasetId, body, options);
    return this.#result(datasetId, done.handle.id, done.status, done.handle.formats, options);
  }

  /**
   * A query that already exists, by id (e.g. from a `checkpoint` saved by a process that died): waits
   * until it is complete and describes it, without creating anything.
   * @example
   * const result = await client.result(checkpoint.datasetId, checkpoint.queryId);
   * result.stream({ startRow: checkpoint.nextRow });
   */
  async result(datasetId: string, queryId: string, options: QueryOptions = {}): Promise<QueryResultType> {
    const status = await waitForQuery(this, datasetId, queryId, options);
    return this.#result(datasetId, queryId, status, [], options);
  }

  async #result(
    datasetId: string,
    queryId: string,
    status: QueryStatus,
    handleFormats: readonly string[],
    options: CallOptions,
  ): Promise<QueryResultType> {
    const formats = status.formats.length ? status.formats : [...handleFormats];
    const { fields, lastDateUpdated } = await this.#fields(datasetId, queryId, formats, options);
    return new QueryResult({
      client: this,
      datasetId,
      id: queryId,
      total: status.total,
      truncated: status.truncated,
      formats,
      fields,
      maxResponseBytes: this.http.maxResponseBytes,
      lastDateUpdated,
    });
  }

  /**
   * A `ResultStream` at once; creating the query and waiting for it happen inside the stream, and
   * failures arrive as the stream's `'error'`.
   * @example
   * await pipeline(client.stream('job_listings', { tickers: ['nasdaq:aapl'] }), toArrowIpc(), createWriteStream('aapl.arrow'));
   */
  stream(
    datasetId: string,
    body: QueryBody = {},
    options: StreamOptions & Omit<QueryOptions, 'signal'> = {},
  ): ResultStream {
    const normalized = normalizeStreamOptions(options);
    return new ResultStream(
      (signal): Promise<ResultSource> => this.query(datasetId, body, { ...options, signal }),
      normalized,
    );
  }

  /**
   * The descriptors come with every table-JSON page, so one 1-row page is the cheapest way to learn them;
   * a query that offers no table JSON falls back to the dataset's metadata.
   */
  async #fields(datasetId: string, queryId: string, formats: readonly string[], options: CallOptions) {
    if (formats.length === 0 || formats.includes(MediaType.table)) {
      const page = await this.readPage(datasetId, queryId, { start: 1, limit: 1, signal: options.signal });
      return { fields: page.fields, lastDateUpdated: page.last_date_updated };
    }
    return {
      fields: (await this.getDataset(datasetId, { signal: options.signal })).fields,
      lastDateUpdated: undefined,
    };
  }
}
