/**
 * One HTTP exchange with the service: URL building, headers, credentials, timeouts, abort, and turning
 * statuses and socket failures into typed errors. Everything above speaks in paths and typed results.
 */
import { constants as bufferConstants } from 'node:buffer';
import type { Readable } from 'node:stream';
import { type Dispatcher, request } from 'undici';
import {
  AbortError,
  AuthenticationError,
  BadRequestError,
  DqsError,
  ForbiddenError,
  HttpError,
  type HttpErrorDetails,
  InvalidArgumentError,
  NetworkError,
  NotAcceptableError,
  NotFoundError,
  NotServiceError,
  ProtocolError,
  RateLimitedError,
  type RequestInfo,
  ResponseTooLargeError,
  ServerError,
  TimeoutError,
} from '../core/errors.js';
import { redactSecrets, registerSecret } from '../core/redact.js';
import { VERSION } from '../core/version.js';
import { CompressionChoice } from './compression-choice.js';
import { connectionError, isUntrustedCertificate } from './connect-errors.js';
import { decodeBody, parseContentEncoding } from './content-encoding.js';
import { createDispatcher } from './dispatcher.js';
import type { NormalizedClientOptions } from './options.js';
import { type PeerCertificateInfo, peerCertificate } from './peer-certificate.js';
import { displayProxy, type ProxyChoice, proxyFor } from './proxy.js';
import { RateLimiter } from './rate-limiter.js';
import { type RetryEvent, withRetry } from './retry.js';
import { parseRetryAfter } from './retry-after.js';
import { trustedCas } from './trust.js';

export interface HttpRequest {
  readonly method: 'GET' | 'HEAD' | 'POST';
  /** Path segments, each encoded here: never concatenated raw. A trailing '' gives a trailing slash. */
  readonly segments: readonly string[];
  readonly query?: Readonly<Record<string, string | number | undefined>>;
  readonly accept: string;
  readonly json?: unknown;
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs?: number | undefined;
  /** `false` when the caller retries a larger unit itself (a page read including its body). */
  readonly retry?: boolean;
  /**
   * A result body, possibly large: with `compression: 'auto'`, whether to ask for compression is the
   * measured choice (see CompressionChoice), and the reader reports the page's timing through `measured()`.
   */
  readonly bulk?: boolean;
}

const { MAX_STRING_LENGTH } = bufferConstants;
/** A response whose headers arrived with an acceptable status; the body is still to be read. */
export interface HttpResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The body as the server encoded it before any `Content-Encoding`: already inflated. */
  readonly body: Readable;
  /** The codings undone to get `body` (`[]` when the body came as is). */
  readonly codings: readonly string[];
  /**
   * Bytes read off the socket so far, for a body read to `decoded` bytes: the compressed ones when
   * `codings` is not empty, else `decoded` itself (plain bodies are not counted twice).
   */
  readonly wireBytes: (decoded: number) => number;
  /**
   * For a `bulk` request: tells the compression choice that the body (`bytes` decoded) was read to its end,
   * timed from the response's headers.
   */
  readonly measured: (bytes: number) => void;
  readonly info: RequestInfo;
  /** Ends the request's timeout/abort wiring; call once the body is consumed or dropped. */
  readonly done: () => void;
  /**
   * For a body read as a stream of any length (`download()`): ends the whole-exchange timeout now, so only
   * undici's `bodyTimeout` (the longest silence between two chunks, = the request's timeout) still applies.
   */
  readonly streaming: () => void;
  /** The signal that aborts this exchange (the caller's, or the timeout). */
  readonly signal: AbortSignal;
  /**
   * The whole body, when it is already in memory (a page read before and served again): a reader may
   * take it as is instead of copying it from `body`.
   */
  readonly whole?: Buffer;
}

/** The window a learned rate limit counts requests in: "per minute", as services state their limits. */
const RATE_WINDOW_MS = 60_000;

const USER_AGENT = `dqs-client/${VERSION} node/${process.versions.node}`;

