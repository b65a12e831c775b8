/**
 * Every error the library throws is a `DqsError` with a stable `code`. Match on `code`, not on the class
 * name or the message: codes are part of the public contract, messages may improve.
 *
 * HTTP errors carry the method, the URL (never with a key in it: the key travels only in a header)
 * and the server's `{message}` when it sent one. Decode and value errors say where: page, row, column.
 */

import { redactError, redactSecrets } from './redact.js';

export type DqsErrorCode =
  | 'DQS_INVALID_ARGUMENT'
  | 'DQS_AUTH'
  | 'DQS_FORBIDDEN'
  | 'DQS_NOT_FOUND'
  | 'DQS_NOT_ACCEPTABLE'
  | 'DQS_BAD_REQUEST'
  | 'DQS_RATE_LIMITED'
  | 'DQS_SERVER'
  | 'DQS_HTTP'
  | 'DQS_TIMEOUT'
  | 'DQS_ABORTED'
  | 'DQS_NETWORK'
  | 'DQS_DNS'
  | 'DQS_CONNECT'
  | 'DQS_TLS_UNTRUSTED'
  | 'DQS_TLS_HOSTNAME'
  | 'DQS_PROXY'
  | 'DQS_PROXY_AUTH'
  | 'DQS_NOT_SERVICE'
  | 'DQS_PROTOCOL'
  | 'DQS_RESPONSE_TOO_LARGE'
  | 'DQS_DECODE'
  | 'DQS_INVALID_VALUE'
  | 'DQS_TRUNCATED'
  | 'DQS_SPLIT_SCHEMA'
  | 'DQS_ROW_LIMIT'
  | 'DQS_FORMAT_NOT_OFFERED'
  | 'DQS_MISSING_PACKAGE'
  | 'DQS_QUERY_FAILED';

/** A page request of a result: its 1-based `start` and `limit`. */
export interface PageRef {
  readonly start: number;
  readonly limit: number;
}

/** Where a failed download stood: pass `nextRow` as `startRow` to go on without re-reading rows. */
export interface ResumePoint {
  readonly datasetId: string;
  readonly queryId: string;
  /** 1-based position of the first row the consumer has not read. */
  readonly nextRow: number;
}

export class DqsError extends Error {
  readonly code: DqsErrorCode;
  /** The page request this error belongs to, when it happened while reading a result. */
  page: PageRef | undefined;
  /** Set on the error a result stream fails with, once its query is known: where to resume. */
  checkpoint: ResumePoint | undefined;
  constructor(code: DqsErrorCode, message: string, options?: { cause?: unknown }) {
    // Masked before the stack is made from it: a server may echo the key in what we quote.
    super(redactSecrets(message), options);
    redactError(options?.cause);
    this.code = code;
    this.name = new.target.name;
    this.page = undefined;
    this.checkpoint = undefined;
  }
}

/** Names the page an error happened on (once), keeping its class and code so callers can still match. */
export function atPage<E extends DqsError>(err: E, page: PageRef): E {
  if (err.page === undefined) {
    err.page = { start: page.start, limit: page.limit };
    err.message += ` [page start=${page.start} limit=${page.limit}]`;
  }
  return err;
}

/** A caller passed something the library or the service cannot accept; nothing was sent. */
export class InvalidArgumentError extends DqsError {
  readonly argument: string;
  constructor(argument: string, message: string) {
    super('DQS_INVALID_ARGUMENT', `Invalid \`${argument}\`: ${message}`);
    this.argument = argument;
  }
}

/** Describes one request, without credentials, for error messages and events. */
export interface RequestInfo {
  readonly method: string;
  /** The full URL; the API key is never part of it (it travels in the Authorization header). */
  readonly url: string;
}

export interface HttpErrorDetails extends RequestInfo {
  readonly status: number;
  /** The `message` member of the server's JSON error body, when there was one. */
  readonly serverMessage?: string | undefined;
}

/** The service answered with a status the request cannot succeed with. */
export class HttpError extends DqsError {
  readonly status: number;
  readonly method: string;
  readonly url: string;
  readonly serverMessage: string | undefined;
  constructor(code: DqsErrorCode, details: HttpErrorDetails, hint?: string) {
    const server = details.serverMessage ? `: ${details.serverMessage}` : '';
    super(
      code,
      `${details.status} from the service for ${details.method} ${details.url}${server}${hint ? ` (${hint})` : ''}`,
    );
    this.status = details.status;
    this.method = details.method;
    this.url = details.url;
    this.serverMessage =
      details.serverMessage === undefined ? undefined : redactSecrets(details.serverMessage);
  }
}

