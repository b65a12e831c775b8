/**
 * `EndpointClient`: one typed method per endpoint of the spec, nothing more. The query lifecycle and
 * streaming (`DatasetClient.query()` / `.stream()`) are built on top of it in src/client.ts.
 */
import { EventEmitter } from 'node:events';
import { inspect } from 'node:util';
import { ProtocolError } from '../core/errors.js';
import type { LoopBudget } from '../core/loop-budget.js';
import type { RawQueryBody } from '../core/raw-body.js';
import { checkKeys, optionKeys } from '../core/validate.js';
import {
  type DatasetInfo,
  type DatasetMetadata,
  MediaType,
  type QueryBody,
  type QueryHandle,
  type QueryStatus,
  type ResultPage,
  type TickerEntry,
  type WireBody,
} from '../core/wire.js';
import { parseTablePage } from '../decode/table-json.js';
import type { ClientTelemetry } from '../telemetry/client-telemetry.js';
import { discardBody } from './body.js';
import type { HttpResponse } from './exchange.js';
import { firstHeader, formatsHeader, joinedHeader, truncatedHeader } from './headers.js';
import { HttpTransport } from './http.js';
import { type ClientOptions, normalizeClientOptions } from './options.js';
import * as shape from './responses.js';
import type { RetryEvent } from './retry.js';
import { parseRetryAfter } from './retry-after.js';
import {
  checkDatasetId,
  checkInteger,
  checkQueryBody,
  checkQueryId,
  checkString,
  checkTicker,
} from './validate.js';

/** Options every method takes. */
export interface CallOptions {
  /** Cancels the request; the promise rejects with an `AbortError` (code `DQS_ABORTED`). */
  readonly signal?: AbortSignal | undefined;
  /** Overrides the client's per-request timeout, in ms. */
  readonly timeoutMs?: number | undefined;
}

export interface PageRequest extends CallOptions {
  /** 1-based position of the first row. */
  readonly start: number;
  /** Number of rows asked for; the service may answer fewer (it clamps large limits). */
  readonly limit: number;
}

export interface RawPageRequest extends PageRequest {
  /** A media type from the query's `formats` (see `MediaType`). @default MediaType.table */
  readonly mediaType?: string;
}

const CALL_OPTIONS = { signal: true, timeoutMs: true } as const satisfies {
  readonly [K in keyof Required<CallOptions>]: true;
};
export const CALL_KEYS = optionKeys<CallOptions>(CALL_OPTIONS);
const LIST_KEYS = optionKeys<CallOptions & { ticker?: string }>({ ...CALL_OPTIONS, ticker: true });
const CHECK_KEYS = optionKeys<CallOptions & { mediaType?: string }>({ ...CALL_OPTIONS, mediaType: true });
const PAGE_KEYS = optionKeys<PageRequest>({ ...CALL_OPTIONS, start: true, limit: true });
const OPEN_KEYS = optionKeys<RawPageRequest & { retry?: boolean }>({
  ...CALL_OPTIONS,
  start: true,
  limit: true,
  mediaType: true,
  retry: true,
});

/** Refuses options a method does not have (a misspelt `signal` would leave the request uncancellable). */
function methodOptions<T extends object>(options: T, known: ReadonlySet<string>, method: string): T {
  checkKeys(options, known, `options of \`${method}()\``);
  return options;
}

/** Parses the query headers (HEAD, and every result GET) into a status. */
export function statusFromHeaders(res: Pick<HttpResponse, 'status' | 'headers' | 'info'>): QueryStatus {
  const rawState = joinedHeader(res.headers, 'x-state');
  // Some deployments answer 202 with no X-State while a query runs.
  const state = rawState?.trim() || (res.status === 202 ? 'running' : undefined);
  if (state === undefined) throw new ProtocolError('Missing X-State header', res.info);
  const rawTotal = joinedHeader(res.headers, 'x-total');
  const total =
    rawTotal === undefined || rawTotal.trim() === ''
      ? state === 'complete'
        ? Number.NaN
        : 0
      : Number(rawTotal);
  if (!Number.isInteger(total) || total < 0) {
    throw new ProtocolError(`X-Total is not a row count: ${JSON.stringify(rawTotal ?? null)}`, res.info);
  }
  const truncated = truncatedHeader(res.headers) ?? false;
  const formats = formatsHeader(res.headers);
  const retryAfterMs = parseRetryAfter(firstHeader(res.headers, 'retry-after'));
  return {
    state,
    total,
    truncated,
    formats,
    httpStatus: res.status,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  };
}

