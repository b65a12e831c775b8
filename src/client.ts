/**
 * `DatasetClient`: every endpoint of the service (from `EndpointClient`) plus the query lifecycle:
 * `query()` creates, waits and describes a result; `stream()` does all of that inside a stream.
 */
import { MediaType, type QueryBody, type QueryStatus } from './core/wire.js';
import { QueryResult, type QueryResult as QueryResultType } from './query/query-result.js';
import { type ResultSource, ResultStream } from './query/result-stream.js';
import { normalizeStreamOptions, type StreamOptions } from './query/stream-options.js';
import { createAndWait, type WaitOptions, waitForQuery } from './query/wait.js';
import { type CallOptions, EndpointClient } from './transport/endpoints.js';

export type QueryOptions = WaitOptions;

export class DatasetClient extends EndpointClient {
  /**
   * Creates the query, waits until it is complete (HEAD with backoff) and reads its column descriptors.
   * @example
   * const result = await client.query('job_listings', { tickers: ['nasdaq:aapl'] });
   * for await (const batch of result.stream()) console.log(batch.numRows);
   */
  async query(datasetId: string, body: QueryBody = {}, options: QueryOptions = {}): Promise<QueryResultType> {
    const { handle, status } = await createAndWait(this, datasetId, body, options);
    return this.#result(datasetId, handle.id, status, handle.formats, options);
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
    const fields = await this.#fields(datasetId, queryId, formats, options);
    return new QueryResult({
      client: this,
      datasetId,
      id: queryId,
      total: status.total,
      truncated: status.truncated,
      formats,
      fields,
      maxResponseBytes: this.http.maxResponseBytes,
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
      return page.fields;
    }
    return (await this.getDataset(datasetId, { signal: options.signal })).fields;
  }
}