export class HttpTransport {
  readonly #options: NormalizedClientOptions;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  /** The proxy requests to the service go through (as undici's agents decide it), for messages. */
  readonly #proxy: ProxyChoice | undefined;
  #token: string | undefined;
  /** The `token` provider's call in progress, shared by every request that needs its answer. */
  #tokenCall: Promise<string> | undefined;
  /** Only in `compression: 'auto'`: the per-connection measurement behind each result page's request. */
  readonly #choice: CompressionChoice | undefined;
  /** The shortest time from sending a request to its response headers so far (ms). */
  #fastestAnswerMs = Number.POSITIVE_INFINITY;

  readonly #onRetry: (event: RetryEvent) => void;
  /** The logger's `debug`, masked; undefined without one, so a request formats nothing. */
  readonly #debug: ((line: string) => void) | undefined;
  /** Send times of the requests sent in the last minute and not refused (to learn a rate limit). */
  #admitted: number[] = [];
  #learned: RateLimiter | undefined;

  #noteAdmitted(at: number): void {
    const admitted = this.#admitted;
    admitted.push(at);
    // Pruned in batches: a shift per request would make a long run quadratic.
    if (admitted.length > 256 && at - admitted[0]! > RATE_WINDOW_MS) {
      this.#admitted = admitted.filter((t) => at - t < RATE_WINDOW_MS);
    }
  }

  #forgetAdmitted(at: number): void {
    const i = this.#admitted.lastIndexOf(at);
    if (i >= 0) this.#admitted.splice(i, 1);
  }

  constructor(options: NormalizedClientOptions, onRetry: (event: RetryEvent) => void = () => {}) {
    this.#options = options;
    const log = options.logger;
    this.#onRetry = log?.warn
      ? (event) => {
          log.warn!(
            redactSecrets(
              `dqs-client: ${event.what} failed (${event.error.code}); retry ${event.attempt} in ${Math.round(event.delayMs)} ms: ${event.error.message}`,
            ),
          );
          onRetry(event);
        }
      : onRetry;
    this.#debug = log?.debug ? (line) => log.debug!(redactSecrets(`dqs-client: ${line}`)) : undefined;
    this.#choice = options.compression.mode === 'auto' ? new CompressionChoice() : undefined;
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.#dispatcher = options.dispatcher ?? createDispatcher(options);
    this.#proxy = options.dispatcher ? undefined : proxyFor(options.baseUrl, options.proxy, process.env);
    if (this.#proxy) {
      log?.info?.(
        `dqs-client: requests to ${options.baseUrl.origin} go through the proxy ${displayProxy(this.#proxy.url)} (from ${this.#proxy.source})`,
      );
    }
  }

  get baseUrl(): URL {
    return this.#options.baseUrl;
  }

  /** The proxy the service is reached through, if any (credentials included: never print `url` whole). */
  get proxy(): ProxyChoice | undefined {
    return this.#proxy;
  }

  /** The `connections` option: undefined when the number follows the requests in flight. */
  get connections(): number | undefined {
    return this.#options.connections;
  }

  url(segments: readonly string[], query?: HttpRequest['query']): URL {
    const path = segments.map((s) => encodeURIComponent(s)).join('/');
    const url = new URL(path, this.#options.baseUrl);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    return url;
  }

  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  /**
   * The credential for the next request: the key, or the `token` provider's latest answer. `stale` is
   * the token a 401 came back for: the provider is asked again only if that is still the latest one,
   * and once for everyone (single flight): with 64 requests in flight when a token expires, their 64
   * 401s make one call, and they all wait for its answer.
   */
  async #credential(stale?: string): Promise<string | undefined> {
    const provider = this.#options.token;
    if (!provider) return this.#options.apiKey;
    if (this.#token !== undefined && this.#token !== stale) return this.#token;
    this.#tokenCall ??= this.#callProvider(provider).finally(() => {
      this.#tokenCall = undefined;
    });
    return this.#tokenCall;
  }

  async #callProvider(provider: () => string | Promise<string>): Promise<string> {
    try {
      const token: unknown = await provider();
      if (typeof token !== 'string' || !/^[\x20-\x7e]+$/.test(token)) {
        throw new Error(
          `it returned ${typeof token === 'string' ? 'a string that is not printable ASCII' : typeof token}`,
        );
      }
      registerSecret(token);
      this.#token = token;
      return token;
    } catch (cause) {
      throw new DqsError('DQS_AUTH', 'The `token` provider failed', { cause });
    }
  }

  /**
   * Sends the request and resolves once headers arrive with a 2xx status; any other status rejects
   * with a typed error (its small JSON body read for `message`). After a 401 with a `token` provider,
   * the provider is asked again and the request repeated once.
   */
  async send(req: HttpRequest): Promise<HttpResponse> {
    return this.#retrying(req, () => this.#sendChecked(req));
  }

  /** Runs `fn` under the client's retry policy unless the request opts out. */
  #retrying<T>(req: HttpRequest, fn: () => Promise<T>): Promise<T> {
    if (req.retry === false || this.#options.retry.retries === 0) return fn();
    const what = `${req.method} ${this.url(req.segments, req.query).href}`;
    return withRetry(fn, this.#options.retry, what, req.signal, this.#onRetry);
  }

  /** The retry policy, for callers that retry a larger unit of work themselves. */
  get retryPolicy() {
    return this.#options.retry;
  }

  /** Reports a retry done by a caller through the client's `'retry'` event. */
  reportRetry(event: RetryEvent): void {
    this.#onRetry(event);
  }

  async #sendChecked(req: HttpRequest): Promise<HttpResponse> {
    const credential = await this.#credential();
    let res = await this.#sendOnce(req, credential);
    if (res.status === 401 && this.#options.token) {
      await drain(res);
      res = await this.#sendOnce(req, await this.#credential(credential));
    }
    if (res.status >= 200 && res.status < 300) return res;
    if (res.status === 429) this.#learnRateLimit(parseRetryAfter(header(res, 'retry-after')));
    throw await errorFromResponse(res);
  }

  /**
   * A 429 that asks to wait 2 s or more, until about when our oldest request of the last minute leaves a
   * 60 s window, is a per-minute rate limit, not a cap on requests in flight (those clear as soon as a
   * request ends): from then on this client keeps to the rate the service accepted, the requests it let
   * through in the last 60 s per 60 s, counting those already sent, so it is not over the limit again.
   * Only when the user set no `rateLimit` of their own.
   */
  #learnRateLimit(retryAfterMs: number | undefined): void {
    if (this.#options.rateLimiter || retryAfterMs === undefined || retryAfterMs < 2000) return;
    const now = performance.now();
    const recent = this.#admitted.filter((t) => now - t < RATE_WINDOW_MS);
    // Only a per-minute window is learned, and only when the wait fits it: Retry-After is then the time
    // until our oldest request of the window leaves it (whole seconds, rounded up). A generic "come back
    // in 2 s" after a handful of requests is not a rate to keep to.
    const oldest = recent[0];
    const leaves = now + retryAfterMs - RATE_WINDOW_MS;
    if (oldest === undefined || oldest < leaves - 2000 || oldest > leaves + 1000) return;
    if (this.#learned && this.#learned.requests <= recent.length) return;
    // A second more than the window: our send times and the service's arrival times differ a little.
    this.#learned = new RateLimiter({
      requests: Math.max(1, recent.length),
      intervalMs: RATE_WINDOW_MS + 1000,
    });
    this.#learned.seed(recent);
  }

  /**
   * The shortest time from sending a request to its response headers seen so far, in ms (the round trip
   * plus the service's quickest answer; a new connection's handshake included if no request reused one),
   * or undefined before the first answer.
   */
  get fastestAnswerMs(): number | undefined {
    return Number.isFinite(this.#fastestAnswerMs) ? this.#fastestAnswerMs : undefined;
  }

  /** True when requests are metered: a `rateLimit` was set, or one was learned from the service's 429s. */
  get rateLimited(): boolean {
    return (this.#options.rateLimiter ?? this.#learned) !== undefined;
  }

  /** The rate limit learned from the service's 429s (`requests` per minute), if any. */
  get learnedRateLimit(): number | undefined {
    return this.#learned?.requests;
  }

  async #sendOnce(req: HttpRequest, credential: string | undefined): Promise<HttpResponse> {
    const url = this.url(req.segments, req.query);
    const info: RequestInfo = { method: req.method, url: url.href };
    const timeoutMs = req.timeoutMs ?? this.#options.timeoutMs;
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    // A caller's signal aborted with one of our errors (e.g. an overall TimeoutError) keeps that error.
    const reasonOf = (signal: AbortSignal) =>
      signal.reason instanceof DqsError
        ? signal.reason
        : new AbortError(`${req.method} ${url.href}`, { cause: signal.reason });
    const onAbort = () => controller.abort(reasonOf(req.signal!));
    const done = () => {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
    };
    if (req.signal?.aborted) {
      done();
      throw reasonOf(req.signal);
    }
    req.signal?.addEventListener('abort', onAbort, { once: true });
    const limiter = this.#options.rateLimiter ?? this.#learned;
    if (limiter) {
      try {
        await limiter.take(controller.signal);
      } catch (err) {
        done();
        throw translateError(err, info, controller.signal);
      }
    }
    // Only now: the per-request timeout is for the server, not for our own rate-limit queue.
    timer = setTimeout(
      () => controller.abort(new TimeoutError(`${req.method} ${url.href}`, timeoutMs)),
      timeoutMs,
    );

    const compression = this.#options.compression;
    // A page asks compressed or plain by measurement in 'auto'; JSON answers are small and always ask.
    const compress =
      compression.mode === 'never' ? false : req.bulk && this.#choice ? this.#choice.next() : true;
    const acceptEncoding =
      this.#options.headers['accept-encoding'] ?? (compress ? compression.acceptEncoding : 'identity');
    const headers: Record<string, string> = {
      ...this.#options.headers,
      'accept-encoding': acceptEncoding,
      accept: req.accept,
      'x-api-version': this.#options.apiVersion,
      'user-agent': USER_AGENT,
    };
    if (credential !== undefined) headers.authorization = `token ${credential}`;
    // The active span's context (`traceparent`), when OpenTelemetry is installed and on.
    this.#options.telemetry?.inject(headers);
    let payload: string | null = null;
    if (req.json !== undefined) {
      payload = JSON.stringify(req.json);
      headers['content-type'] = 'application/json';
    }
    const sentAt = performance.now();
    // Counted as admitted from the moment it is sent (until a 429 says otherwise): requests still running
    // when a 429 arrives count against the service's limit too.
    if (!this.#options.rateLimiter) this.#noteAdmitted(sentAt);
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        method: req.method,
        headers,
        body: payload,
        signal: controller.signal,
        dispatcher: this.#dispatcher,
        // Per request, so a call's own timeoutMs (and a caller's dispatcher) get them too.
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    } catch (err) {
      done();
      throw await this.#connectFailure(err, info, controller.signal);
    }
    if (res.statusCode === 429) this.#forgetAdmitted(sentAt);
    this.#debug?.(
      `${req.method} ${url.href} -> ${res.statusCode} in ${Math.round(performance.now() - sentAt)} ms`,
    );
    this.#fastestAnswerMs = Math.min(this.#fastestAnswerMs, performance.now() - sentAt);
    // Asked or not, a body with a Content-Encoding is inflated; one we cannot decode fails here, unread.
    let codings: string[] = [];
    const encoded = req.method !== 'HEAD' && res.statusCode !== 204 && res.statusCode !== 304;
    const rawEncoding = res.headers['content-encoding'];
    try {
      if (encoded) codings = parseContentEncoding(rawEncoding, info, acceptEncoding);
    } catch (err) {
      res.body.on('error', () => {});
      res.body.destroy();
      done();
      throw err;
    }
    let body: Readable = res.body;
    let wireBytes = (decoded: number) => decoded;
    if (codings.length > 0) {
      const signal = controller.signal;
      const decoded = decodeBody(res.body, codings, String(rawEncoding), info, (err) =>
        translateError(err, info, signal),
      );
      body = decoded.body;
      wireBytes = decoded.wireBytes;
    }
    const choice = req.bulk ? this.#choice : undefined;
    const headersAt = performance.now();
    const reading = choice?.bodyStarted(headersAt);
    return {
      status: res.statusCode,
      headers: res.headers,
      body,
      codings,
      wireBytes,
      measured:
        choice && reading
          ? (bytes) => {
              const now = performance.now();
              choice.record(acceptEncoding !== 'identity', bytes, now - headersAt, reading.sharing(now));
            }
          : () => {},
      info,
      done: reading
        ? () => {
            reading.end(performance.now());
            done();
          }
        : done,
      streaming: () => clearTimeout(timer),
      signal: controller.signal,
    };
  }

  /**
   * A failure before any answer: one of the connection faults a person can act on (DNS, refused, TLS,
   * proxy), else as `translateError`. For a certificate not trusted, its issuer is looked up (a second
   * handshake, verification still on) so the message can say whether a TLS-inspecting proxy made it.
   */
  async #connectFailure(err: unknown, info: RequestInfo, signal: AbortSignal): Promise<DqsError> {
    // Our own timeout firing while undici was still connecting: the connect's failure says more.
    const ours = signal.aborted && signal.reason instanceof TimeoutError;
    if (err instanceof DqsError || (signal.aborted && !ours)) return translateError(err, info, signal);
    let peer: PeerCertificateInfo | undefined;
    if (this.#ownsDispatcher && isUntrustedCertificate(err)) {
      const ca = this.#options.ca ? trustedCas(this.#options.ca) : undefined;
      peer = await peerCertificate(new URL(info.url), { proxy: this.#proxy?.url, ca, timeoutMs: 5000 }).catch(
        () => undefined,
      );
    }
    return connectionError(err, info, this.#proxy, peer) ?? translateError(err, info, signal);
  }

  /** What `compression: 'auto'` measured on this client's connection so far, in ms per decoded MB. */
  get compressionMeasured(): { readonly compressed?: number; readonly plain?: number } | undefined {
    return this.#choice?.measured;
  }

  /** Sends and reads the whole body as text (bounded by `maxResponseBytes`). */
  async text(req: HttpRequest): Promise<{ response: HttpResponse; text: string }> {
    const { response, body } = await this.#whole(req, readText);
    return { response, text: body };
  }

  /** Sends and reads the whole body as bytes (bounded by `maxResponseBytes`), for a caller that keeps them. */
  async bytes(req: HttpRequest): Promise<{ response: HttpResponse; bytes: Buffer }> {
    const { response, body } = await this.#whole(req, readBounded);
    return { response, bytes: body };
  }

  #whole<T>(
    req: HttpRequest,
    read: (response: HttpResponse, maxBytes: number) => Promise<T>,
  ): Promise<{ response: HttpResponse; body: T }> {
    // The body read is inside the retried unit: a body cut short is retried like a reset.
    return this.#retrying(req, async () => {
      const response = await this.#sendChecked(req);
      try {
        return { response, body: await read(response, this.#options.maxResponseBytes) };
      } finally {
        response.done();
      }
    });
  }

  get maxResponseBytes(): number {
    return this.#options.maxResponseBytes;
  }
}

