import { constants as bufferConstants } from 'node:buffer';
import type { Dispatcher } from 'undici';
import { InvalidArgumentError } from '../core/errors.js';
import { LoopBudget } from '../core/loop-budget.js';
import { registerSecret } from '../core/redact.js';
import { checkInteger, invalid, invalidSecret, optionalInteger } from '../core/validate.js';
import { API_VERSION } from '../core/wire.js';
import { ClientTelemetry } from '../telemetry/client-telemetry.js';
import { type ContentCoding, isSupportedCoding, SUPPORTED_CODINGS } from './content-encoding.js';
import { parseProxyUrl } from './proxy.js';
import { RateLimiter, type RateLimitOptions } from './rate-limiter.js';
import { type NormalizedRetryOptions, normalizeRetryOptions, type RetryOptions } from './retry.js';
import { type CaOption, normalizeCa } from './trust.js';

/** Options of `new DatasetClient(options)`. Every member is optional. */
export interface ClientOptions {
  /**
   * The service's base address; every path is relative to it, so a path prefix (`https://host/api`) is kept.
   * @default process.env.DQS_BASE_URL
   */
  readonly baseUrl?: string | URL;
  /**
   * The access token sent as `Authorization: token <apiKey>`. Never logged, never part of an error.
   * @default process.env.DQS_API_KEY
   */
  readonly apiKey?: string;
  /**
   * For tokens that expire: called before the first request and called again (once) after a 401,
   * so any token issuer can be plugged in. Takes precedence over `apiKey`.
   */
  readonly token?: () => string | Promise<string>;
  /** @default '20151130' */
  readonly apiVersion?: string;
  /**
   * Per-request timeout in ms (headers and the whole body of buffered reads; for streamed bodies, the
   * longest silence between two chunks).
   * @default 60_000
   */
  readonly timeoutMs?: number;
  /**
   * Largest response body accepted, in bytes, checked on `Content-Length` before reading and while
   * reading. A hostile or broken server cannot run us out of memory. At most V8's longest string
   * (`buffer.constants.MAX_STRING_LENGTH`, 2^29 - 24 on 64-bit), since a body may be read as text.
   * @default 256 MiB (a page of 10,000 rows is a few MB: this is a fence, not a budget)
   */
  readonly maxResponseBytes?: number;
  /**
   * Keep-alive connections per origin, at most. Unset, there are as many as requests in flight: the
   * streams' `concurrency` decides (and `'auto'` concurrency stays at or below 64). Set, it also bounds
   * `'auto'` concurrency; requests of a fixed `concurrency` above it wait for a free connection.
   * @default as many as requests in flight
   */
  readonly connections?: number;
  /** Extra headers for every request (e.g. a proxy's). Cannot replace `Authorization`. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Sending a key over plain `http://` to a host other than loopback needs this opt-in. @default false */
  readonly allowInsecureHttp?: boolean;
  /** Use your own undici dispatcher (a mock agent, a custom pool). `close()` then leaves it open. */
  readonly dispatcher?: Dispatcher;
  /**
   * The HTTP(S) proxy to reach the service through, e.g. `http://user:pass@proxy.corp:3128` (the
   * credentials are sent as `Proxy-Authorization` and never printed). `false`: never a proxy, whatever the
   * environment says. Unset: `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` (or their lower-case forms) decide,
   * as for other Node tools, through undici's `EnvHttpProxyAgent`.
   * @default from the environment
   */
  readonly proxy?: string | URL | false;
  /**
   * Certificate authorities to trust besides Node's own and `NODE_EXTRA_CA_CERTS`: a company root CA, or
   * the one of a TLS-inspecting proxy. PEM text (several certificates allowed), a Buffer of it, or a list.
   * Certificates are always verified; there is no option to turn that off.
   * @default none
   */
  readonly ca?: CaOption;
  /**
   * Where the library's own messages go, in the shape of pino or `console` (any of `debug`, `info`,
   * `warn`, `error`): `info` the proxy in use, `warn` each retry with its reason, `debug` each request
   * with its status and time. Each call gets one string; the key and proxy credentials are masked.
   * @default none (nothing is formatted)
   */
  readonly logger?: Logger;
  /**
   * Retries of transient failures (429, 500, 502, 503, 504, resets, timeouts, cut bodies) with backoff and
   * full jitter; `false` turns them off. Listen to the client's `'retry'` event to log them.
   * @default { retries: 4, minDelayMs: 250, maxDelayMs: 15_000, deadlineMs: 120_000 }
   */
  readonly retry?: RetryOptions | false;
  /** Client-side quota shared by all requests, e.g. `{ requests: 20, intervalMs: 60_000 }`. @default off */
  readonly rateLimit?: RateLimitOptions;
  /**
   * Compressed transfer (`Accept-Encoding`). `'auto'`: JSON answers always ask for it; result pages try
   * both on the connection and keep what is faster there (compressed on a slow link, plain where the
   * server's compressing costs more than the bytes it saves). `true`: always ask, `false`: never ask. A
   * list (`['br', 'gzip']`) always asks for those codings only, in that order. Whatever is asked, a
   * compressed body is inflated, and `maxResponseBytes` counts inflated bytes.
   * Codings: `gzip`, `deflate`, `br`, and `zstd` where Node's zlib has it (22.15+).
   * @default 'auto'
   */
  readonly compression?: boolean | 'auto' | readonly ContentCoding[];
  /**
   * What the client's page streams take of each turn of the event loop: page bodies at most 256 kB a turn
   * and one page's decode step at a time, all streams of the budget together. Hand several clients one
   * budget (`new DatasetClient({ loopBudget: other.loopBudget })`) so that together they take of each turn
   * what one takes.
   * @default a budget of the client's own
   */
  readonly loopBudget?: LoopBudget;
  /**
   * OpenTelemetry, when the application has `@opentelemetry/api` installed (an optional peer, loaded once
   * on first use): a `dqs.query` span per query with its create, wait and read phases, a `dqs.page` span
   * per page, metrics (rows, bytes, retries, 429s, the concurrency limit) and `traceparent` on requests
   * (docs/telemetry.md). `false` turns it off even when the package is there. Without the package,
   * nothing is done either way.
   * @default true
   */
  readonly telemetry?: boolean;
}

