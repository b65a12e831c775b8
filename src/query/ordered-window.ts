/**
 * Runs numbered tasks concurrently (through p-queue) and hands their results back strictly in index
 * order, with a bounded window: at most `window` tasks are running or finished-but-not-taken at any time.
 * A consumer that stops calling `next()` therefore stops new work from starting: that is the stream's
 * backpressure, reaching all the way to the network.
 */
import { setMaxListeners } from 'node:events';
import PQueue from 'p-queue';

export interface OrderedWindowOptions {
  /** Tasks running at once. */
  readonly concurrency: number;
  /** Tasks started but not yet taken by `next()`; >= concurrency. */
  readonly window: number;
}

export class OrderedWindow<T> {
  readonly #count: number;
  readonly #run: (index: number, signal: AbortSignal) => Promise<T>;
  readonly #queue: PQueue;
  readonly #window: number;
  readonly #pending = new Map<number, Promise<T>>();
  readonly #abort = new AbortController();
  #scheduled = 0;
  #taken = 0;

  constructor(
    count: number,
    run: (index: number, signal: AbortSignal) => Promise<T>,
    options: OrderedWindowOptions,
  ) {
    this.#count = count;
    this.#run = run;
    this.#window = Math.max(options.window, options.concurrency);
    this.#queue = new PQueue({ concurrency: options.concurrency });
    // Each task in the window listens on this signal (p-queue while queued and while running, the
    // request, a retry pause): more than Node's default of 10, which would warn of a leak that is not one.
    setMaxListeners(4 * this.#window + 10, this.#abort.signal);
  }

  /** Tasks allowed to run at once; can change while running (the stream steps down on 429s). */
  get concurrency(): number {
    return this.#queue.concurrency;
  }

  set concurrency(value: number) {
    this.#queue.concurrency = Math.max(1, Math.floor(value));
  }

  /** How many tasks have been started (for tests and progress). */
  get started(): number {
    return this.#scheduled;
  }

  #fill(): void {
    while (
      this.#scheduled < this.#count &&
      this.#scheduled - this.#taken < this.#window &&
      !this.#abort.signal.aborted
    ) {
      const index = this.#scheduled++;
      const signal = this.#abort.signal;
      // The result travels in a box emptied when taken: p-queue keeps a record of finished tasks, and
      // a page's rows must not live on in it after the consumer has them.
      const box: { value?: T } = {};
      const task = this.#queue
        .add(
          async () => {
            box.value = await this.#run(index, signal);
          },
          { signal },
        )
        .then(() => {
          const value = box.value as T;
          delete box.value;
          return value;
        });
      // The rejection is observed when `next()` reaches this index; until then it must not count as unhandled.
      task.catch(() => {});
      this.#pending.set(index, task);
    }
  }

  /** The next result in index order; `done` after the last. Rejects with the first failure in order. */
  async next(): Promise<IteratorResult<T, undefined>> {
    if (this.#taken >= this.#count) return { done: true, value: undefined };
    this.#fill();
    const index = this.#taken;
    const task = this.#pending.get(index);
    if (!task) throw this.#abort.signal.reason ?? new Error('OrderedWindow cancelled');
    try {
      const value = await task;
      return { done: false, value };
    } finally {
      this.#pending.delete(index);
      this.#taken = index + 1;
    }
  }

  /** Aborts every running task and starts no new one. */
  cancel(reason?: unknown): void {
    if (this.#abort.signal.aborted) return;
    this.#abort.abort(reason);
    this.#queue.clear();
  }
}
