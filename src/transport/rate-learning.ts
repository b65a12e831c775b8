/**
 * Learning a service's per-minute rate limit from its 429s, for a client given no `rateLimit` of its own:
 * the send times of the last minute's requests, and the limiter made from them once a 429 shows the limit.
 */
import { RateLimiter } from './rate-limiter.js';

/** The window a learned rate limit counts requests in: "per minute", as services state their limits. */
const RATE_WINDOW_MS = 60_000;

export class RateLimitLearner {
  /** Send times of the requests sent in the last minute and not refused. */
  #admitted: number[] = [];
  #learned: RateLimiter | undefined;

  /** The limiter learned so far, if any: every request then takes a turn from it. */
  get limiter(): RateLimiter | undefined {
    return this.#learned;
  }

  /**
   * A request sent at `at`. Counted as admitted from the moment it is sent (until a 429 says otherwise):
   * requests still running when a 429 arrives count against the service's limit too.
   */
  admitted(at: number): void {
    const admitted = this.#admitted;
    admitted.push(at);
    // Pruned in batches: a shift per request would make a long run quadratic.
    if (admitted.length > 256 && at - admitted[0]! > RATE_WINDOW_MS) {
      this.#admitted = admitted.filter((t) => at - t < RATE_WINDOW_MS);
    }
  }

  /** The request sent at `at` was refused (429): it does not count as admitted. */
  refused(at: number): void {
    const i = this.#admitted.lastIndexOf(at);
    if (i >= 0) this.#admitted.splice(i, 1);
  }

  /**
   * A 429 that asks to wait 2 s or more, until about when our oldest request of the last minute leaves a
   * 60 s window, is a per-minute rate limit, not a cap on requests in flight (those clear as soon as a
   * request ends): from then on this client keeps to the rate the service accepted, the requests it let
   * through in the last 60 s per 60 s, counting those already sent, so it is not over the limit again.
   */
  learn(retryAfterMs: number | undefined): void {
    if (retryAfterMs === undefined || retryAfterMs < 2000) return;
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
}
