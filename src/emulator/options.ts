import { InvalidArgumentError } from '../core/errors.js';
import {
  checkKeys,
  checkNumber,
  invalid,
  invalidSecret,
  optionalInteger,
  optionKeys,
} from '../core/validate.js';
import { ROW_CAP } from '../core/wire.js';
import { ALL_CODINGS, AVAILABLE_CODINGS, type ContentCoding } from './compression.js';
import type { FaultHook } from './faults.js';

/**
 * Options of `startEmulator`, flat (every member is optional), declared in groups: server, data, paging,
 * shaping, limits and page cache.
 */
export interface EmulatorOptions
  extends EmulatorServerOptions,
    EmulatorDataOptions,
    EmulatorPagingOptions,
    EmulatorShapingOptions,
    EmulatorLimitOptions,
    EmulatorPageCacheOptions {}

/** Where and how the emulator listens, and what it accepts of a request. */
export interface EmulatorServerOptions {
  /**
   * Interface to listen on.
   * @default '127.0.0.1'
   */
  readonly host?: string;
  /**
   * TCP port; 0 picks a free one (read it back from `emulator.port`).
   * @default 0
   */
  readonly port?: number;
  /**
   * The key clients must send as `Authorization: token <apiKey>`.
   * @default 'demo'
   */
  readonly apiKey?: string;
  /**
   * Path prefix of every endpoint, e.g. `'/api'`, so a base URL with a path is exercised. Requests
   * outside it answer 404. `''` serves at the root.
   * @default ''
   */
  readonly basePath?: string;
  /**
   * Serve HTTPS with this certificate and key (PEM), as a deployment behind TLS does: tests of company CAs
   * and certificate errors make a throwaway CA and a server certificate for it. The URL is then https:.
   * @default undefined (plain HTTP)
   */
  readonly tls?: TlsOptions;
  /**
   * Largest accepted request body; larger answers 413.
   * @default 1048576
   */
  readonly maxBodyBytes?: number;
  /**
   * Time allowed to receive a request's headers; past it, `408` and the connection closes.
   * @default 20000
   */
  readonly headersTimeoutMs?: number;
  /**
   * Time allowed to receive a whole request (headers and body); past it, `408`.
   * @default 60000
   */
  readonly requestTimeoutMs?: number;
  /**
   * Connections the emulator may accept per turn of its event loop: the listening socket is watched
   * through this many descriptors (copies made once at start by a short-lived helper process). Node accepts
   * one connection per turn and descriptor, so under load a fresh connection would otherwise wait seconds
   * in the kernel's queue. 1: the plain listener, no helper.
   * @default 128
   */
  readonly acceptWidth?: number;
  /**
   * Requests kept in `emulator.requests`; older ones are dropped so a long-running emulator stays small.
   * @default 10000
   */
  readonly requestLogLimit?: number;
}

/** The synthetic data: which rows, and what they may hold. */
export interface EmulatorDataOptions {
  /**
   * Seed of the synthetic data, an integer 0 to 2^32 - 1. Same seed, same rows.
   * @default 1
   */
  readonly seed?: number;
  /**
   * Integers past a double's exact range in results: result row 1 and every 1000th row after it
   * (1001, 2001, ...) carry 2^53 + their row number (row 1: 9007199254740993) in the dataset's first
   * `number` column, written as its exact digits (a text cell in XLSX, whose numbers are doubles).
   * @default false
   */
  readonly bigIntegers?: boolean;
}

/** Queries and their result pages, as the spec describes them. */
export interface EmulatorPagingOptions {
  /**
   * Row cap per query result; larger results are truncated (`X-Truncated: true`).
   * @default 500000
   */
  readonly rowCap?: number;
  /**
   * Rows per page when a result GET has no `limit`.
   * @default 1000
   */
  readonly defaultPageSize?: number;
  /**
   * Largest page served; a larger `limit` is clamped (the page echoes `limit`, `count` is smaller).
   * @default 100000
   */
  readonly maxPageSize?: number;
  /**
   * How long a new query stays `running` before it is `complete`. 0 completes it at once, and the POST
   * then answers `complete` with the total.
   * @default 0
   */
  readonly queryDelayMs?: number;
  /**
   * Status of a HEAD check while the query is running: 200, or 202 as some deployments answer.
   * @default 200
   */
  readonly runningStatus?: 200 | 202;
}