/**
 * Drops a body we no longer need. undici reports a destroyed unread body as an 'error' event; nobody is
 * listening for it any more, so it is swallowed here instead of surfacing as an uncaught exception.
 */
export function discardBody(response: HttpResponse): void {
  if (response.body.destroyed) return;
  response.body.on('error', () => {});
  response.body.destroy();
}

/**
 * A body as UTF-8 text. V8 cannot make a string past `MAX_STRING_LENGTH` characters and throws a plain
 * `Error` (`ERR_STRING_TOO_LONG`); that is a body too large to read as text, a `ResponseTooLargeError`.
 */
export function bodyText(body: Buffer, info: RequestInfo): string {
  try {
    return body.toString('utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_STRING_TOO_LONG') throw err;
    throw new ResponseTooLargeError(info, MAX_STRING_LENGTH, undefined, { cause: err });
  }
}

/** Inflated bytes past which a body may inflate at most this many times its wire size. */
const BOMB_FLOOR = 32 * 1024 * 1024;
/** Real result pages inflate 7-15x (gzip, brotli); 200x past 32 MiB is a compression bomb, not data. */
const BOMB_RATIO = 200;

/**
 * Counts a body's decoded bytes as they are read: throws a ResponseTooLargeError the moment they pass
 * `maxBytes`, or once a compressed body inflates more than 200-fold past 32 MiB (a gzip bomb would
 * otherwise fill memory up to `maxBytes` before failing). A body declared larger than `maxBytes` (without
 * compression, where the declared length is the decoded one) fails before any byte is read.
 */
