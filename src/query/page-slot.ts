/**
 * A page's hold on the network: the scheduler's permit for its requests, from the first request until its
 * body has been read. One object per page, told by the page fetcher what happens to the page's requests
 * (sent, body read, retried, ended); it decides when the slot is taken, given back and taken again.
 *
 * - The slot goes back as soon as a body has been read, before the page is decoded, so the next request
 *   leaves while this one decodes (and the controller measures the link, not our CPU).
 * - A page that needs another request (a server that answered short, a retry after the body was read)
 *   takes a slot again for it.
 * - A page the service pushed back on (429, 503, a timeout) keeps its slot through the pause, and its next
 *   request waits for room on the wire (`Permit.resending`): it would otherwise go out beside those the
 *   lowered limit let run, and be refused again.
 */
import { RateLimitedError, ServerError, TimeoutError } from '../core/errors.js';
import type { RetryEvent } from '../transport/retry.js';
import type { Congestion } from './concurrency.js';
import { type Permit, PRIORITY_AGAIN, type RequestScheduler } from './scheduler.js';

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

export class PageSlot {
  readonly #scheduler: RequestScheduler | undefined;
  /** The permit the window acquired for this page (it releases that one itself). */
  readonly #permit: Permit | undefined;
  readonly #pauses: Pauses;
  readonly #onRetry: (event: RetryEvent) => void;
  /** The permit held now: the window's, one taken again for a later request, or none. */
  #held: Permit | undefined;
  /** The service pushed back on this page: its next request waits for room on the wire. */
  #refused = false;
  #paused = false;

  /**
   * `permit` unset: the page needs no network slot (a page already in hand); its retries are still told.
   */
  constructor(
    scheduler: RequestScheduler | undefined,
    permit: Permit | undefined,
    pauses: Pauses,
    onRetry: (event: RetryEvent) => void,
  ) {
    this.#scheduler = scheduler;
    this.#permit = permit;
    this.#held = permit;
    this.#pauses = pauses;
    this.#onRetry = onRetry;
  }

  /** A request of the page goes out now; call the function returned once it has ended. */
  async send(signal: AbortSignal): Promise<() => void> {
    this.#resume();
    if (this.#permit === undefined || this.#scheduler === undefined) return () => {};
    // A later request of a page the consumer is nearer to than any page planned after it: served first.
    this.#held ??= await this.#scheduler.acquire(signal, PRIORITY_AGAIN);
    if (!this.#refused) return this.#held.sending();
    this.#refused = false;
    return this.#held.resending(signal);
  }

  /** A request's response headers came (not a refusal): the service took it. */
  answered(): void {
    this.#held?.answered();
  }

  /** A request's body has been read whole (`bytes`, decoded): the slot goes to the next request. */
  bodyRead(bytes: number): void {
    this.#held?.succeeded(bytes);
    this.#held?.release();
    this.#held = undefined;
  }

  /** A request of the page failed and will be retried after a pause. */
  retried(event: RetryEvent): void {
    this.#onRetry(event);
    if (!this.#paused) this.#pauses.count++;
    this.#paused = true;
    const kind = congestionOf(event.error);
    if (kind) {
      this.#refused = true;
      (this.#held ?? this.#permit)?.congested(kind);
    }
  }

  /** The page is done (read or failed): a permit taken again for a later request goes back. */
  end(): void {
    this.#resume();
    if (this.#held !== this.#permit) this.#held?.release();
    this.#held = undefined;
  }

  #resume(): void {
    if (this.#paused) this.#pauses.count--;
    this.#paused = false;
  }
}