/**
 * 401 (`DQS_AUTH`): the key (or token) is missing, wrong or expired. A 403 is a `ForbiddenError`, a
 * subclass: the key was accepted, the resource is not allowed to it.
 */
export class AuthenticationError extends HttpError {
  constructor(details: HttpErrorDetails, code: 'DQS_AUTH' | 'DQS_FORBIDDEN' = 'DQS_AUTH', hint?: string) {
    super(code, details, hint ?? 'the key was refused: check `apiKey`, `token` or DQS_API_KEY');
  }
}

/** 403 (`DQS_FORBIDDEN`): the service knows the key but does not let it read this resource. */
export class ForbiddenError extends AuthenticationError {
  constructor(details: HttpErrorDetails) {
    super(
      details,
      'DQS_FORBIDDEN',
      'the key is valid but not allowed this resource: ask for access, or use a key that has it',
    );
  }
}

/** 404: unknown dataset or query. */
export class NotFoundError extends HttpError {
  constructor(details: HttpErrorDetails) {
    super('DQS_NOT_FOUND', details);
  }
}

/** 406: the requested media type is not among those the query offers. */
export class NotAcceptableError extends HttpError {
  constructor(details: HttpErrorDetails) {
    super('DQS_NOT_ACCEPTABLE', details);
  }
}

/**
 * 400, 413 and 422: the service refused the request as sent. (Other statuses without a class of their
 * own are plain `HttpError`s with code `DQS_HTTP`.)
 */
export class BadRequestError extends HttpError {
  constructor(details: HttpErrorDetails) {
    super('DQS_BAD_REQUEST', details);
  }
}

/** 429: too many requests. `retryAfterMs` comes from `Retry-After` when the server sent it. */
export class RateLimitedError extends HttpError {
  readonly retryAfterMs: number | undefined;
  constructor(details: HttpErrorDetails & { retryAfterMs?: number | undefined }) {
    super('DQS_RATE_LIMITED', details);
    this.retryAfterMs = details.retryAfterMs;
  }
}

/** 5xx: the service failed. Usually transient. */
export class ServerError extends HttpError {
  readonly retryAfterMs: number | undefined;
  constructor(details: HttpErrorDetails & { retryAfterMs?: number | undefined }) {
    super('DQS_SERVER', details);
    this.retryAfterMs = details.retryAfterMs;
  }
}

/** A request (or the whole operation) took longer than its timeout. */
export class TimeoutError extends DqsError {
  readonly timeoutMs: number;
  /** True for a caller's overall limit (not retried), false for one request's timeout. */
  readonly overall: boolean;
  constructor(what: string, timeoutMs: number, options?: { cause?: unknown; overall?: boolean }) {
    super('DQS_TIMEOUT', `${what} timed out${timeoutMs > 0 ? ` after ${timeoutMs} ms` : ''}`, options);
    this.timeoutMs = timeoutMs;
    this.overall = options?.overall ?? false;
  }
}

/** The caller's AbortSignal fired, or the stream was destroyed. */
export class AbortError extends DqsError {
  constructor(what: string, options?: { cause?: unknown }) {
    super('DQS_ABORTED', `${what} was aborted`, options);
  }
}

/** The connection failed or broke (refused, reset, body cut short). */
export class NetworkError extends DqsError {
  readonly method: string;
  readonly url: string;
  constructor(
    info: RequestInfo,
    reason: string,
    options?: { cause?: unknown; code?: ConnectionErrorCode | 'DQS_NETWORK' },
  ) {
    super(options?.code ?? 'DQS_NETWORK', `${info.method} ${info.url} failed: ${reason}`, options);
    this.method = info.method;
    this.url = info.url;
  }
}

/** The connection faults a person can act on, each with its own code (docs/reliability.md has the table). */
export type ConnectionErrorCode =
  | 'DQS_DNS'
  | 'DQS_CONNECT'
  | 'DQS_TLS_UNTRUSTED'
  | 'DQS_TLS_HOSTNAME'
  | 'DQS_PROXY'
  | 'DQS_PROXY_AUTH';

/**
 * No connection to the service could be made, for a reason the message names with what to do: the host
 * name does not resolve (`DQS_DNS`), the connection was refused or timed out (`DQS_CONNECT`), the
 * certificate is not trusted (`DQS_TLS_UNTRUSTED`) or is for another name (`DQS_TLS_HOSTNAME`), the proxy
 * failed (`DQS_PROXY`) or wants credentials (`DQS_PROXY_AUTH`). A `NetworkError`, so code that caught
 * those still does; only `DQS_CONNECT`, a proxy's `DQS_PROXY` and a temporary DNS failure are retried.
 */