export function bodyLimit(response: HttpResponse, maxBytes: number): (chunkBytes: number) => number {
  const tooLarge = () => {
    discardBody(response);
    return new ResponseTooLargeError(response.info, maxBytes);
  };
  if (response.codings.length === 0 && Number(response.headers['content-length']) > maxBytes)
    throw tooLarge();
  let size = 0;
  return (chunkBytes) => {
    size += chunkBytes;
    if (size > maxBytes) throw tooLarge();
    if (size > BOMB_FLOOR && response.codings.length > 0 && size > BOMB_RATIO * response.wireBytes(size)) {
      discardBody(response);
      throw new ResponseTooLargeError(
        response.info,
        maxBytes,
        `its ${response.codings.join(', ')} body inflates more than ${BOMB_RATIO}-fold (${size} bytes from ${response.wireBytes(size)}): refused as a compression bomb`,
      );
    }
    return size;
  };
}

/** Reads a body into one Buffer, failing fast past `maxBytes` (decoded) instead of growing without bound. */
export async function readBounded(response: HttpResponse, maxBytes: number): Promise<Buffer> {
  return (await readWhole(response, maxBytes, false)).bytes;
}

/**
 * Reads a body as UTF-8 text, bounded like `readBounded`. A large body's bytes are freed as soon as the
 * text is made, not at some later GC, so the caller's `JSON.parse` holds the text and what it parses but
 * never the bytes beside them: a body at the limit peaks near 2x its size (it was 4x).
 */