/** A service far away: round trips, execution time, bandwidth, compression. */
export interface EmulatorShapingOptions {
  /**
   * Round-trip time in ms, as a WAN adds it: every response's first byte waits this long after the request
   * arrived, and the first response on a new connection one more (the TCP handshake). 0: none.
   * @default 0
   */
  readonly latencyMs?: number;
  /**
   * Execution time of a result page before its first byte, in ms: `pageTimeMs + rowTimeMs × rows`
   * (added to `latencyMs`; the emulator's own serialization time counts towards it). 0: none.
   * @default 0
   */
  readonly pageTimeMs?: number;
  /** @default 0 (see `pageTimeMs`), e.g. 0.02 */
  readonly rowTimeMs?: number;
  /**
   * Bandwidth of each connection in bytes per second, paced on the bytes on the wire (after compression).
   * 0: unlimited.
   * @default 0
   */
  readonly connectionBytesPerSecond?: number;
  /** Bandwidth shared by all connections, bytes per second. 0: unlimited. @default 0 */
  readonly totalBytesPerSecond?: number;
  /**
   * Compression of JSON and CSV bodies of 256 bytes or more, by the request's `Accept-Encoding`, as a
   * front end does. `false` turns it off; `level` (1-9, default 1 as nginx) applies to every coding (gzip
   * and deflate level, brotli quality, zstd level); `codings` lists those offered, in the order preferred
   * when the client weighs them equally (default gzip, br, zstd where the runtime has it, deflate).
   * @default true
   */
  readonly compression?: boolean | CompressionOptions;
}

/** A service that pushes back: caps, rate limits, load shedding, injected faults. */
export interface EmulatorLimitOptions {
  /**
   * Requests handled at once (arrival to last byte sent); one more is answered `429` with
   * `Retry-After: 1`, as a gateway's concurrency limit does. 0: no cap.
   * @default 0
   */
  readonly maxInFlight?: number;
  /**
   * Requests admitted per sliding 60 s; beyond, `429` with `Retry-After` = the seconds until the oldest
   * admitted request leaves the window (refused requests do not count). 0: no limit.
   * @default 0
   */
  readonly requestsPerMinute?: number;
  /**
   * Load shedding: rows of the result pages being built or sent at once. A page that would exceed it is
   * answered `503` with `Retry-After` (the seconds the emulator needs for the work it has queued), unless
   * it has at most 1,024 rows (a slice of work: never shed) or nothing else is in flight. 0: no bound.
   * @default 250000 (about 100 MB of job_listings table JSON); 0 when WAN shaping is on (`latencyMs`,
   * `pageTimeMs`, `rowTimeMs` or a bandwidth), whose configured limits are then the only ones
   */
  readonly maxPageRowsInFlight?: number;
  /**
   * Called for every request before routing; returns a fault to inject, or `undefined`. A seeded,
   * reproducible one: `faultPlan({ seed, rate })`.
   * @default undefined (no faults)
   */
  readonly fault?: FaultHook;
}

/** The emulator's own cache of serialized pages (its speed, not the spec's behaviour). */
export interface EmulatorPageCacheOptions {
  /**
   * How many serialized result pages to keep (LRU), so repeated reads cost no serialization. 0 disables.
   * @default 64
   */
  readonly pageCacheSize?: number;
  /**
   * Byte budget of the page cache; least recently used pages are dropped beyond it.
   * @default 268435456 (256 MiB)
   */
  readonly pageCacheBytes?: number;
  /**
   * Cached pages unused for this long are dropped, so memory returns near idle after a load. 0: never.
   * @default 5000; 0 when `pageCacheSize` or `pageCacheBytes` is given (a cache sized on purpose is kept)
   */
  readonly pageCacheIdleMs?: number;
}

/** A server certificate (its chain may follow it) and its private key, PEM. */
export interface TlsOptions {
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
}