/** Every option of `ClientOptions`, for the check of unknown keys (the compiler keeps it complete). */
export const CLIENT_OPTIONS = {
  baseUrl: true,
  apiKey: true,
  token: true,
  apiVersion: true,
  timeoutMs: true,
  maxResponseBytes: true,
  connections: true,
  headers: true,
  allowInsecureHttp: true,
  dispatcher: true,
  proxy: true,
  ca: true,
  logger: true,
  retry: true,
  rateLimit: true,
  compression: true,
  telemetry: true,
  loopBudget: true,
} as const satisfies { readonly [K in keyof Required<ClientOptions>]: true };

/** A logger of the pino / `console` shape; the methods the library calls, each optional. */
export interface Logger {
  debug?(message: string): unknown;
  info?(message: string): unknown;
  warn?(message: string): unknown;
  error?(message: string): unknown;
}

const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

function normalizeLogger(value: unknown): Logger | undefined {
  if (value === undefined) return undefined;
  const o = value as Record<string, unknown> | null;
  if (o === null || typeof o !== 'object' || !LOG_LEVELS.some((l) => typeof o[l] === 'function')) {
    throw invalid('logger', 'an object with debug/info/warn/error methods (pino, console)', value);
  }
  // Bound once: pino's and console's methods need their `this`.
  const logger: { -readonly [K in keyof Logger]: Logger[K] } = {};
  for (const level of LOG_LEVELS) {
    const fn = o[level];
    if (typeof fn === 'function') logger[level] = (message: string) => fn.call(o, message);
  }
  return logger;
}

