/**
 * A page's requests through the scheduler: its first at the priority of new pages, every later one (the
 * rest of a short page, a retry) before pages planned after it, since the consumer is nearer to it. Each
 * request is a task of its own (`RequestScheduler.request`): a page waiting out a `Retry-After` holds no
 * slot, and its retry waits its turn like any request, so it goes out only when the lowered limit allows.
 * Pages waiting out such a pause are counted for the window: each holds its place while the consumer
 * waits for it, and the window makes room for others beside it.
 */
import { RateLimitedError, ServerError, TimeoutError } from '../core/errors.js';
import type { RetryEvent } from '../transport/retry.js';
import type { Congestion } from './concurrency.js';
import { PRIORITY_AGAIN, type RequestHandle, type RequestScheduler } from './scheduler.js';

/** Pages of one stream waiting out a pause before a retry (each holds its place in the window). */
export interface Pauses {
  count: number;
}

/** What the service's pushback on a request says about the link, if anything. */
export function congestionOf(error: unknown): Congestion | undefined {
  if (error instanceof RateLimitedError) return 'throttled';
  if (error instanceof ServerError && error.status === 503) return 'unavailable';
  if (error instanceof TimeoutError) return 'timeout';
  return undefined;
}

export class PageRequests {
  readonly #scheduler: RequestScheduler;
  readonly #pauses: Pauses;
  readonly #onRetry: (event: RetryEvent) => void;
  #sent = 0;
  #paused = false;

  constructor(scheduler: RequestScheduler, pauses: Pauses, onRetry: (event: RetryEvent) => void) {
    this.#scheduler = scheduler;
    this.#pauses = pauses;
    this.#onRetry = onRetry;
  }

  /** Sends one request of the page when the scheduler lets it go; `send` reports on its handle. */
  run<T>(signal: AbortSignal, send: (handle: RequestHandle) => Promise<T>): Promise<T> {
    this.#resume();
    return this.#scheduler.request(send, signal, this.#sent++ === 0 ? 0 : PRIORITY_AGAIN);
  }

  /** A request of the page failed and will be retried after a pause. */
  retried(event: RetryEvent): void {
    this.#onRetry(event);
    if (!this.#paused) this.#pauses.count++;
    this.#paused = true;
  }

  /** The page is done (read or failed). */
  end(): void {
    this.#resume();
  }

  #resume(): void {
    if (this.#paused) this.#pauses.count--;
    this.#paused = false;
  }
}