export async function readText(response: HttpResponse, maxBytes: number): Promise<string> {
  const body = await readWhole(response, maxBytes, true);
  try {
    return bodyText(body.bytes, response.info);
  } finally {
    body.release();
  }
}

/**
 * Bodies up to this size are kept as their chunks and joined at the end: quick, and small next to the
 * limit. A larger one is copied as it comes into one buffer, so no chunk list and its concatenation are
 * ever alive together.
 */
const SMALL_BODY = 1024 * 1024;

/** Where a large body's chunks are copied as they come. */
interface BodySink {
  write(chunk: Buffer, at: number): void;
  /** The first `size` bytes written. */
  bytes(size: number): Buffer;
  /** Frees the memory now if the sink can (its `bytes` then read as empty); else leaves it to the GC. */
  release(): void;
}

/** One buffer of the body's declared length. */
function exactSink(length: number): BodySink {
  const buffer = Buffer.allocUnsafeSlow(length);
  return {
    write: (chunk, at) => void chunk.copy(buffer, at),
    bytes: (size) => buffer.subarray(0, size),
    release: () => {},
  };
}

/** ES2024's resizable ArrayBuffer (in V8 since Node 20), typed here because the project's lib is ES2023. */
interface ResizableArrayBuffer extends ArrayBuffer {
  readonly maxByteLength: number;
  resize(byteLength: number): void;
}
const ResizableArrayBuffer = ArrayBuffer as unknown as new (
  byteLength: number,
  options: { maxByteLength: number },
) => ResizableArrayBuffer;

