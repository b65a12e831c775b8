/**
 * One HTTP exchange with the service, the sending side: URL building, headers, credentials, timeouts,
 * abort, the rate limit, and the retried unit. The other concerns each have their module, as undici splits
 * api/handler/interceptor: reading bodies (body.ts), errors from statuses (status-errors.ts) and from
 * failures (failures.ts, connect-errors.ts), rate-limit learning (rate-learning.ts), what to ask in
 * `Accept-Encoding` (compression-policy.ts), credentials (credentials.ts). Everything above speaks in
 * paths and typed results.
 */
import { setImmediate } from 'node:timers/promises';
import { type Dispatcher, request } from 'undici';
import { AbortError, DqsError, type RequestInfo, TimeoutError } from '../core/errors.js';
import type { LoopBudget } from '../core/loop-budget.js';
import { redactSecrets } from '../core/redact.js';
import { VERSION } from '../core/version.js';
import { drain, readBounded, readText } from './body.js';
import { CompressionPolicy } from './compression-policy.js';
import { connectionError, isUntrustedCertificate } from './connect-errors.js';
import { inflateFetchedResponse, inflateResponse } from './content-encoding.js';
import { Credentials } from './credentials.js';
import { createDispatcher } from './dispatcher.js';
import type { HttpRequest, HttpResponse } from './exchange.js';
import { translateError } from './failures.js';
import { firstHeader } from './headers.js';
import type { NormalizedClientOptions } from './options.js';
import { type PeerCertificateInfo, peerCertificate } from './peer-certificate.js';
import { displayProxy, type ProxyChoice, proxyFor } from './proxy.js';
import { RateLimitLearner } from './rate-learning.js';
import { pacedRefusals, type RetryEvent, withRetry } from './retry.js';
import { parseRetryAfter } from './retry-after.js';
import { errorFromResponse } from './status-errors.js';
import { trustedCas } from './trust.js';

// The names other layers import from here (the transport's face): the exchange's types and the body
// readers the page fetcher and the client use.
export { asResponseTooLarge, bodyLimit, bodyText, discardBody, readBounded } from './body.js';
export type { HttpRequest, HttpResponse } from './exchange.js';
export { translateError } from './failures.js';

const USER_AGENT = `dqs-client/${VERSION} node/${process.versions.node}`;

export class HttpTransport {
  readonly #options: NormalizedClientOptions;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  /** The dispatcher hands bodies over inflated (see the constructor). */
  readonly #inflatesItself: boolean;
  /** The proxy requests to the service go through (as undici's agents decide it), for messages. */
  readonly #proxy: ProxyChoice | undefined;
  readonly #credentials: Credentials;
  readonly #compression: CompressionPolicy;
  /** The shortest time from sending a request to its response headers so far (ms). */
  #fastestAnswerMs = Number.POSITIVE_INFINITY;