function normalizeTelemetry(value: unknown, baseUrl: URL): ClientTelemetry | undefined {
  if (value !== undefined && typeof value !== 'boolean') throw invalid('telemetry', 'true or false', value);
  return value === false ? undefined : new ClientTelemetry(baseUrl);
}

/** Asking for compression: whether and how (the `Accept-Encoding` value). */
export interface RequestCompression {
  readonly mode: 'auto' | 'always' | 'never';
  readonly acceptEncoding: string;
}

export interface NormalizedClientOptions {
  readonly baseUrl: URL;
  readonly token: (() => string | Promise<string>) | undefined;
  readonly apiKey: string | undefined;
  readonly apiVersion: string;
  readonly timeoutMs: number;
  readonly maxResponseBytes: number;
  readonly connections: number | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly dispatcher: Dispatcher | undefined;
  /** A URL: always this proxy; `false`: never; undefined: the environment decides. */
  readonly proxy: URL | false | undefined;
  /** Extra trusted CA certificates (PEM), when `ca` was given. */
  readonly ca: readonly string[] | undefined;
  readonly logger: Logger | undefined;
  readonly retry: NormalizedRetryOptions;
  readonly rateLimiter: RateLimiter | undefined;
  readonly compression: RequestCompression;
  /** Undefined with `telemetry: false`. */
  readonly telemetry: ClientTelemetry | undefined;
  readonly loopBudget: LoopBudget;
}

function normalizeCompression(value: unknown): RequestCompression {
  const all = SUPPORTED_CODINGS.join(', ');
  if (value === undefined || value === 'auto') return { mode: 'auto', acceptEncoding: all };
  if (value === true) return { mode: 'always', acceptEncoding: all };
  if (value === false) return { mode: 'never', acceptEncoding: 'identity' };
  if (Array.isArray(value) && value.length > 0 && value.every(isSupportedCoding)) {
    return { mode: 'always', acceptEncoding: [...new Set(value)].join(', ') };
  }
  throw invalid(
    'compression',
    `true, false, 'auto' or a non-empty list of ${SUPPORTED_CODINGS.map((c) => `'${c}'`).join(', ')}`,
    value,
  );
}

const LOOPBACK = new Set(['localhost', '[::1]']);
/** WHATWG URL normalises IPv4 hosts (`127.1` → `127.0.0.1`), so a literal test is enough here. */
const { MAX_STRING_LENGTH } = bufferConstants;

const IPV4_LOOPBACK = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