export interface CompressionOptions {
  /** @default 1 */
  readonly level?: number;
  /** @default ['gzip', 'br', 'zstd' (only where `zlib.zstdCompress` exists), 'deflate'] */
  readonly codings?: readonly ContentCoding[];
}

/** Compression with defaults applied; `codings` empty when off. */
export interface ServedCompression {
  readonly level: number;
  readonly codings: readonly ContentCoding[];
}

/** Options with every default applied. */
export interface NormalizedOptions {
  readonly host: string;
  readonly port: number;
  readonly apiKey: string;
  readonly seed: number;
  readonly rowCap: number;
  readonly bigIntegers: boolean;
  readonly defaultPageSize: number;
  readonly maxPageSize: number;
  readonly queryDelayMs: number;
  readonly runningStatus: 200 | 202;
  readonly basePath: string;
  readonly maxBodyBytes: number;
  readonly pageCacheSize: number;
  readonly pageCacheBytes: number;
  readonly requestLogLimit: number;
  readonly fault: FaultHook | undefined;
  readonly compression: ServedCompression;
  readonly latencyMs: number;
  readonly pageTimeMs: number;
  readonly rowTimeMs: number;
  readonly connectionBytesPerSecond: number;
  readonly totalBytesPerSecond: number;
  readonly maxInFlight: number;
  readonly requestsPerMinute: number;
  readonly maxPageRowsInFlight: number;
  readonly pageCacheIdleMs: number;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly acceptWidth: number;
  readonly tls: TlsOptions | undefined;
}

export const DEFAULT_OPTIONS: Omit<NormalizedOptions, 'fault' | 'compression' | 'tls'> = Object.freeze({
  host: '127.0.0.1',
  port: 0,
  apiKey: 'demo',
  seed: 1,
  rowCap: ROW_CAP,
  bigIntegers: false,
  defaultPageSize: 1000,
  maxPageSize: 100_000,
  queryDelayMs: 0,
  runningStatus: 200,
  basePath: '',
  maxBodyBytes: 1024 * 1024,
  pageCacheSize: 64,
  pageCacheBytes: 256 * 1024 * 1024,
  requestLogLimit: 10_000,
  latencyMs: 0,
  pageTimeMs: 0,
  rowTimeMs: 0,
  connectionBytesPerSecond: 0,
  totalBytesPerSecond: 0,
  maxInFlight: 0,
  requestsPerMinute: 0,
  maxPageRowsInFlight: 250_000,
  pageCacheIdleMs: 5000,
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 60_000,
  acceptWidth: 128,
});

const KNOWN = new Set<string>([...Object.keys(DEFAULT_OPTIONS), 'fault', 'compression', 'tls']);
const COMPRESSION_KEYS = optionKeys<CompressionOptions>({ level: true, codings: true });

function tlsOptions(value: unknown): TlsOptions | undefined {
  if (value === undefined) return undefined;
  const o = value as Partial<TlsOptions> | null;
  const pem = (v: unknown) =>
    (typeof v === 'string' || Buffer.isBuffer(v)) && String(v).includes('-----BEGIN');
  if (o === null || typeof o !== 'object' || !pem(o.cert) || !pem(o.key)) {
    // Not described: a private key is not quoted back.
    throw new InvalidArgumentError('tls', 'Expected { cert, key }, each PEM text or a Buffer of it');
  }
  return { cert: o.cert!, key: o.key! };
}

function fail(name: string, expected: string, value: unknown): never {
  throw invalid(name, expected, value);
}

/** An integer option: its default when unset, else checked by core/validate (the library's own rules). */
const int = (name: string, value: unknown, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER) =>
  optionalInteger(value, name, min, fallback, max);

/** Milliseconds: a finite number >= 0 (fractions allowed: `rowTimeMs: 0.02`), at most a timer's range. */
const ms = (name: string, value: unknown, fallback: number) =>
  value === undefined ? fallback : checkNumber(value, name, 0, MAX_TIMER_MS);

/** The longest delay a Node timer takes. */
const MAX_TIMER_MS = 2_147_483_647;

function bigIntegers(value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') fail('bigIntegers', 'a boolean', value);
  return value;
}