/**
 * A resizable ArrayBuffer: address space reserved up to the declared length (or `maxBytes`), pages taken
 * as the body grows (in place: never copied to grow), and given back to the system the moment it is
 * shrunk to nothing, where a dropped Buffer's memory waits for a full GC (measured: the whole body was
 * still resident while `JSON.parse` made its result).
 */
function releasableSink(declared: number | undefined, maxBytes: number): BodySink {
  const store = new ResizableArrayBuffer(declared ?? 0, { maxByteLength: declared ?? maxBytes });
  const view = new Uint8Array(store); // tracks the store's length
  return {
    write(chunk, at) {
      const end = at + chunk.length;
      if (end > store.byteLength) {
        store.resize(Math.min(store.maxByteLength, Math.max(end, 2 * store.byteLength)));
      }
      view.set(chunk, at);
    },
    bytes: (size) => Buffer.from(store, 0, size),
    release: () => store.resize(0),
  };
}

interface WholeBody {
  readonly bytes: Buffer;
  readonly release: () => void;
}

/**
 * A plain body's declared length: the number of bytes it must have. Undefined when the body is inflated
 * (the header then gives the wire's length, not the decoded one) or the header is not one plain integer.
 */
function declaredLength(response: HttpResponse): number | undefined {
  const value = response.headers['content-length'];
  if (response.codings.length > 0 || typeof value !== 'string' || !/^\d{1,15}$/.test(value)) return undefined;
  return Number(value);
}