/**
 * The default body limit: half of V8's longest string, so a body read as text never reaches it (UTF-8
 * text is at most as many characters as bytes) and a body at the limit, with its text, stays within
 * twice its size in memory.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

function maxResponseBytes(value: unknown): number {
  return optionalInteger(value, 'maxResponseBytes', 1, DEFAULT_MAX_RESPONSE_BYTES, MAX_STRING_LENGTH);
}

function normalizeLoopBudget(value: unknown): LoopBudget {
  if (value === undefined) return new LoopBudget();
  if (value instanceof LoopBudget) return value;
  throw invalid('loopBudget', "a LoopBudget (another client's `loopBudget`)", value);
}

export function normalizeClientOptions(options: ClientOptions = {}): NormalizedClientOptions {
  const rawBase = options.baseUrl ?? process.env.DQS_BASE_URL;
  if (rawBase === undefined || rawBase === '') {
    throw new InvalidArgumentError(
      'baseUrl',
      'Expected the service address, got nothing: pass `baseUrl` or set DQS_BASE_URL (or start the emulator: `dqs serve`)',
    );
  }
  let baseUrl: URL;
  try {
    baseUrl = new URL(String(rawBase));
  } catch {
    throw invalid('baseUrl', 'an absolute http(s) URL', String(rawBase));
  }
  if (baseUrl.protocol !== 'http:' && baseUrl.protocol !== 'https:') {
    throw new InvalidArgumentError('baseUrl', `Expected an http: or https: URL, got ${baseUrl.protocol}`);
  }
  if (baseUrl.username || baseUrl.password) {
    throw new InvalidArgumentError(
      'baseUrl',
      'Expected no credentials in the URL: pass the key as `apiKey` (or DQS_API_KEY)',
    );
  }
  // Paths are resolved relative to the base, so it must end with '/' or its last segment would be replaced.
  if (!baseUrl.pathname.endsWith('/')) baseUrl.pathname += '/';
  baseUrl.search = '';
  baseUrl.hash = '';

  // A token passed as a string instead of a function is a secret all the same: never shown.
  if (options.token !== undefined && typeof options.token !== 'function') {
    throw invalidSecret('token', 'a function returning the token', options.token);
  }
  const apiKey = options.apiKey ?? process.env.DQS_API_KEY;
  // The key travels in a header: anything but printable ASCII would be refused by undici on every
  // request (as a network error, retried in vain). The message never shows the key.
  if (apiKey !== undefined && (typeof apiKey !== 'string' || !/^[\x20-\x7e]*$/.test(apiKey))) {
    throw invalidSecret('apiKey', 'a string of printable ASCII characters', apiKey);
  }
  if (
    baseUrl.protocol === 'http:' &&
    !LOOPBACK.has(baseUrl.hostname) &&
    // Not `startsWith('127.')`: that let a DNS name such as 127.example.com through.
    !IPV4_LOOPBACK.test(baseUrl.hostname) &&
    options.allowInsecureHttp !== true &&
    (apiKey || options.token)
  ) {
    throw new InvalidArgumentError(
      'baseUrl',
      `Refusing to send the API key over plain http:// to ${baseUrl.hostname}; use https://, or pass \`allowInsecureHttp: true\``,
    );
  }
  const apiVersion = options.apiVersion ?? API_VERSION;
  if (typeof apiVersion !== 'string' || !/^\d{8}$/.test(apiVersion)) {
    throw invalid('apiVersion', 'a date-shaped YYYYMMDD string', apiVersion);
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(options.headers ?? {})) {
    if (k.toLowerCase() === 'authorization') {
      throw new InvalidArgumentError(
        'headers',
        'Expected no Authorization header here: pass `apiKey` or `token`',
      );
    }
    headers[k.toLowerCase()] = String(v);
  }
  const proxy =
    options.proxy === undefined || options.proxy === false
      ? options.proxy
      : parseProxyUrl(options.proxy as string | URL, 'proxy');
  const ca = normalizeCa(options.ca);
  if (options.dispatcher !== undefined && (proxy !== undefined || ca !== undefined)) {
    throw new InvalidArgumentError(
      options.proxy !== undefined ? 'proxy' : 'ca',
      'Expected either `dispatcher` or `proxy`/`ca`: a dispatcher of your own brings its own proxy and CAs',
    );
  }
  // From now on every error the library makes masks this key, should a server echo it back.
  if (typeof apiKey === 'string') registerSecret(apiKey);
  return {
    baseUrl,
    token: options.token,
    apiKey: apiKey === '' ? undefined : apiKey,
    apiVersion,
    timeoutMs: optionalInteger(options.timeoutMs, 'timeoutMs', 1, 60_000),
    maxResponseBytes: maxResponseBytes(options.maxResponseBytes),
    connections:
      options.connections === undefined ? undefined : checkInteger(options.connections, 'connections', 1),
    headers,
    dispatcher: options.dispatcher,
    proxy,
    ca,
    logger: normalizeLogger(options.logger),
    retry: normalizeRetryOptions(options.retry),
    rateLimiter: options.rateLimit ? new RateLimiter(options.rateLimit) : undefined,
    compression: normalizeCompression(options.compression),
    telemetry: normalizeTelemetry(options.telemetry, baseUrl),
    loopBudget: normalizeLoopBudget(options.loopBudget),
  };
}
