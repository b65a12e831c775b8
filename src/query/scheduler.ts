/**
 * The slots page requests wait for. One scheduler can serve many streams (every `concurrency: 'auto'`
 * stream of a client shares the client's), so many small queries together keep enough requests in flight
 * without exceeding what the service accepts.
 *
 * The slots are a p-queue: a permit is a queue task that runs until the permit is released, the adaptive
 * controller sets `concurrency`, and waiters are served by priority, then first come first served (a page
 * already in the window that needs another request goes before pages planned after it).
 */
import PQueue from 'p-queue';
import { abortReason } from '../core/abortable.js';
import type { ConcurrencyController, Congestion } from './concurrency.js';

/** What `'concurrency'` listeners are told. */
export interface ConcurrencyChange {
  readonly limit: number;
  readonly previous: number;
  /** What made it change: a measured round, or the service's pushback. */
  readonly reason: 'measured' | Congestion;
}

/** A slot held by one page request. */
export interface Permit {
  /** The request's page data arrived: `bytes` of it (the first call counts; later ones are ignored). */
  succeeded(bytes: number): void;
  /** The request was answered: its response headers came, and it was not refused. */
  answered(): void;
  /**
   * A request of this permit goes out now (the first, or a retry after a pause); call the function
   * returned once it has ended, answered or failed. How many requests were out with it is what a refusal
   * of it is judged by.
   */
  sending(): () => void;
  /**
   * As `sending()`, for a request sent again after the service pushed back: it waits until fewer requests
   * than the limit are on the wire (a page that held its slot through a `Retry-After` would otherwise
   * go out beside those the lowered limit let run, and be refused again).
   */
  resending(signal?: AbortSignal): Promise<() => void>;
  /** The service pushed back (429/503, a timeout); the request will be retried under this permit. */
  congested(kind: Congestion): void;
  /** Gives the slot back (always, in a `finally`). */
  release(): void;
}

/** Requests sent within this many ms of each other are one burst: the service may see them in any order. */
const BURST_MS = 2;

/** Requests sent together: when the first was, how many were on the wire after the last, how many refused. */
interface Burst {
  readonly at: number;
  count: number;
  refused: number;
}

/**
 * What a refusal of a request of `burst` says was on the wire when it arrived: the burst's count less
 * those of it refused before (8 sent together, 2 refused: the first says 8, the second 7, so the service
 * accepts 6, whichever of the 8 it refused).
 */
function refusedAt(burst: Burst | undefined, fallback: number): number {
  if (burst === undefined) return fallback;
  return burst.count - burst.refused++;
}

/** Priority of a request for a page already in the window (a later request of it): served first. */
export const PRIORITY_AGAIN = 1;

/** One caller waiting for room on the wire (`Permit.resending`). */
interface Queued<T> {
  resolve: (value: T) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

/**
 * Waits at the end of `queue` until `handOut` gives it a value; an abort leaves the queue and rejects.
 * (Room on the wire is not a pool of slots, which p-queue is: it is counted over every permit's sends,
 * so its waiters are kept here.)
 */
function waitIn<T>(queue: Queued<T>[], signal: AbortSignal | undefined): Promise<T> {
  if (signal?.aborted) return Promise.reject(abortReason(signal, 'The page request'));
  return new Promise<T>((resolve, reject) => {
    const entry: Queued<T> = {
      resolve,
      signal,
      onAbort: () => {
        const i = queue.indexOf(entry);
        if (i >= 0) queue.splice(i, 1);
        reject(abortReason(signal!, 'The page request'));
      },
    };
    signal?.addEventListener('abort', entry.onAbort, { once: true });
    queue.push(entry);
  });
}

/** Gives the first caller of a non-empty `queue` its value. */
function handOut<T>(queue: Queued<T>[], value: T): void {
  const entry = queue.shift()!;
  entry.signal?.removeEventListener('abort', entry.onAbort);
  entry.resolve(value);
}

export class RequestScheduler {
  readonly #controller: ConcurrencyController;
  readonly #now: () => number;
  /** Permits: each one is a task of this queue, running from its grant to its release. */
  readonly #slots: PQueue;
  /** Permits granted and not released (p-queue's `pending` lags a release by a microtask or two). */
  #active = 0;
  readonly #listeners = new Set<(change: ConcurrencyChange) => void>();
  /** Requests waiting for room on the wire (`Permit.resending`). */
  readonly #resenders: Queued<boolean>[] = [];
  /** Resenders woken but not yet sending. */
  #woken = 0;
  /**
   * Requests on the wire now: permits hold a slot while a page waits out a Retry-After too, but only
   * requests sent count for a service that caps requests in flight.
   */
  #sending = 0;
  /** The requests sent last together (`#burstOf`). */
  #burst: Burst | undefined;
  /** Raises the queue's concurrency step by step up to the limit while a jump is paced (`#follow`). */
  #ramp: NodeJS.Timeout | undefined;
  /** A permit was ever granted: `planned()` is for a scheduler's first result only, as `prime()` is. */
  #used = false;
  /**
   * `planned()`'s hold, until which the controller is not told of its `pages`: its timer, the limit when
   * it began (the first wave's requests) and how many of them have answered.
   */
  #hold: { timer: NodeJS.Timeout; pages: number; wave: number; answers: number } | undefined;

