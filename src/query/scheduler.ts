/**
 * The queue page requests wait in, as p-queue is meant to be used: each request (a page's first, a retry,
 * the rest of a short page) is one task, and the controller's limit is the queue's `concurrency`. A task
 * starts when fewer than the limit are out, and ends when its body has been read (or it failed): the next
 * request then leaves while this page is still being decoded. Waiters go by priority, then first come
 * first served (a page already in the window that needs another request goes before pages planned after
 * it). One scheduler serves many streams: every `concurrency: 'auto'` stream of a client shares the
 * client's, so many small queries together stay within what the service accepts.
 */
import PQueue from 'p-queue';
import { abortReason } from '../core/abortable.js';
import { eventLoopActiveMs } from '../core/event-loop.js';
import type { ConcurrencyController, Congestion, FirstPage } from './concurrency.js';
import type { LinkModel } from './link-model.js';

/** What `'concurrency'` listeners are told. */
export interface ConcurrencyChange {
  readonly limit: number;
  readonly previous: number;
  /** What made it change: a measurement, or the service's pushback. */
  readonly reason: 'measured' | Congestion;
}

/** One request's reports, from its send to the end of its body. */
export interface RequestHandle {
  /** Its response headers came (not a refusal), for `rows` rows. */
  answered(rows: number): void;
  /** Body bytes arrived. */
  delivered(bytes: number): void;
  /** The body has been read whole (`bytes`, decoded): the request's slot goes to the next one. */
  bodyRead(bytes: number): void;
  /** The service pushed back on it (a 429, a 503, a timeout). */
  congested(kind: Congestion): void;
}

/** Priority of a later request of a page already in the window: served before pages planned after it. */
export const PRIORITY_AGAIN = 1;

/** A request out: when it was sent, and the most requests out at once since (itself included). */
interface Flight {
  readonly sentAt: number;
  peak: number;
}

export class RequestScheduler {
  readonly #controller: ConcurrencyController;
  readonly #now: () => number;
  readonly #busyMs: () => number;
  readonly #queue: PQueue;
  /** Requests out now (p-queue's `pending` lags an end by a microtask or two). */
  #out = 0;
  /** The requests out now. */
  readonly #flights = new Set<Flight>();
  /** When the recent refusals came (those a request still out may have been refused beside). */
  #refusals: number[] = [];
  readonly #listeners = new Set<(change: ConcurrencyChange) => void>();
  /** `onRoom` listeners, also called when the limit rises. */
  readonly #rooms = new Set<() => void>();

  constructor(
    controller: ConcurrencyController,
    now: () => number = () => performance.now(),
    /** The event loop's busy ms so far (a running total): late answers the loop could not take. */
    busyMs: () => number = eventLoopActiveMs(),
  ) {
    this.#controller = controller;
    this.#now = now;
    this.#busyMs = busyMs;
    this.#queue = new PQueue({ concurrency: controller.limit });
  }

  /** Requests allowed out now. */
  get limit(): number {
    return this.#controller.limit;
  }

  /** Requests out now. */
  get active(): number {
    return this.#out;
  }

  /** Whether the service capped requests in flight (pages are then made to carry more). */
  get capped(): boolean {
    return this.#controller.capped;
  }

  /** What the requests have measured: page sizes are chosen from it. */
  get link(): LinkModel {
    return this.#controller.link;
  }

  /**
   * Whether a request sent now would go out at once: none waits, and fewer than the limit are out. A
   * page is planned only then, so that its size follows all that was measured before it left.
   */
  get room(): boolean {
    return this.#queue.size === 0 && this.#queue.pending < this.#queue.concurrency;
  }

  /** Calls `listener` whenever `room` may have become true; returns the function that removes it. */
  onRoom(listener: () => void): () => void {
    this.#queue.on('next', listener);
    this.#rooms.add(listener);
    return () => {
      this.#queue.off('next', listener);
      this.#rooms.delete(listener);
    };
  }

