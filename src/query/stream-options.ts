import type { ColumnKind } from '../convert/index.js';
import { FormatNotOfferedError, InvalidArgumentError } from '../core/errors.js';
import {
  checkInteger,
  checkKeys,
  checkObject,
  checkSignal,
  invalid,
  oneOf,
  optionalBoolean,
  optionalInteger,
  optionKeys,
} from '../core/validate.js';
import { MediaType, ROW_CAP } from '../core/wire.js';
import { DECODABLE_FORMATS, type DecodableFormat, FORMATS } from '../decode/index.js';

/** Options of `result.stream()`, `client.stream()`, `toTable()` and `toArray()`. */
export interface StreamOptions {
  /** `'arrow'`: `RecordBatch` chunks; `'rows'`: one plain object per chunk. @default 'arrow' */
  readonly output?: 'arrow' | 'rows';
  /**
   * Wire format to read. `'auto'` picks table JSON when offered (fastest to decode here), else CSV,
   * else XLSX. The output never depends on this choice.
   * @default 'auto'
   */
  readonly format?: 'auto' | DecodableFormat;
  /**
   * Rows per page request (minimum 1). `'auto'` sizes each page from the link model when it is sent (see
   * docs/performance.md, *The link model*): rows whose service time is about the service's fixed time
   * (1,000 × a power of two), a body of 256 KiB to 4.5 MB, the byte bound when the client itself is what
   * reads wait for; larger under a rate limit or a cap on requests in flight. Either way, a server that answers fewer rows than asked (it clamps `limit`) is asked for
   * that many from then on.
   * @default 'auto'
   */
  readonly pageSize?: number | 'auto';
  /**
   * Page requests at once. `'auto'` keeps twice the measured bandwidth-delay product in flight (see
   * docs/performance.md, *The link model*): a first wave sized by the query's first page, grown per answer
   * until the delivery rate stops growing, cut by a 429's ceiling, a 503 or a timeout; every `'auto'`
   * stream of one client shares one such limit, so many queries together do not exceed what the service
   * accepts. A number fixes it (halved on a 429, earned back as pages succeed).
   * @default 'auto'
   */
  readonly concurrency?: number | 'auto';
  /** Upper bound of `'auto'` concurrency. @default the client's `connections`, else 64 */
  readonly maxConcurrency?: number;
  /**
   * Pages started but not yet emitted, at most (>= concurrency). @default 2 * concurrency; with 'auto',
   * the larger of the limit + 2 and 2 x the limit, plus the limit for each page waiting out a Retry-After
   */
  readonly window?: number;
  /**
   * Bytes of page data started but not yet emitted, at most: a slow consumer stops new requests once the
   * pages waiting for it (and those in flight, at the average page size) reach it. At least one page
   * is always in flight.
   * @default 128 MiB
   */
  readonly windowBytes?: number;
  /**
   * The most rows the service may say the result has: a larger `total` is a `RowLimitError` before any
   * page is read (a broken or hostile server claiming 10^12 rows would otherwise be read forever).
   * @default 500_000 (the spec's row cap)
   */
  readonly maxRows?: number;
  /** Rows per emitted RecordBatch, independent of `pageSize`. @default one batch per page */
  readonly batchSize?: number;
  /** 1-based row to start at: resumes a download without re-reading rows. @default 1 */
  readonly startRow?: number;
  /** Column type overrides, e.g. `{ posted: 'date' }` for services that declare every column `string`. */
  readonly types?: Readonly<Record<string, ColumnKind>>;
  /** A value that breaks its column's type: fail with `InvalidValueError`, or keep going with null. @default 'error' */
  readonly onInvalid?: 'error' | 'null';
  /**
   * Dates and timestamps in row objects (`output: 'rows'`): `'date'` gives `Date` objects (a date is UTC
   * midnight: read it with UTC getters, `getUTCDate()`, or west of UTC it shows the day before); `'string'`
   * gives ISO 8601 text, `'2024-02-29'` and `'2024-02-29T13:05:00Z'`. Arrow output is the same either way.
   * @default 'date'
   */
  readonly dates?: 'date' | 'string';
  /**
   * Integers a double cannot hold (an integer literal outside ±2^53, e.g. `9007199254740993`) in a
   * `number` column: `'error'` fails with `InvalidValueError` naming page, row and column (never a
   * rounded value); `'bigint'` makes every `number` column Int64 (`bigint` in row objects; a fraction is
   * then an invalid value); `'string'` makes them Utf8 (each number's exact decimal text, `'1.5'`,
   * `'9007199254740993'`). The last two read through the reference decoders (slower) and bypass the cache.
   * @default 'error'
   */
  readonly bigNumbers?: 'error' | 'bigint' | 'string';
  /** A truncated result (over the row cap): emit `'truncated'` and go on, or fail with `TruncatedError`. @default 'warn' */
  readonly onTruncated?: 'warn' | 'error';
  /**
   * A table-JSON or CSV body with bytes that are not UTF-8: fail with a `DecodeError` naming the page, the
   * byte and (table JSON) the row and column, or read them as U+FFFD (`'replace'`, what `TextDecoder` does).
   * @default 'error'
   */
  readonly invalidUtf8?: 'error' | 'replace';
  /**
   * Send a page request once more on another connection when it is much slower than the stream's other
   * requests (4x their median time, at least 250 ms, and overtaken by two requests sent after it); the
   * first answer is used. `false`: every page is requested once per attempt (exact request accounting).
   * @default true
   */
  readonly hedge?: boolean;
  /** Cancels the whole stream: polling and every in-flight request. */
  readonly signal?: AbortSignal | undefined;
  /** Per-request timeout for page reads, in ms. @default the client's */
  readonly timeoutMs?: number | undefined;
  /**
   * @internal Table-JSON and CSV decoding: `'fast'` decodes bytes straight into columns (falling back to
   * the reference for unusual pages), `'json'` always takes the reference path (`JSON.parse`, or
   * csv-parse's rows for CSV; for tests and benchmarks). The CLI and the benchmarks take it from the
   * `DQS_DECODER` environment variable; the library reads no environment for it.
   * @default 'fast'
   */
  readonly decoder?: 'fast' | 'json';
}