function shaped(o: EmulatorOptions): boolean {
  return [o.latencyMs, o.pageTimeMs, o.rowTimeMs, o.connectionBytesPerSecond, o.totalBytesPerSecond].some(
    (v) => typeof v === 'number' && v > 0,
  );
}

const BASE_PATH_SEGMENT = /^[A-Za-z0-9._~-]+$/;

function basePath(value: unknown): string {
  if (value === undefined) return DEFAULT_OPTIONS.basePath;
  const expected = "'' or a path such as '/api' (segments of letters, digits, '.', '_', '~', '-')";
  if (typeof value !== 'string') fail('basePath', expected, value);
  const trimmed = value.endsWith('/') ? value.slice(0, -1) : value;
  if (trimmed === '') return '';
  const segments = trimmed.split('/');
  const valid =
    trimmed.startsWith('/') &&
    segments.slice(1).every((s) => BASE_PATH_SEGMENT.test(s) && s !== '.' && s !== '..');
  if (!valid) fail('basePath', expected, value);
  return trimmed;
}

function compression(value: unknown): ServedCompression {
  if (value === undefined || value === true) return { level: 1, codings: AVAILABLE_CODINGS };
  if (value === false) return { level: 1, codings: [] };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    fail('compression', 'a boolean or an object { level, codings }', value);
  }
  const o = value as CompressionOptions;
  checkKeys(o, COMPRESSION_KEYS, '`compression` options of the emulator', 'compression.');
  const level = int('compression.level', o.level, 1, 1, 9);
  if (o.codings === undefined) return { level, codings: AVAILABLE_CODINGS };
  if (!Array.isArray(o.codings))
    fail('compression.codings', `an array of ${ALL_CODINGS.join(', ')}`, o.codings);
  const codings: ContentCoding[] = [];
  for (const [i, coding] of (o.codings as unknown[]).entries()) {
    if (!ALL_CODINGS.includes(coding as ContentCoding)) {
      fail(`compression.codings[${i}]`, `one of ${ALL_CODINGS.join(', ')}`, coding);
    }
    if (!AVAILABLE_CODINGS.includes(coding as ContentCoding)) {
      fail(
        `compression.codings[${i}]`,
        `a coding this Node runtime has (${AVAILABLE_CODINGS.join(', ')}; zstd needs zlib.zstdCompress, Node >= 22.15)`,
        coding,
      );
    }
    if (!codings.includes(coding as ContentCoding)) codings.push(coding as ContentCoding);
  }
  return { level, codings };
}

/** Applies defaults and validates, without touching the caller's object. */
export function normalizeOptions(options: EmulatorOptions = {}): NormalizedOptions {
  if (options === null || typeof options !== 'object') fail('options', 'an object', options);
  checkKeys(options, KNOWN, 'emulator options');
  return {
    ...serverOptions(options),
    ...dataOptions(options),
    ...pagingOptions(options),
    ...shapingOptions(options),
    ...limitOptions(options),
    ...pageCacheOptions(options),
  };
}

type Normalized<T> = { readonly [K in keyof Required<T>]: NormalizedOptions[K & keyof NormalizedOptions] };

function serverOptions(o: EmulatorServerOptions): Normalized<EmulatorServerOptions> {
  const d = DEFAULT_OPTIONS;
  const host = o.host ?? d.host;
  if (typeof host !== 'string' || host === '') fail('host', 'a non-empty string', host);
  const apiKey = o.apiKey ?? d.apiKey;
  // The key travels in a header: it must be a non-empty token without whitespace or control characters.
  if (typeof apiKey !== 'string' || !/^[\x21-\x7e]+$/.test(apiKey)) {
    throw invalidSecret('apiKey', 'a non-empty string of visible ASCII characters', apiKey);
  }
  return {
    host,
    port: int('port', o.port, d.port, 0, 65535),
    apiKey,
    basePath: basePath(o.basePath),
    tls: tlsOptions(o.tls),
    maxBodyBytes: int('maxBodyBytes', o.maxBodyBytes, d.maxBodyBytes, 1),
    headersTimeoutMs: int('headersTimeoutMs', o.headersTimeoutMs, d.headersTimeoutMs, 1, MAX_TIMER_MS),
    requestTimeoutMs: int('requestTimeoutMs', o.requestTimeoutMs, d.requestTimeoutMs, 1, MAX_TIMER_MS),
    acceptWidth: int('acceptWidth', o.acceptWidth, d.acceptWidth, 1, 256),
    requestLogLimit: int('requestLogLimit', o.requestLogLimit, d.requestLogLimit, 0),
  };
}