  /** Called with every change of `limit`; returns the function that removes the listener. */
  onChange(listener: (change: ConcurrencyChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Before any request: the query's own first page (it sizes the first wave). */
  firstPage(page: FirstPage): void {
    this.#observe(() => this.#controller.firstPage(page, this.#now()), 'measured');
  }

  /**
   * Sends one request when the limit allows: `send` gets the handle it reports on, and its result is
   * this call's. Its slot is free once it reports its body read, or once `send` settles. Rejects with the
   * signal's reason if aborted while waiting (once sent, `send` itself answers the signal).
   */
  request<T>(send: (handle: RequestHandle) => Promise<T>, signal?: AbortSignal, priority = 0): Promise<T> {
    if (signal?.aborted) return Promise.reject(abortReason(signal, 'The page request'));
    return new Promise<T>((resolve, reject) => {
      // p-queue is given a signal of its own, aborted only while the request waits: it would otherwise
      // race a running task against the signal and free the slot while the request is still out.
      const waiting = new AbortController();
      let sent = false;
      const onAbort = () => {
        if (!sent) waiting.abort(abortReason(signal!, 'The page request'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#queue
        .add(
          () =>
            new Promise<void>((free) => {
              sent = true;
              signal?.removeEventListener('abort', onAbort);
              const { handle, end } = this.#open(free);
              send(handle).then(resolve, reject).finally(end);
            }),
          { signal: waiting.signal, priority },
        )
        .catch(reject);
    });
  }

  #open(free: () => void): { handle: RequestHandle; end: () => void } {
    const controller = this.#controller;
    const flight: Flight = { sentAt: this.#now(), peak: ++this.#out };
    for (const other of this.#flights) other.peak = Math.max(other.peak, this.#out);
    this.#flights.add(flight);
    const seq = controller.sent(flight.sentAt, this.#busyMs());
    let over = false;
    let answered = false;
    const end = () => {
      if (over) return;
      over = true;
      this.#out--;
      this.#flights.delete(flight);
      controller.ended(seq, this.#now());
      free();
    };
    const handle: RequestHandle = {
      answered: (rows) => {
        // Once: a hedged request's second answer is no news of the link.
        if (over || answered) return;
        answered = true;
        const binding = this.#out >= controller.limit || this.#queue.size > 0;
        this.#observe(() => controller.answered(seq, rows, this.#now(), this.#busyMs(), binding), 'measured');
      },
      delivered: (bytes) => controller.delivered(bytes),
      bodyRead: (bytes) => {
        if (over) return;
        this.#observe(() => controller.read(seq, bytes, this.#now(), this.#busyMs()), 'measured');
        end();
      },
      congested: (kind) => {
        // Only a 429 counts requests; an overload (503, a timeout) cuts by a share.
        const level = kind === 'throttled' ? this.#level(flight) : flight.peak;
        this.#observe(() => controller.congested(kind, level, this.#now()), kind);
      },
    };
    return { handle, end };
  }

  /**
   * What a refusal of `flight` says was out when the service refused it: the most requests out at once
   * while it was, less those refused beside it (refused since it was sent: the service did not count them
   * as accepted). Requests go out on connections of their own, a new one a round trip later, so the
   * service may see them in any order: the first sent may be the one that arrived last (9 out, 5 refused:
   * the refusals say 9, 8, 7, 6, 5, so the service accepts 4, whichever five it refused).
   */
  #level(flight: Flight): number {
    const now = this.#now();
    const oldest = Math.min(now, ...[...this.#flights].map((f) => f.sentAt));
    this.#refusals = this.#refusals.filter((at) => at >= oldest);
    const beside = this.#refusals.filter((at) => at >= flight.sentAt).length;
    this.#refusals.push(now);
    return flight.peak - beside;
  }

  #observe(update: () => void, reason: ConcurrencyChange['reason']): void {
    const previous = this.#controller.limit;
    update();
    const limit = this.#controller.limit;
    if (limit === previous) return;
    // Fewer take effect as requests end; more start waiting requests at once.
    this.#queue.concurrency = Math.max(1, limit);
    for (const listener of this.#listeners) listener({ limit, previous, reason });
    if (limit > previous) for (const listener of this.#rooms) queueMicrotask(listener);
  }
}