export interface NormalizedStreamOptions {
  readonly output: 'arrow' | 'rows';
  readonly format: 'auto' | DecodableFormat;
  readonly pageSize: number;
  /** True when `pageSize` was not given: chosen from the first page. */
  readonly pageSizeAuto: boolean;
  /** A fixed number, or `'auto'`. */
  readonly concurrency: number | 'auto';
  /** Given by the caller, or undefined (then the client's default applies). */
  readonly maxConcurrency: number | undefined;
  /** Pages in the window, at most; undefined: twice the current concurrency. */
  readonly window: number | undefined;
  readonly windowBytes: number;
  readonly maxRows: number;
  readonly batchSize: number;
  /** True when `batchSize` was not given: one batch per page. */
  readonly batchSizeAuto: boolean;
  readonly startRow: number;
  readonly types: Readonly<Record<string, ColumnKind>> | undefined;
  readonly onInvalid: 'error' | 'null';
  readonly bigNumbers: 'error' | 'bigint' | 'string';
  readonly dates: 'date' | 'string';
  readonly onTruncated: 'warn' | 'error';
  readonly invalidUtf8: 'error' | 'replace';
  readonly hedge: boolean;
  readonly signal: AbortSignal | undefined;
  readonly timeoutMs: number | undefined;
  readonly decoder: 'fast' | 'json';
}

export const DEFAULT_PAGE_SIZE = 10_000;
/**
 * The fixed concurrency `npm run bench`'s library scenarios use unless told otherwise (`--concurrency`).
 * Not a default of the library: `concurrency` defaults to `'auto'` (the link model, concurrency.ts).
 */
export const DEFAULT_CONCURRENCY = 2;
export const DEFAULT_MAX_CONCURRENCY = 64;
export const DEFAULT_WINDOW_BYTES = 128 * 1024 * 1024;

function invalidConcurrency(value: unknown): never {
  throw invalid('concurrency', "'auto' or an integer >= 1", value);
}

/** Every option of `StreamOptions`, for the checks of unknown keys (the compiler keeps it complete). */
export const STREAM_OPTIONS = {
  output: true,
  format: true,
  pageSize: true,
  concurrency: true,
  maxConcurrency: true,
  window: true,
  windowBytes: true,
  maxRows: true,
  batchSize: true,
  startRow: true,
  types: true,
  onInvalid: true,
  dates: true,
  bigNumbers: true,
  onTruncated: true,
  invalidUtf8: true,
  hedge: true,
  signal: true,
  timeoutMs: true,
  decoder: true,
} as const satisfies { readonly [K in keyof Required<StreamOptions>]: true };
const STREAM_KEYS = optionKeys<StreamOptions>(STREAM_OPTIONS);