/** The result GET of a page (`?start&limit`, table JSON unless the caller says otherwise), checked. */
function pageGet(datasetId: string, queryId: string, options: PageRequest) {
  const start = checkInteger(options.start, 'start', 1);
  const limit = checkInteger(options.limit, 'limit', 1);
  return {
    method: 'GET' as const,
    segments: ['datasets', checkDatasetId(datasetId), 'query', checkQueryId(queryId)],
    query: { start, limit },
    accept: MediaType.table as string,
    signal: options.signal,
    timeoutMs: options.timeoutMs,
  };
}

/**
 * What the page engine (src/query) needs of the transport: the page GET, and what the transport has
 * learned of the link. The engine reaches the network only through this.
 */
export interface PageTransport {
  openPage(
    datasetId: string,
    queryId: string,
    options: RawPageRequest & { readonly retry?: boolean },
  ): Promise<HttpResponse>;
  readonly maxResponseBytes: number;
  /** What the client's page streams take of each turn of the event loop (body bytes, decodes). */
  readonly loopBudget: LoopBudget;
  /** True when requests are metered (a `rateLimit` set or learned). */
  readonly rateLimited: boolean;
  /** The quickest answer seen so far, in ms (round trip plus the service's quickest work). */
  readonly fastestAnswerMs: number | undefined;
  readonly retryPolicy: HttpTransport['retryPolicy'];
  /** Reports a retry the engine did itself through the client's `'retry'` event. */
  reportRetry(event: RetryEvent): void;
}

/** A table-JSON page read whole: its decoded body bytes and what its response said. */
export interface PageBytes {
  readonly bytes: Buffer;
  readonly headers: HttpResponse['headers'];
  readonly info: HttpResponse['info'];
  /** Content codings undone (`[]`: the body came plain). */
  readonly codings: readonly string[];
  /** Bytes the body took on the wire. */
  readonly wireBytes: number;
  /** From sending the request to its response headers, in ms (the service's time to answer it). */
  readonly waitMs: number;
  /** From its response headers to its body's last byte, in ms. */
  readonly bodyMs: number;
}

/**
 * Events: `'retry'` (a `RetryEvent`) before each retried attempt, for logging. No event ever carries the key.
 */
export class EndpointClient extends EventEmitter {
  /** @internal */
  readonly http: HttpTransport;
  #pages: PageTransport | undefined;
  /** @internal Spans and metrics (telemetry/): undefined with `telemetry: false`. */
  readonly telemetry: ClientTelemetry | undefined;

  constructor(options: ClientOptions = {}) {
    super();
    const normalized = normalizeClientOptions(options);
    const telemetry = normalized.telemetry;
    this.telemetry = telemetry;
    this.http = new HttpTransport(normalized, (event) => {
      this.emit('retry', event);
      telemetry?.retry(event);
    });
  }

  /**
   * What this client's page streams take of each turn of the event loop; hand it to another client
   * (`loopBudget` option) to have both share it.
   */
  get loopBudget(): LoopBudget {
    return this.http.loopBudget;
  }

  /** The normalized base URL (always ending in '/'). */
  get baseUrl(): string {
    return this.http.baseUrl.href;
  }

  /** `GET /datasets/[?ticker=]`: the datasets, or only those available for `ticker`. */
  async listDatasets(options: CallOptions & { readonly ticker?: string } = {}): Promise<DatasetInfo[]> {
    methodOptions(options, LIST_KEYS, 'listDatasets');
    const ticker = options.ticker === undefined ? undefined : checkTicker(options.ticker);
    const { response, text } = await this.http.text({
      method: 'GET',
      segments: ['datasets', ''],
      query: { ticker },
      accept: 'application/json',
      signal: options.signal,
      timeoutMs: options.timeoutMs,
    });
    return shape.datasetList(shape.parseJson(text, response.info), response.info);
  }

  /** `GET /datasets/<id>`: the dataset with its field descriptors and row cap. */
  async getDataset(datasetId: string, options: CallOptions = {}): Promise<DatasetMetadata> {
    methodOptions(options, CALL_KEYS, 'getDataset');
    const { response, text } = await this.http.text({
      method: 'GET',
      segments: ['datasets', checkDatasetId(datasetId)],
      accept: 'application/json',
      signal: options.signal,
      timeoutMs: options.timeoutMs,
    });
    return shape.datasetMetadata(shape.parseJson(text, response.info), response.info);
  }

  /** `GET /datasets/<id>/tickers/?query=`: tickers whose name or id matches `text`. */
  async searchTickers(datasetId: string, text: string, options: CallOptions = {}): Promise<TickerEntry[]> {
    methodOptions(options, CALL_KEYS, 'searchTickers');
    const q = checkString(text, 'text');
    const { response, text: body } = await this.http.text({
      method: 'GET',
      segments: ['datasets', checkDatasetId(datasetId), 'tickers', ''],
      query: { query: q },
      accept: 'application/json',
      signal: options.signal,
      timeoutMs: options.timeoutMs,
    });
    return shape.tickerEntries(shape.parseJson(body, response.info), q, response.info);
  }