/**
 * Reads a whole body, bounded by `bodyLimit` and held to its Content-Length: longer than declared is a
 * ProtocolError, shorter a NetworkError (a cut, retried as one). Small bodies are joined from their chunks
 * (one chunk is used as is), a large one is copied into a sink: with `releasable` (the body is only read
 * to be made text), a resizable buffer that `release()` gives back at once; else one exact buffer when
 * the length is declared (an undeclared one is still joined from its chunks).
 */
async function readWhole(response: HttpResponse, maxBytes: number, releasable: boolean): Promise<WholeBody> {
  const count = bodyLimit(response, maxBytes);
  const declared = declaredLength(response);
  let chunks: Buffer[] = [];
  let sink: BodySink | undefined;
  let size = 0;
  try {
    for await (const data of response.body) {
      const chunk = data as Buffer;
      const end = size + chunk.length;
      // HTTP/1.1 ends a body at its Content-Length, but a dispatcher (a proxy, an interceptor) may not.
      if (declared !== undefined && end > declared) {
        throw new ProtocolError(
          `the body is longer than its Content-Length of ${declared} bytes`,
          response.info,
        );
      }
      count(chunk.length);
      if (sink === undefined && end !== declared && (declared ?? (releasable ? end : 0)) > SMALL_BODY) {
        sink = releasable ? releasableSink(declared, maxBytes) : exactSink(declared!);
        let at = 0;
        for (const c of chunks) {
          sink.write(c, at);
          at += c.length;
        }
        chunks = [];
      }
      if (sink) sink.write(chunk, size);
      else chunks.push(chunk);
      size = end;
    }
    if (declared !== undefined && size < declared) {
      throw new NetworkError(response.info, `the body ended after ${size} of its ${declared} declared bytes`);
    }
  } catch (err) {
    sink?.release();
    throw translateError(err, response.info, response.signal);
  }
  if (sink) return { bytes: sink.bytes(size), release: () => sink.release() };
  return { bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), release: () => {} };
}

async function drain(res: HttpResponse): Promise<void> {
  try {
    // undici's own body can be dumped (keeping the connection); an inflating one is just dropped.
    const dump = (res.body as Partial<Dispatcher.ResponseData['body']>).dump;
    if (typeof dump === 'function') await dump.call(res.body);
    else discardBody(res);
  } catch {
    // a body we are discarding may fail; nothing depends on it
  } finally {
    res.done();
  }
}