  constructor(controller: ConcurrencyController, now: () => number = () => performance.now()) {
    this.#controller = controller;
    this.#now = now;
    this.#slots = new PQueue({ concurrency: controller.limit });
  }

  /** Requests allowed in flight now. */
  get limit(): number {
    return this.#controller.limit;
  }

  /** Requests holding a slot now. */
  get active(): number {
    return this.#active;
  }

  /** Called with every change of `limit`; returns the function that removes the listener. */
  onChange(listener: (change: ConcurrencyChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * A consumer is waiting for a page still on its way: more requests in flight could help (when pages
   * wait for the consumer instead, they could not), which is what lets the controller grow the limit.
   */
  starved(): void {
    this.#controller.starved?.(this.#now());
  }

  /**
   * Before any request: tells the controller how quickly the service has answered so far (ms), and how
   * many requests the stream's byte budget holds.
   */
  prime(fastestAnswerMs: number | undefined, budget?: number): void {
    this.#observe(() => this.#controller.prime?.(fastestAnswerMs, budget), 'measured');
  }

  /**
   * Before any request, after `prime`: the rest of the result is `pages` pages, all within the byte
   * budget. The controller is told so (`planned`) only after `holdMs`, or once every request of the
   * first wave has answered: the requests its limit allows now go out first, and a service that caps
   * requests in flight below them refuses within a round trip or two, which ends startup, so the raise
   * never comes (sent at once, 9 of 16 were refused under a cap of 6 on the WAN bench's narrow rows,
   * and the read took 2.39 s instead of 1.97). Not one answer: the request on the connection already
   * open answers a round trip sooner than a refusal on a new one comes back.
   */
  planned(pages: number, holdMs: number): void {
    if (this.#used || this.#hold !== undefined) return;
    const timer = setTimeout(() => this.#endHold(), holdMs);
    timer.unref();
    this.#hold = { timer, pages, wave: this.#controller.limit, answers: 0 };
  }

  #endHold(): void {
    const hold = this.#hold;
    if (hold === undefined) return;
    clearTimeout(hold.timer);
    this.#hold = undefined;
    // A turn later: refusals the sockets already hold are read (I/O comes before immediates in a turn
    // of the loop), so a loop that stalled past the hold still hears of them before the raise.
    setImmediate(() => this.#observe(() => this.#controller.planned?.(hold.pages), 'measured'));
  }

  /**
   * Resolves with a slot once one is free (at once when there is room); rejects with the signal's reason if
   * aborted first. Higher `priority` waiters are served first.
   */
  acquire(signal?: AbortSignal, priority = 0): Promise<Permit> {
    if (signal?.aborted) return Promise.reject(abortReason(signal, 'The page request'));
    return new Promise<Permit>((resolve, reject) => {
      // The queue is given a signal of its own, aborted only while the permit waits: p-queue also races a
      // running task against its signal and frees the slot at once, which would free it under a permit
      // still held.
      const waiting = new AbortController();
      let granted = false;
      const onAbort = () => {
        if (!granted) waiting.abort(abortReason(signal!, 'The page request'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#slots
        .add(
          () =>
            new Promise<void>((release) => {
              granted = true;
              signal?.removeEventListener('abort', onAbort);
              resolve(this.#grant(release));
            }),
          { signal: waiting.signal, priority },
        )
        .catch(reject);
    });
  }

  #grant(free: () => void): Permit {
    this.#active++;
    this.#used = true;
    const seq = this.#controller.started(this.#now());
    let released = false;
    // Requests on the wire when this permit's latest one was sent, itself included. A 429 is judged by
    // it, not by the count when the refusal arrives: pages that ended in the meantime (a round trip,
    // or a page's whole body) would make that count too low, and the cut too deep.
    let level: Burst | undefined;
    let measured = false;
    let answered = false;
    const permit: Permit = {
      answered: () => {
        if (answered) return;
        answered = true;
        if (this.#hold !== undefined && ++this.#hold.answers >= this.#hold.wave) this.#endHold();
        this.#observe(() => this.#controller.answered?.(seq, this.#now()), 'measured');
      },
      succeeded: (bytes) => {
        // Once: the stream reports a page when its body has been read, the window when it has decoded it.
        if (measured) return;
        measured = true;
        this.#observe(() => this.#controller.succeeded(seq, bytes, this.#now()), 'measured');
      },
      sending: () => {
        level = this.#burstOf(++this.#sending);
        let ended = false;
        return () => {
          if (ended) return;
          ended = true;
          this.#sending--;
          this.#wakeResenders();
        };
      },
      resending: async (signal) => {
        if (await this.#room(signal)) this.#woken--;
        return permit.sending();
      },
      congested: (kind) =>
        this.#observe(
          () => this.#controller.congested(kind, refusedAt(level, this.#active), this.#now()),
          kind,
        ),
      release: () => {
        if (released) return;
        released = true;
        this.#active--;
        free();
      },
    };
    return permit;
  }

  /**
   * The level shared by the requests sent in one burst (within BURST_MS of its first): the service sees
   * them in any order (each on a connection of its own, new ones a round trip later), so the second
   * one sent may be the one refused for being the seventh to arrive; counted by its send order, a cap
   * of 6 made a ceiling of 1 (a 500k-row read under it took 17 s instead of 5).
   */
  #burstOf(sending: number): Burst {
    const now = this.#now();
    const burst = this.#burst;
    if (burst !== undefined && now - burst.at <= BURST_MS) {
      burst.count = Math.max(burst.count, sending);
      return burst;
    }
    this.#burst = { at: now, count: sending, refused: 0 };
    return this.#burst;
  }

  /**
   * Resolves once a request may go on the wire within the limit, first come first served: `true` when it
   * waited (it was woken, and counts in `#woken` until its `sending()`), `false` when there was room.
   */
  #room(signal: AbortSignal | undefined): Promise<boolean> {
    if (signal?.aborted) return Promise.reject(abortReason(signal, 'The page request'));
    if (this.#resenders.length === 0 && this.#sending + this.#woken < this.#controller.limit) {
      return Promise.resolve(false);
    }
    return waitIn(this.#resenders, signal);
  }

  #wakeResenders(): void {
    // A woken resender is on the wire a microtask later: `#woken` holds its place until then.
    while (this.#resenders.length > 0 && this.#sending + this.#woken < this.#controller.limit) {
      this.#woken++;
      handOut(this.#resenders, true);
    }
  }

  /**
   * Sets the queue's concurrency to `limit`: fewer slots take effect as held permits are released; more
   * start waiting permits at once, unless the controller paces a jump (`paceMs`): then one slot more
   * every `paceMs / jump` ms, each step up to the limit as it is then (a refusal meanwhile lowers it).
   */
  #follow(limit: number): void {
    const current = this.#slots.concurrency;
    // A ramp under way goes on to the limit as it is at each step.
    if (this.#ramp !== undefined && limit > current) return;
    this.#stopRamp();
    const pace = this.#controller.paceMs ?? 0;
    if (pace <= 0 || limit - current < 2) {
      this.#slots.concurrency = Math.max(1, limit);
      return;
    }
    this.#slots.concurrency = current + 1;
    this.#ramp = setInterval(
      () => {
        const target = this.#controller.limit;
        if (this.#slots.concurrency < target) this.#slots.concurrency += 1;
        if (this.#slots.concurrency >= target) this.#stopRamp();
      },
      Math.max(1, pace / (limit - current)),
    );
    this.#ramp.unref();
  }

  #stopRamp(): void {
    if (this.#ramp === undefined) return;
    clearInterval(this.#ramp);
    this.#ramp = undefined;
  }

  #observe(update: () => void, reason: ConcurrencyChange['reason']): void {
    const previous = this.#controller.limit;
    update();
    const limit = this.#controller.limit;
    if (limit !== previous) {
      this.#follow(limit);
      for (const listener of this.#listeners) listener({ limit, previous, reason });
      this.#wakeResenders();
    }
  }
}