  /**
   * `POST /datasets/<id>/query/`: submits a query. The body holds the spec's `tickers` (checked); other
   * members only through `rawBody()`, which sends them as given.
   */
  async createQuery(
    datasetId: string,
    body: QueryBody | RawQueryBody = {},
    options: CallOptions = {},
  ): Promise<QueryHandle> {
    return this.postQuery(datasetId, checkQueryBody(body), methodOptions(options, CALL_KEYS, 'createQuery'));
  }

  /** @internal `createQuery` of a body already checked (the library's own, split parts included). */
  async postQuery(datasetId: string, json: WireBody, options: CallOptions): Promise<QueryHandle> {
    const { response, text } = await this.http.text({
      method: 'POST',
      segments: ['datasets', checkDatasetId(datasetId), 'query', ''],
      accept: 'application/json',
      json,
      signal: options.signal,
      timeoutMs: options.timeoutMs,
    });
    return shape.queryHandle(shape.parseJson(text, response.info), response.info);
  }

  /** `HEAD /datasets/<id>/query/<qid>`: state, total, truncation and offered formats. */
  async checkQuery(
    datasetId: string,
    queryId: string,
    options: CallOptions & { readonly mediaType?: string } = {},
  ): Promise<QueryStatus> {
    methodOptions(options, CHECK_KEYS, 'checkQuery');
    const response = await this.http.send({
      method: 'HEAD',
      segments: ['datasets', checkDatasetId(datasetId), 'query', checkQueryId(queryId)],
      accept: options.mediaType ?? MediaType.table,
      signal: options.signal,
      timeoutMs: options.timeoutMs,
    });
    try {
      return statusFromHeaders(response);
    } finally {
      discardBody(response);
      response.done();
    }
  }

  /** `GET /datasets/<id>/query/<qid>?start&limit` in table JSON: one page, shape-checked. */
  async readPage(datasetId: string, queryId: string, options: PageRequest): Promise<ResultPage> {
    const request = pageGet(datasetId, queryId, methodOptions(options, PAGE_KEYS, 'readPage'));
    const { text } = await this.http.text(request);
    return parseTablePage(text, request.query);
  }

  /**
   * The same GET in any offered media type, body unread: for the streaming decoders and `download()`.
   * The caller must consume or destroy `body` and then call `done()`.
   */
  async openPage(
    datasetId: string,
    queryId: string,
    options: RawPageRequest & { readonly retry?: boolean },
  ): Promise<HttpResponse> {
    return this.#openPage(datasetId, queryId, methodOptions(options, OPEN_KEYS, 'openPage'));
  }

  #openPage(
    datasetId: string,
    queryId: string,
    options: RawPageRequest & { readonly retry?: boolean },
  ): Promise<HttpResponse> {
    return this.http.send({
      ...pageGet(datasetId, queryId, options),
      accept: options.mediaType ?? MediaType.table,
      bulk: true,
      ...(options.retry === false ? { retry: false } : {}),
    });
  }

  /**
   * `GET /datasets/<id>/query/<qid>?start&limit` in table JSON, its body read whole (bounded by
   * `maxResponseBytes`) and kept as bytes: the query's first page, decoded by the page engine.
   */
  async readPageBytes(datasetId: string, queryId: string, options: PageRequest): Promise<PageBytes> {
    const { response, bytes, waitMs, bodyMs } = await this.http.bytes(pageGet(datasetId, queryId, options));
    return {
      bytes,
      waitMs,
      bodyMs,
      headers: response.headers,
      info: response.info,
      codings: response.codings,
      wireBytes: response.wireBytes(bytes.length),
    };
  }

  /** @internal The page engine's view of this client's transport. */
  get pages(): PageTransport {
    if (this.#pages === undefined) {
      const http = this.http;
      this.#pages = {
        // Unchecked: the page engine's own requests, one per page.
        openPage: (datasetId, queryId, options) => this.#openPage(datasetId, queryId, options),
        maxResponseBytes: http.maxResponseBytes,
        loopBudget: http.loopBudget,
        get rateLimited() {
          return http.rateLimited;
        },
        get fastestAnswerMs() {
          return http.fastestAnswerMs;
        },
        retryPolicy: http.retryPolicy,
        reportRetry: (event) => http.reportRetry(event),
      };
    }
    return this.#pages;
  }

  /** Releases the keep-alive connections. */
  async close(): Promise<void> {
    await this.http.close();
  }

  // The key lives in private fields; this keeps `console.log(client)` short and obviously key-free.
  [inspect.custom](): string {
    return `${this.constructor.name} { baseUrl: '${this.baseUrl}' }`;
  }
}