  readonly #onRetry: (event: RetryEvent) => void;
  /** The logger's `debug`, masked; undefined without one, so a request formats nothing. */
  readonly #debug: ((line: string) => void) | undefined;
  /** Only without a `rateLimit` of the user's: the limit learned from the service's 429s. */
  readonly #rates: RateLimitLearner | undefined;

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
    this.#credentials = new Credentials(options.apiKey, options.token);
    this.#compression = new CompressionPolicy(options.compression, options.headers['accept-encoding']);
    this.#rates = options.rateLimiter ? undefined : new RateLimitLearner();
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.#dispatcher = options.dispatcher ?? createDispatcher(options);
    this.#proxy = options.dispatcher ? undefined : proxyFor(options.baseUrl, options.proxy, process.env);
    // An `undici` whose dispatchers cannot dispatch is not undici's HTTP client but one built on fetch
    // (Bun's), and fetch inflates bodies itself: their bytes decide then whether they still need it.
    this.#inflatesItself = typeof (this.#dispatcher as { dispatch?: unknown }).dispatch !== 'function';
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
    // Bun's `undici` (built on its fetch) gives agents without close(): nothing of ours to release there.
    if (this.#ownsDispatcher && typeof this.#dispatcher.close === 'function') await this.#dispatcher.close();
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
    const credential = await this.#credentials.current();
    let res = await this.#sendOnce(req, credential);
    if (res.status === 401 && this.#credentials.refreshable) {
      await drain(res);
      res = await this.#sendOnce(req, await this.#credentials.current(credential));
    }
    if (res.status >= 200 && res.status < 300) return res;
    if (res.status === 429) this.#rates?.learn(parseRetryAfter(firstHeader(res.headers, 'retry-after')));
    const err = await errorFromResponse(res);
    if (res.status === 429 && this.rateLimited) pacedRefusals.add(err);
    throw err;
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
    return (this.#options.rateLimiter ?? this.#rates?.limiter) !== undefined;
  }

  /** The rate limit learned from the service's 429s (`requests` per minute), if any. */
  get learnedRateLimit(): number | undefined {
    return this.#rates?.limiter?.requests;
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
    const limiter = this.#options.rateLimiter ?? this.#rates?.limiter;
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

    const acceptEncoding = this.#compression.acceptEncoding(req.bulk);
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
    this.#rates?.admitted(sentAt);
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
    if (res.statusCode === 429) this.#rates?.refused(sentAt);
    this.#debug?.(
      `${req.method} ${url.href} -> ${res.statusCode} in ${Math.round(performance.now() - sentAt)} ms`,
    );
    this.#fastestAnswerMs = Math.min(this.#fastestAnswerMs, performance.now() - sentAt);
    // Asked or not, a body with a Content-Encoding is inflated; one we cannot decode fails here, unread.
    let inflated: ReturnType<typeof inflateResponse>;
    const signal = controller.signal;
    try {
      const translate = (err: unknown) => translateError(err, info, signal);
      inflated = this.#inflatesItself
        ? await inflateFetchedResponse(res, req.method, info, acceptEncoding, translate)
        : inflateResponse(res, req.method, info, acceptEncoding, translate);
    } catch (err) {
      done();
      throw err;
    }
    const timing = this.#compression.bodyTiming(req.bulk, acceptEncoding, performance.now());
    return {
      status: res.statusCode,
      headers: res.headers,
      body: inflated.body,
      codings: inflated.codings,
      wireBytes: inflated.wireBytes,
      measured: timing ? timing.measured : () => {},
      info,
      done: timing
        ? () => {
            timing.end();
            done();
          }
        : done,
      streaming: () => clearTimeout(timer),
      signal,
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
    return this.#compression.measured;
  }

  /** Sends and reads the whole body as text (bounded by `maxResponseBytes`). */
  async text(req: HttpRequest): Promise<{ response: HttpResponse; text: string }> {
    const { response, body } = await this.#whole(req, readText);
    return { response, text: body };
  }

  /** Sends and reads the whole body as bytes (bounded by `maxResponseBytes`), for a caller that keeps them. */
  async bytes(
    req: HttpRequest,
  ): Promise<{ response: HttpResponse; bytes: Buffer; waitMs: number; bodyMs: number }> {
    const { response, body, waitMs, bodyMs } = await this.#whole(req, readBounded);
    return { response, bytes: body, waitMs, bodyMs };
  }

  /** `waitMs`: from sending the answered attempt to its response headers; `bodyMs`: then to its last byte. */
  #whole<T>(
    req: HttpRequest,
    read: (response: HttpResponse, maxBytes: number) => Promise<T>,
  ): Promise<{ response: HttpResponse; body: T; waitMs: number; bodyMs: number }> {
    // The body read is inside the retried unit: a body cut short is retried like a reset.
    return this.#retrying(req, async () => {
      const sentAt = performance.now();
      const response = await this.#sendChecked(req);
      const waitMs = performance.now() - sentAt;
      let body: T;
      try {
        body = await read(response, this.#options.maxResponseBytes);
      } finally {
        response.done();
      }
      const bodyMs = performance.now() - sentAt - waitMs;
      // undici frees a connection a turn after its body's last byte has been handed over: a request sent
      // at once (the query's first page right after its POST) would open a new connection, a round trip
      // (and a TLS handshake) more. One macrotask turn lets it reuse this one.
      await setImmediate();
      return { response, body, waitMs, bodyMs };
    });
  }

  get maxResponseBytes(): number {
    return this.#options.maxResponseBytes;
  }

  get loopBudget(): LoopBudget {
    return this.#options.loopBudget;
  }
}
