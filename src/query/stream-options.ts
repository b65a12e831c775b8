import type { ColumnKind } from '../convert/index.js';
import { FormatNotOfferedError } from '../core/errors.js';
import { checkInteger, checkSignal, invalid, oneOf, optionalInteger } from '../core/validate.js';
import { MediaType } from '../core/wire.js';
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
  /** Rows per page request (minimum 1). Small pages (5-10k) beat big ones: see the README. @default 10_000 */
  readonly pageSize?: number;
  /**
   * Page requests at once (minimum 1). 2 was fastest in `npm run bench` (loopback, 2 cores: decoding, not
   * the network, is the limit there); more helps against a distant service, at ~one page of memory each.
   * @default 2
   */
  readonly concurrency?: number;
  /** Pages started but not yet emitted, at most (>= concurrency). @default 2 * concurrency */
  readonly window?: number;
  /** Rows per emitted RecordBatch, independent of `pageSize`. @default pageSize */
  readonly batchSize?: number;
  /** 1-based row to start at: resumes a download without re-reading rows. @default 1 */
  readonly startRow?: number;
  /** Column type overrides, e.g. `{ posted: 'date' }` for services that declare every column `string`. */
  readonly types?: Readonly<Record<string, ColumnKind>>;
  /** A value that breaks its column's type: fail with `InvalidValueError`, or keep going with null. @default 'error' */
  readonly onInvalid?: 'error' | 'null';
  /** A truncated result (over the row cap): emit `'truncated'` and go on, or fail with `TruncatedError`. @default 'warn' */
  readonly onTruncated?: 'warn' | 'error';
  /** Cancels the whole stream: polling and every in-flight request. */
  readonly signal?: AbortSignal | undefined;
  /** Per-request timeout for page reads, in ms. @default the client's */
  readonly timeoutMs?: number | undefined;
  /**
   * @internal Table-JSON and CSV decoding: `'fast'` decodes bytes straight into columns (falling back to
   * the reference for unusual pages), `'json'` always takes the reference path (`JSON.parse`, or
   * csv-parse's rows for CSV; for tests and benchmarks). Also settable with the `DQS_DECODER` environment
   * variable.
   * @default 'fast'
   */
  readonly decoder?: 'fast' | 'json';
}

export interface NormalizedStreamOptions {
  readonly output: 'arrow' | 'rows';
  readonly format: 'auto' | DecodableFormat;
  readonly pageSize: number;
  readonly concurrency: number;
  readonly window: number;
  readonly batchSize: number;
  readonly startRow: number;
  readonly types: Readonly<Record<string, ColumnKind>> | undefined;
  readonly onInvalid: 'error' | 'null';
  readonly onTruncated: 'warn' | 'error';
  readonly signal: AbortSignal | undefined;
  readonly timeoutMs: number | undefined;
  readonly decoder: 'fast' | 'json';
}

export const DEFAULT_PAGE_SIZE = 10_000;
export const DEFAULT_CONCURRENCY = 2;

export function normalizeStreamOptions(options: StreamOptions = {}): NormalizedStreamOptions {
  const pageSize = optionalInteger(options.pageSize, 'pageSize', 1, DEFAULT_PAGE_SIZE);
  const concurrency = optionalInteger(options.concurrency, 'concurrency', 1, DEFAULT_CONCURRENCY);
  const window = optionalInteger(options.window, 'window', 1, concurrency * 2);
  if (window < concurrency) throw invalid('window', `an integer >= \`concurrency\` (${concurrency})`, window);
  const signal = checkSignal(options.signal);
  return {
    output: oneOf(options.output, 'output', ['arrow', 'rows'], 'arrow'),
    format: oneOf(options.format, 'format', ['auto', ...DECODABLE_FORMATS], 'auto'),
    pageSize,
    concurrency,
    window,
    batchSize: optionalInteger(options.batchSize, 'batchSize', 1, pageSize),
    startRow: optionalInteger(options.startRow, 'startRow', 1, 1),
    types: options.types,
    onInvalid: oneOf(options.onInvalid, 'onInvalid', ['error', 'null'], 'error'),
    onTruncated: oneOf(options.onTruncated, 'onTruncated', ['warn', 'error'], 'warn'),
    signal,
    timeoutMs: options.timeoutMs === undefined ? undefined : checkInteger(options.timeoutMs, 'timeoutMs', 1),
    decoder: oneOf(
      options.decoder ?? (process.env.DQS_DECODER || undefined),
      'decoder',
      ['fast', 'json'],
      'fast',
    ),
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
