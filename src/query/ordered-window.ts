/**
 * Runs tasks taken lazily from a source, each when the scheduler gives it a slot, and hands their results
 * back strictly in the order they were taken, with a bounded window: tasks started but not yet taken by
 * `next()` are at most `maxPages()`, and the results held plus those in flight (counted at the average
 * size seen so far) stay under `maxBytes`. A consumer that stops calling `next()` therefore stops new
 * requests from starting, however fast the network is: that is the stream's backpressure, reaching all
 * the way to the network. Nothing is planned ahead of the window, so memory is O(window) whatever the
 * number of tasks.
 */
import { setMaxListeners } from 'node:events';
import type { Permit, RequestScheduler } from './scheduler.js';

export interface OrderedWindowOptions<T> {
  readonly scheduler: RequestScheduler;
  /** Tasks started but not yet taken, at most (read at each fill: it may follow the concurrency). */
  readonly maxPages: () => number;
  /** Bytes of results held and expected in flight, at most (one task always runs, whatever its size). */
  readonly maxBytes: number;
  /** A result's size, as counted against `maxBytes`. */
  readonly sizeOf: (value: T) => number;
  /** The size a result is expected to have before any has finished (unset: none counted until then). */
  readonly expectedSize?: () => number | undefined;
}

interface Slot<T> {
  readonly promise: Promise<T>;
  /** Set once the task has finished: its size, still held until taken. */
  size: number | undefined;
  readonly task: WindowTask<T>;
  /** Set once the task runs (it has its permit, or needs none): from then on it cannot be given back. */
  running: boolean;
  /** Aborts the task's wait for a permit when it is given back (`retract`). */
  readonly stop: AbortController;
}

/** A task: runs with the window's signal and, unless it is local work, the permit it was given. */
export interface WindowTask<T> {
  /** Work that needs no network slot (a page already read). */
  readonly local?: boolean;
  run(signal: AbortSignal, permit: Permit | undefined): Promise<T>;
  /**
   * Returns the task's work to the source, which hands it out again (`retract`): called only for a task
   * that never ran, latest first. Unset: the task is never given back.
   */
  giveBack?(): void;
}

export class OrderedWindow<T> {
  readonly #source: () => WindowTask<T> | undefined;
  readonly #options: OrderedWindowOptions<T>;
  readonly #slots: Slot<T>[] = [];
  readonly #abort = new AbortController();
  #exhausted = false;
  #started = 0;
  #heldBytes = 0;
  #finished = 0;
  #finishedBytes = 0;

  constructor(source: () => WindowTask<T> | undefined, options: OrderedWindowOptions<T>) {
    this.#source = source;
    this.#options = options;
    // Each waiting or running task listens on this signal (the scheduler, the request, a retry pause):
    // more than Node's default of 10, which would warn of a leak that is not one.
    setMaxListeners(0, this.#abort.signal);
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
        const average = this.#average();
        if (this.#heldBytes + (inFlight + 1) * average > this.#options.maxBytes) return;
      }
      const task = this.#source();
      if (task === undefined) {
        this.#exhausted = true;
        return;
      }
      this.#started++;
      const slot: Slot<T> = {
        promise: undefined as unknown as Promise<T>,
        size: undefined,
        task,
        running: false,
        stop: new AbortController(),
      };
      const promise = this.#start(slot, signal).then((value) => {
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

  async #start(slot: Slot<T>, signal: AbortSignal): Promise<T> {
    const task = slot.task;
    if (task.local) {
      slot.running = true;
      return task.run(signal, undefined);
    }
    const permit = await this.#options.scheduler.acquire(AbortSignal.any([signal, slot.stop.signal]));
    // Given back between the grant and this turn: the permit goes to whoever waits next.
    if (slot.stop.signal.aborted) {
      permit.release();
      throw slot.stop.signal.reason;
    }
    slot.running = true;
    try {
      const value = await task.run(signal, permit);
      permit.succeeded(this.#options.sizeOf(value));
      return value;
    } finally {
      permit.release();
    }
  }

  /** The next result in order; `done` after the last. Rejects with the first failure in order. */
  async next(): Promise<IteratorResult<T, undefined>> {
    this.#fill();
    const slot = this.#slots[0];
    if (!slot) {
      if (this.#abort.signal.aborted) throw this.#abort.signal.reason ?? new Error('OrderedWindow cancelled');
      return { done: true, value: undefined };
    }
    // The consumer waits for the network: the scheduler's controller may grow the limit on that.
    if (slot.size === undefined) this.#options.scheduler.starved();
    try {
      const value = await slot.promise;
      return { done: false, value };
    } finally {
      this.#slots.shift();
      if (slot.size !== undefined) this.#heldBytes -= slot.size;
    }
  }

  /**
   * Gives back the tasks at the end of the window that are still waiting for a permit, latest first
   * (`WindowTask.giveBack`), and takes new ones from the source: what it hands out now may differ (pages
   * of another size, once requests turn out metered). Never the task `next()` waits for, never one that
   * runs. Returns how many were given back.
   */
  retract(): number {
    let count = 0;
    for (;;) {
      const slot = this.#slots.at(-1);
      if (this.#slots.length < 2 || slot === undefined || slot.running || !slot.task.giveBack) break;
      this.#slots.pop();
      slot.stop.abort(new Error('OrderedWindow: task given back'));
      slot.task.giveBack();
      this.#started--;
      count++;
    }
    if (count > 0) {
      this.#exhausted = false;
      queueMicrotask(() => this.#fill());
    }
    return count;
  }

  /** Aborts every waiting and running task and starts no new one. */
  cancel(reason?: unknown): void {
    if (this.#abort.signal.aborted) return;
    this.#abort.abort(reason);
  }
}