/** Maps undici/socket/abort failures onto our error classes. */
export function translateError(err: unknown, info: RequestInfo, signal: AbortSignal): DqsError {
  if (err instanceof DqsError) return err;
  if (signal.aborted && signal.reason instanceof DqsError) return signal.reason;
  const code = (err as { code?: string } | null)?.code;
  const message = (err as Error | null)?.message ?? String(err);
  // undici refused to send (e.g. a header value it cannot encode): no retry can change that.
  if (code === 'UND_ERR_INVALID_ARG') {
    return new InvalidArgumentError('request', `undici refused ${info.method} ${info.url}: ${message}`);
  }
  if (
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT'
  ) {
    return new TimeoutError(`${info.method} ${info.url}`, 0, { cause: err });
  }
  return new NetworkError(info, code ? `${code}: ${message}` : message, { cause: err });
}

/** A Location for a message: resolved, credentials and query dropped, capped; never echoed raw. */
function redactUrl(location: string, base: string): string {
  try {
    const url = new URL(location, base);
    return `${url.protocol}//${url.host}${url.pathname}`.slice(0, 200);
  } catch {
    return '(an invalid URL)';
  }
}

function header(res: HttpResponse, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Reads (at most 64 KiB of) an error body for its `message`, then builds the typed error. */
export async function errorFromResponse(res: HttpResponse): Promise<HttpError | NotServiceError> {
  let serverMessage: string | undefined;
  let bodyText = '';
  try {
    const buf = await readBounded(res, 64 * 1024);
    const text = buf.toString('utf8');
    bodyText = text;
    try {
      const parsed = JSON.parse(text) as { message?: unknown };
      if (typeof parsed?.message === 'string') serverMessage = parsed.message;
    } catch {
      if (text.trim()) serverMessage = text.trim().slice(0, 200);
    }
  } catch {
    // the status alone still says what happened
  } finally {
    res.done();
  }
  const details: HttpErrorDetails = {
    status: res.status,
    method: res.info.method,
    url: res.info.url,
    serverMessage,
  };
  const retryAfterMs = parseRetryAfter(header(res, 'retry-after'));
  // The service answers errors in JSON; an HTML 404 (or 200, 400...) is a web site or a portal at the
  // base URL. A gateway's HTML 5xx or 429 page and a 401/403 are still what their status says.
  const statusSaysIt = res.status >= 500 || res.status === 429 || res.status === 401 || res.status === 403;
  if (!statusSaysIt && isHtml(header(res, 'content-type'), bodyText)) {
    return new NotServiceError(res.info, `${res.status} with an HTML page`, res.status);
  }
  switch (true) {
    case res.status === 401:
      return new AuthenticationError(details);
    case res.status === 403:
      return new ForbiddenError(details);
    case res.status === 404:
      return new NotFoundError(details);
    case res.status === 406:
      return new NotAcceptableError(details);
    case res.status === 429:
      return new RateLimitedError({ ...details, retryAfterMs });
    case res.status >= 500:
      return new ServerError({ ...details, retryAfterMs });
    case res.status === 400 || res.status === 413 || res.status === 422:
      return new BadRequestError(details);
    case res.status >= 300 && res.status < 400: {
      // undici's request() follows no redirect, so the key never reaches the Location's host.
      const location = header(res, 'location');
      return new HttpError(
        'DQS_HTTP',
        details,
        `redirect${location ? ` to ${redactUrl(location, res.info.url)}` : ''} not followed: the API key is only sent to baseUrl; point baseUrl at the final address`,
      );
    }
    default:
      return new HttpError('DQS_HTTP', details);
  }
}

/** Whether a body is an HTML page (by its type, or by how it starts when the type is missing or wrong). */
export function isHtml(contentType: string | undefined, text: string): boolean {
  if (contentType !== undefined && /^\s*text\/html\b/i.test(contentType)) return true;
  return /^\s*<(!doctype html|html|head|body)\b/i.test(text.slice(0, 200));
}
