/**
 * A client-side quota shared by every request of a client (polling and page fetches alike), so a user can
 * stay under a documented limit (e.g. 20 requests per minute) instead of being throttled by 429s.
 *
 * A sliding window, not a token bucket: a bucket of `requests` tokens refilled at `requests / intervalMs`
 * lets up to 2 × `requests` through in the first interval (the full bucket, then the refill), which is
 * exactly what a service counting "20 per minute" answers with 429. Here at most `requests` requests
 * start in any `intervalMs` span.
 */
import { channel } from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import { sleep } from '../core/abortable.js';
import { checkInteger, checkKeys, checkObject, optionKeys } from '../core/validate.js';

export interface RateLimitOptions {
  /** Requests allowed in any span of `intervalMs` (also the burst size). */
  readonly requests: number;
  /** The interval, in ms. @default 60_000 */
  readonly intervalMs?: number;
}

/**
 * Each admission's time (`performance.now()`), published only while someone subscribes: what the limiter
 * bounds, for tests (undici's request:create comes a few ms later, not always the same few).
 */
const admitted = channel('dqs-client:rate-limit:admit');

const RATE_LIMIT_KEYS = optionKeys<RateLimitOptions>({ requests: true, intervalMs: true });

export class RateLimiter {
  readonly #requests: number;
  readonly #intervalMs: number;
  /** Start times (performance.now()) of the requests in the current window, oldest first. */
  readonly #sent: number[] = [];
  /** Callers waiting, served in arrival order so no request starves. */
  #queue: Promise<void> = Promise.resolve();

  constructor(options: RateLimitOptions) {
    checkKeys(
      checkObject(options, 'rateLimit', '{ requests, intervalMs }'),
      RATE_LIMIT_KEYS,
      '`rateLimit` options',
      'rateLimit.',
    );
    const { requests, intervalMs = 60_000 } = options;
    this.#requests = checkInteger(requests, 'rateLimit.requests', 1);
    this.#intervalMs = checkInteger(intervalMs, 'rateLimit.intervalMs', 1);
  }

  /** The requests allowed per interval. */
  get requests(): number {
    return this.#requests;
  }

  /** Counts requests already sent (their `performance.now()` times, oldest first) in the window. */
  seed(times: readonly number[]): void {
    this.#sent.push(...times.slice(-this.#requests));
  }

  /** Resolves when a request may be sent; rejects if `signal` aborts while waiting. */
  take(signal?: AbortSignal): Promise<void> {
    const turn = this.#queue.then(() => this.#takeOne(signal));
    // A waiter that was aborted must not block the ones behind it.
    this.#queue = turn.catch(() => {});
    return turn;
  }

  async #takeOne(signal?: AbortSignal): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      const now = performance.now();
      while (this.#sent.length > 0 && now - this.#sent[0]! >= this.#intervalMs) this.#sent.shift();
      if (this.#sent.length < this.#requests) {
        this.#sent.push(now);
        if (admitted.hasSubscribers) admitted.publish({ at: now });
        return;
      }
      // +1: timers may fire a fraction of a ms early against performance.now().
      await sleep(Math.ceil(this.#sent[0]! + this.#intervalMs - now) + 1, signal);
    }
  }
}