export class ConnectionError extends NetworkError {
  /** The host (and port) the client tried to reach: the service's, or the proxy's. */
  readonly host: string;
  /** The proxy the connection went through, without credentials; undefined for a direct connection. */
  readonly proxy: string | undefined;
  /** Whether another attempt may succeed (a refused connection, a DNS server that timed out). */
  readonly transient: boolean;
  constructor(
    code: ConnectionErrorCode,
    info: RequestInfo,
    reason: string,
    details: { host: string; proxy?: string | undefined; transient: boolean; cause?: unknown },
  ) {
    super(info, reason, { code, cause: details.cause });
    this.host = details.host;
    this.proxy = details.proxy;
    this.transient = details.transient;
  }
}

/**
 * The base URL answers, but not as the Dataset Query Service: an HTML page (a portal, a proxy's block
 * page, a web site) where the service sends JSON. Not retried: the address is wrong.
 */
export class NotServiceError extends DqsError {
  readonly url: string;
  readonly status: number | undefined;
  constructor(info: RequestInfo, what: string, status?: number) {
    super(
      'DQS_NOT_SERVICE',
      `${info.method} ${info.url} answered ${what}, not the Dataset Query Service: check baseUrl (DQS_BASE_URL), or whether a proxy answered in its place`,
    );
    this.url = info.url;
    this.status = status;
  }
}

/** The service answered in a way the spec does not allow: wrong shape, missing header, bad id. */
export class ProtocolError extends DqsError {
  readonly method: string | undefined;
  readonly url: string | undefined;
  constructor(message: string, info?: RequestInfo, options?: { cause?: unknown }) {
    super('DQS_PROTOCOL', info ? `${message} (${info.method} ${info.url})` : message, options);
    this.method = info?.method;
    this.url = info?.url;
  }
}

/** The states the spec names; any other one ends a wait at once (`QueryFailedError`). */
export const KNOWN_QUERY_STATES: ReadonlySet<string> = new Set(['running', 'complete']);

/**
 * The service reported a query state the spec does not name (`failed`, `cancelled`, ...). Waiting cannot
 * turn it into `complete`, so the wait ends at once instead of polling until its timeout.
 */
export class QueryFailedError extends DqsError {
  /** The state the service reported, as sent. */
  readonly state: string;
  readonly datasetId: string;
  readonly queryId: string;
  /** The `message` the service sent with it, when it sent one. */
  readonly serverMessage: string | undefined;
  constructor(details: {
    state: string;
    datasetId: string;
    queryId: string;
    serverMessage?: string | undefined;
  }) {
    const server = details.serverMessage ? `: ${details.serverMessage}` : '';
    super(
      'DQS_QUERY_FAILED',
      `The query ${details.queryId} on ${details.datasetId} is in state ${safeRepr(details.state)}, not running or complete${server}`,
    );
    this.state = redactSecrets(details.state);
    this.datasetId = details.datasetId;
    this.queryId = details.queryId;
    this.serverMessage =
      details.serverMessage === undefined ? undefined : redactSecrets(details.serverMessage);
  }
}

/**
 * A body this client cannot turn back into what the server encoded: a `Content-Encoding` it has no decoder
 * for, or a body that is not what its `Content-Encoding` says (says gzip, sends plain). Never handed on to a
 * decoder as garbage; not retried (the same server would answer the same way).
 */
export class ContentEncodingError extends ProtocolError {
  /** The `Content-Encoding` as the server sent it. */
  readonly encoding: string;
  constructor(message: string, encoding: string, info: RequestInfo, options?: { cause?: unknown }) {
    super(message, info, options);
    this.encoding = encoding;
  }
}

/** A response body was larger than the configured maximum. */
export class ResponseTooLargeError extends DqsError {
  readonly maxBytes: number;
  constructor(
    info: RequestInfo,
    maxBytes: number,
    reason = `body exceeds the limit of ${maxBytes} bytes`,
    options?: { cause?: unknown },
  ) {
    super('DQS_RESPONSE_TOO_LARGE', `${info.method} ${info.url}: ${reason}`, options);
    this.maxBytes = maxBytes;
  }
}

/** Where in a result a problem sits. Rows are 1-based result positions, as the service's `start`. */
export interface ResultLocation {
  /** The page request: its `start` and `limit`. */
  readonly page?: PageRef | undefined;
  /** 1-based row position in the whole result. */
  readonly row?: number | undefined;
  /** Column id (field descriptor `id`). */
  readonly column?: string | undefined;
}

