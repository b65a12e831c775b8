/**
 * A token bucket shared by every request of a client (polling and page fetches alike), so a user can stay
 * under a documented quota (e.g. 20 requests per minute) instead of being throttled by 429s.
 */
import { sleep } from '../core/abortable.js';
import { InvalidArgumentError } from '../core/errors.js';

export interface RateLimitOptions {
  /** Requests allowed per interval (also the burst size). */
  readonly requests: number;
  /** The interval, in ms. @default 60_000 */
  readonly intervalMs?: number;
}

export class RateLimiter {
  readonly #capacity: number;
  readonly #msPerToken: number;
  #tokens: number;
  #updatedAt = Date.now();
  /** Callers waiting, served in arrival order so no request starves. */
  #queue: Promise<void> = Promise.resolve();

  constructor(options: RateLimitOptions) {
    const { requests, intervalMs = 60_000 } = options;
    if (!Number.isInteger(requests) || requests < 1) {
      throw new InvalidArgumentError(
        'rateLimit.requests',
        `Expected an integer >= 1, got ${String(requests)}`,
      );
    }
    if (!Number.isInteger(intervalMs) || intervalMs < 1) {
      throw new InvalidArgumentError(
        'rateLimit.intervalMs',
        `Expected an integer >= 1, got ${String(intervalMs)}`,
      );
    }
    this.#capacity = requests;
    this.#tokens = requests;
    this.#msPerToken = intervalMs / requests;
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
      const now = Date.now();
      this.#tokens = Math.min(this.#capacity, this.#tokens + (now - this.#updatedAt) / this.#msPerToken);
      this.#updatedAt = now;
      if (this.#tokens >= 1) {
        this.#tokens -= 1;
        return;
      }
      await sleep(Math.ceil((1 - this.#tokens) * this.#msPerToken), signal);
    }
  }
}