function dataOptions(o: EmulatorDataOptions): Normalized<EmulatorDataOptions> {
  return {
    seed: int('seed', o.seed, DEFAULT_OPTIONS.seed, 0, 0xffffffff),
    bigIntegers: bigIntegers(o.bigIntegers),
  };
}

function pagingOptions(o: EmulatorPagingOptions): Normalized<EmulatorPagingOptions> {
  const d = DEFAULT_OPTIONS;
  const maxPageSize = int('maxPageSize', o.maxPageSize, d.maxPageSize, 1);
  const runningStatus = o.runningStatus ?? d.runningStatus;
  if (runningStatus !== 200 && runningStatus !== 202) fail('runningStatus', '200 or 202', runningStatus);
  return {
    rowCap: int('rowCap', o.rowCap, d.rowCap, 1),
    defaultPageSize: int('defaultPageSize', o.defaultPageSize, d.defaultPageSize, 1, maxPageSize),
    maxPageSize,
    queryDelayMs: int('queryDelayMs', o.queryDelayMs, d.queryDelayMs, 0, MAX_TIMER_MS),
    runningStatus,
  };
}

function shapingOptions(o: EmulatorShapingOptions): Normalized<EmulatorShapingOptions> {
  const d = DEFAULT_OPTIONS;
  return {
    latencyMs: ms('latencyMs', o.latencyMs, d.latencyMs),
    pageTimeMs: ms('pageTimeMs', o.pageTimeMs, d.pageTimeMs),
    rowTimeMs: ms('rowTimeMs', o.rowTimeMs, d.rowTimeMs),
    connectionBytesPerSecond: int('connectionBytesPerSecond', o.connectionBytesPerSecond, 0, 0),
    totalBytesPerSecond: int('totalBytesPerSecond', o.totalBytesPerSecond, 0, 0),
    compression: compression(o.compression),
  };
}

function limitOptions(o: EmulatorOptions): Normalized<EmulatorLimitOptions> {
  const d = DEFAULT_OPTIONS;
  const fault = o.fault;
  if (fault !== undefined && typeof fault !== 'function') fail('fault', 'a function or undefined', fault);
  return {
    maxInFlight: int('maxInFlight', o.maxInFlight, d.maxInFlight, 0),
    requestsPerMinute: int('requestsPerMinute', o.requestsPerMinute, d.requestsPerMinute, 0),
    // A shaped emulator models a given service, whose limits are the ones configured (maxInFlight,
    // requestsPerMinute): its own shedding would add 503s nobody asked for, as shaped pages stay in
    // flight for their latency and transfer time.
    maxPageRowsInFlight: int(
      'maxPageRowsInFlight',
      o.maxPageRowsInFlight,
      shaped(o) ? 0 : d.maxPageRowsInFlight,
      0,
    ),
    fault,
  };
}

function pageCacheOptions(o: EmulatorPageCacheOptions): Normalized<EmulatorPageCacheOptions> {
  const d = DEFAULT_OPTIONS;
  return {
    pageCacheSize: int('pageCacheSize', o.pageCacheSize, d.pageCacheSize, 0),
    pageCacheBytes: int('pageCacheBytes', o.pageCacheBytes, d.pageCacheBytes, 0),
    // A cache sized on purpose (benchmarks serving every page from memory) is kept until asked otherwise.
    pageCacheIdleMs: int(
      'pageCacheIdleMs',
      o.pageCacheIdleMs,
      o.pageCacheSize === undefined && o.pageCacheBytes === undefined ? d.pageCacheIdleMs : 0,
      0,
      MAX_TIMER_MS,
    ),
  };
}