/**
 * Applies defaults and checks every option; `known` are the keys the caller's entry point takes (a
 * misspelt one is refused, naming the one meant), `where` that entry point (`` `result.stream()` ``),
 * `prefix` the path of options nested in others (`stream.`).
 */
export function normalizeStreamOptions(
  options: StreamOptions = {},
  known: ReadonlySet<string> = STREAM_KEYS,
  where = '`result.stream()`',
  prefix = '',
): NormalizedStreamOptions {
  checkKeys(
    checkObject(options, prefix ? prefix.slice(0, -1) : 'options'),
    known,
    `options of ${where}`,
    prefix,
  );
  const pageSizeAuto = options.pageSize === undefined || options.pageSize === 'auto';
  const pageSize = pageSizeAuto ? DEFAULT_PAGE_SIZE : checkInteger(options.pageSize, 'pageSize', 1);
  const concurrency =
    options.concurrency === undefined || options.concurrency === 'auto'
      ? 'auto'
      : Number.isSafeInteger(options.concurrency) && options.concurrency >= 1
        ? options.concurrency
        : invalidConcurrency(options.concurrency);
  const maxConcurrency =
    options.maxConcurrency === undefined
      ? undefined
      : checkInteger(options.maxConcurrency, 'maxConcurrency', 1);
  if (maxConcurrency !== undefined && concurrency !== 'auto') {
    throw new InvalidArgumentError(
      'maxConcurrency',
      `Expected \`maxConcurrency\` only with concurrency 'auto', got concurrency ${concurrency}`,
    );
  }
  const window = options.window === undefined ? undefined : checkInteger(options.window, 'window', 1);
  if (window !== undefined && typeof concurrency === 'number' && window < concurrency) {
    throw invalid('window', `an integer >= \`concurrency\` (${concurrency})`, window);
  }
  const signal = checkSignal(options.signal);
  return {
    output: oneOf(options.output, 'output', ['arrow', 'rows'], 'arrow'),
    format: oneOf(options.format, 'format', ['auto', ...DECODABLE_FORMATS], 'auto'),
    pageSize,
    pageSizeAuto,
    concurrency,
    maxConcurrency,
    window,
    windowBytes: optionalInteger(options.windowBytes, 'windowBytes', 1, DEFAULT_WINDOW_BYTES),
    maxRows: optionalInteger(options.maxRows, 'maxRows', 0, ROW_CAP),
    batchSize: optionalInteger(options.batchSize, 'batchSize', 1, pageSize),
    batchSizeAuto: options.batchSize === undefined,
    startRow: optionalInteger(options.startRow, 'startRow', 1, 1),
    types: options.types,
    onInvalid: oneOf(options.onInvalid, 'onInvalid', ['error', 'null'], 'error'),
    dates: oneOf(options.dates, 'dates', ['date', 'string'], 'date'),
    bigNumbers: oneOf(options.bigNumbers, 'bigNumbers', ['error', 'bigint', 'string'], 'error'),
    onTruncated: oneOf(options.onTruncated, 'onTruncated', ['warn', 'error'], 'warn'),
    invalidUtf8: oneOf(options.invalidUtf8, 'invalidUtf8', ['error', 'replace'], 'error'),
    hedge: optionalBoolean(options.hedge, 'hedge', true),
    signal,
    timeoutMs: options.timeoutMs === undefined ? undefined : checkInteger(options.timeoutMs, 'timeoutMs', 1),
    decoder: oneOf(options.decoder, 'decoder', ['fast', 'json'], 'fast'),
  };
}

/** Resolves the format to read against what the query offers. */
export function chooseFormat(
  requested: 'auto' | DecodableFormat,
  offered: readonly string[],
): { format: DecodableFormat; mediaType: string } {
  // A service that lists no formats is assumed to speak table JSON, the spec's own type.
  const available = offered.length ? offered : [MediaType.table];
  // `auto` prefers the fastest decoder (see bench/): the table's order.
  const candidates = requested === 'auto' ? DECODABLE_FORMATS : [requested];
  for (const format of candidates) {
    const { mediaType } = FORMATS[format];
    if (available.includes(mediaType)) return { format, mediaType };
  }
  throw new FormatNotOfferedError(requested === 'auto' ? 'auto (json, csv or xlsx)' : requested, available);
}