function describeLocation(loc: ResultLocation): string {
  const parts: string[] = [];
  if (loc.page) parts.push(`page start=${loc.page.start} limit=${loc.page.limit}`);
  if (loc.row !== undefined) parts.push(`row ${loc.row}`);
  if (loc.column !== undefined) parts.push(`column "${loc.column}"`);
  return parts.length ? ` (${parts.join(', ')})` : '';
}

/** A body (JSON, CSV, XLSX) could not be decoded. */
export class DecodeError extends DqsError {
  readonly row: number | undefined;
  readonly column: string | undefined;
  constructor(message: string, loc: ResultLocation = {}, options?: { cause?: unknown }) {
    super('DQS_DECODE', `${message}${describeLocation(loc)}`, options);
    this.page = loc.page;
    this.row = loc.row;
    this.column = loc.column;
  }
}

/** A value does not fit its column's declared type (e.g. `20241345` in a date column). */
export class InvalidValueError extends DqsError {
  readonly row: number | undefined;
  readonly column: string | undefined;
  readonly value: unknown;
  readonly expected: string;
  constructor(expected: string, value: unknown, loc: ResultLocation = {}) {
    super('DQS_INVALID_VALUE', `Expected ${expected}, got ${safeRepr(value)}${describeLocation(loc)}`);
    this.page = loc.page;
    this.row = loc.row;
    this.column = loc.column;
    this.value = typeof value === 'string' ? redactSecrets(value) : value;
    this.expected = expected;
  }
}

/** The result was truncated at the row cap and the caller asked to fail instead (`onTruncated: 'error'`). */
export class TruncatedError extends DqsError {
  readonly total: number;
  constructor(total: number) {
    super(
      'DQS_TRUNCATED',
      `The result was truncated by the service at ${total} rows; narrow the query (e.g. fewer tickers)`,
    );
    this.total = total;
  }
}

/**
 * The parts of a split result (`split: true`) do not share one schema: the service described the columns
 * of one part's query otherwise than the whole list's. Their rows cannot make one stream; nothing was read.
 */
export class SplitSchemaError extends DqsError {
  readonly datasetId: string;
  /** The tickers of the part whose columns differ. */
  readonly tickers: readonly string[];
  constructor(datasetId: string, tickers: readonly string[], difference: string) {
    super(
      'DQS_SPLIT_SCHEMA',
      `The parts of the split result of ${datasetId} do not share one schema: the part of ${tickers.join(', ')} ${difference}; read the parts apart (split: false, one query per list)`,
    );
    this.datasetId = datasetId;
    this.tickers = tickers;
  }
}

/**
 * The server says the result holds more rows than `maxRows` (by default the spec's 500,000-row cap): refused
 * before any page is read, since reading a total the server made up would never end.
 */
export class RowLimitError extends DqsError {
  readonly total: number;
  readonly maxRows: number;
  constructor(total: number, maxRows: number) {
    super(
      'DQS_ROW_LIMIT',
      `The service says the result has ${total} rows, more than \`maxRows\` (${maxRows}); the spec caps a result at 500000 rows. Pass a larger \`maxRows\` to read it anyway`,
    );
    this.total = total;
    this.maxRows = maxRows;
  }
}

/** The caller asked for a format the query does not offer. */
export class FormatNotOfferedError extends DqsError {
  readonly offered: readonly string[];
  constructor(requested: string, offered: readonly string[]) {
    super(
      'DQS_FORMAT_NOT_OFFERED',
      `Format "${requested}" is not offered by this query; offered: ${offered.join(', ') || '(none)'}`,
    );
    this.offered = offered;
  }
}

/**
 * An optional peer (nodejs-polars) cannot be loaded: either it is not installed, or it is installed and a
 * piece of it is missing (its native binary for this platform). The message says which; the failed
 * import is the `cause`.
 */
export class MissingPackageError extends DqsError {
  readonly packageName: string;
  /** The package that is really missing: `packageName`, or its platform binary (`nodejs-polars-linux-x64-gnu`). */
  readonly missing: string;
  constructor(packageName: string, missing: string, message: string, options?: { cause?: unknown }) {
    super('DQS_MISSING_PACKAGE', message, options);
    this.packageName = packageName;
    this.missing = missing;
  }
}

/** A short, bounded representation of a value for error messages. */
export function safeRepr(value: unknown): string {
  let s: string;
  try {
    s = typeof value === 'string' ? JSON.stringify(value) : String(JSON.stringify(value) ?? String(value));
  } catch {
    s = Object.prototype.toString.call(value);
  }
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
