/**
 * Runs tasks taken lazily from a source and hands their results back strictly in the order they were
 * taken, with a bounded window: tasks started but not yet taken by `next()` are at most `maxPages()`, and
 * the results held plus those in flight (counted at the average size seen so far) stay under `maxBytes`.
 * A consumer that stops calling `next()` therefore stops new requests from starting, however fast the
 * network is: that is the stream's backpressure, reaching all the way to the network. Nothing is planned
 * ahead of the window, so memory is O(window) whatever the number of tasks. The source may also answer
 * "not now" (`null`: the scheduler has no room for another request), and `wake` calls the window back
 * when that may have changed: pages are planned when they can be sent, not before.
 */
import { setMaxListeners } from 'node:events';

export interface OrderedWindowOptions<T> {
  /** Tasks started but not yet taken, at most (read at each fill: it may follow the concurrency). */
  readonly maxPages: () => number;
  /** Bytes of results held and expected in flight, at most (one task always runs, whatever its size). */
  readonly maxBytes: number;
  /** A result's size, as counted against `maxBytes`. */
  readonly sizeOf: (value: T) => number;
  /** The size a result is expected to have before any has finished (unset: none counted until then). */
  readonly expectedSize?: () => number | undefined;
  /** Registers a call for when the source may answer again after `null`; returns its removal. */
  readonly wake?: (fill: () => void) => () => void;
}

interface Slot<T> {
  readonly promise: Promise<T>;
  /** Set once the task has finished: its size, still held until taken. */
  size: number | undefined;
}

/** A task: runs with the window's signal. */
export type WindowTask<T> = (signal: AbortSignal) => Promise<T>;

/**
 * The source's answer: a task, `undefined` once there are no more, or `null` for none now (ask again at
 * the next fill: the tasks already started may take what is left).
 */
export type NextTask<T> = WindowTask<T> | undefined | null;

export class OrderedWindow<T> {
  readonly #source: () => NextTask<T>;
  readonly #options: OrderedWindowOptions<T>;
  readonly #slots: Slot<T>[] = [];
  readonly #abort = new AbortController();
  readonly #unwake: () => void;
  /** `next()` waiting for the source, which said "not now" with no task running. */
  #woken: (() => void) | undefined;
  #exhausted = false;
  #started = 0;
  #heldBytes = 0;
  #finished = 0;
  #finishedBytes = 0;

  constructor(source: () => NextTask<T>, options: OrderedWindowOptions<T>) {
    this.#source = source;
    this.#options = options;
    // Each running task listens on this signal (the scheduler, the request, a retry pause): more than
    // Node's default of 10, which would warn of a leak that is not one.
    setMaxListeners(0, this.#abort.signal);
    this.#unwake =
      options.wake?.(() => {
        this.#fill();
        const woken = this.#woken;
        this.#woken = undefined;
        woken?.();
      }) ?? (() => {});
  }

  /** How many tasks have been started (for tests and progress). */
  get started(): number {
    return this.#started;
  }

  /** Bytes of finished results not yet taken. */
  get heldBytes(): number {
    return this.#heldBytes;
  }

  #average(): number {
    if (this.#finished > 0) return this.#finishedBytes / this.#finished;
    return this.#options.expectedSize?.() ?? 0;
  }

  #fill(): void {
    const signal = this.#abort.signal;
    while (
      !this.#exhausted &&
      !signal.aborted &&
      this.#slots.length < Math.max(1, this.#options.maxPages())
    ) {
      if (this.#slots.length > 0) {
        const inFlight = this.#slots.filter((s) => s.size === undefined).length;
        if (this.#heldBytes + (inFlight + 1) * this.#average() > this.#options.maxBytes) return;
      }
      const task = this.#source();
      if (task === null) return;
      if (task === undefined) {
        this.#exhausted = true;
        return;
      }
      this.#started++;
      const slot: Slot<T> = { promise: undefined as unknown as Promise<T>, size: undefined };
      const promise = task(signal).then((value) => {
        if (!signal.aborted) {
          slot.size = this.#options.sizeOf(value);
          this.#heldBytes += slot.size;
          this.#finished++;
          this.#finishedBytes += slot.size;
          queueMicrotask(() => this.#fill());
        }
        return value;
      });
      // The rejection is observed when `next()` reaches this task; until then it must not count as unhandled.
      promise.catch(() => {});
      (slot as { promise: Promise<T> }).promise = promise;
      this.#slots.push(slot);
    }
  }

  /** The next result in order; `done` after the last. Rejects with the first failure in order. */
  async next(): Promise<IteratorResult<T, undefined>> {
    this.#fill();
    let slot = this.#slots[0];
    while (!slot) {
      if (this.#abort.signal.aborted) throw this.#abort.signal.reason ?? new Error('OrderedWindow cancelled');
      if (this.#exhausted) return { done: true, value: undefined };
      // The source said "not now" and nothing runs: wait until it may say more (or the window is cancelled).
      const signal = this.#abort.signal;
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener('abort', done);
          resolve();
        };
        this.#woken = done;
        signal.addEventListener('abort', done, { once: true });
      });
      this.#fill();
      slot = this.#slots[0];
    }
    try {
      const value = await slot.promise;
      return { done: false, value };
    } finally {
      this.#slots.shift();
      if (slot.size !== undefined) this.#heldBytes -= slot.size;
    }
  }

  /** Aborts every waiting and running task and starts no new one. */
  cancel(reason?: unknown): void {
    if (this.#abort.signal.aborted) return;
    this.#unwake();
    this.#abort.abort(reason);
  }
}
