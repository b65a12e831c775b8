/**
 * Builds result pages in slices off a shared queue, so the event loop never blocks for long: each turn
 * runs chunks (1,024 rows) for about `sliceMs`, then yields to I/O. The chunk to run next comes from the
 * page with the least work left (shortest remaining first, as a service that keeps small requests fast
 * does), every fourth from the oldest page so none starves: a 10-row page waits for about one slice, not
 * for another client's 100,000-row page nor for a backlog of others. Requests for the same page share one build; the build stops when
 * every request waiting for it has gone.
 */
import type { WireValue } from '../core/wire.js';
import type { PageWriter } from './formats/index.js';

type Chunk = readonly (readonly WireValue[])[];

interface Job {
  readonly key: string;
  remaining: number;
  readonly submitted: number;
  readonly writer: PageWriter;
  readonly chunks: Iterator<Chunk>;
  waiters: number;
  readonly promise: Promise<Buffer>;
  resolve(body: Buffer): void;
  reject(err: unknown): void;
}

/** The page whose every requester has gone; never sent, only observed by the last one to leave. */
export class BuildCancelled extends Error {
  constructor() {
    super('page build cancelled: every client waiting for it has gone');
    this.name = 'BuildCancelled';
  }
}

export class PageBuilder {
  readonly #jobs = new Map<string, Job>();
  readonly #sliceMs: number;
  /** Throughput estimate (rows per ms), an average of recent slices; a guess until the first is run. */
  #rowsPerMs = 200;
  #scheduled = false;
  #turn = 0;

  constructor(sliceMs = 5) {
    this.#sliceMs = sliceMs;
  }

  /** Pages being built. */
  get size(): number {
    return this.#jobs.size;
  }

  /** Rows still to build, all pages together. */
  get queuedRows(): number {
    let sum = 0;
    for (const job of this.#jobs.values()) sum += job.remaining;
    return sum;
  }

  /** How long building everything queued now takes, at the throughput measured so far. */
  drainMs(): number {
    return this.queuedRows / this.#rowsPerMs;
  }

  /**
   * The page `key` (its `rows` rows from `chunks`, serialized by `writer`), built in slices; joins the
   * build already under way for `key`. Rejects with `BuildCancelled` when `signal` aborts first.
   */
  build(
    key: string,
    rows: number,
    writer: () => PageWriter,
    chunks: () => Iterable<Chunk>,
    signal: AbortSignal | undefined,
  ): Promise<Buffer> {
    let job = this.#jobs.get(key);
    if (job === undefined) {
      let resolve!: (body: Buffer) => void;
      let reject!: (err: unknown) => void;
      const promise = new Promise<Buffer>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      job = {
        key,
        remaining: rows,
        submitted: performance.now(),
        writer: writer(),
        chunks: chunks()[Symbol.iterator](),
        waiters: 0,
        promise,
        resolve,
        reject,
      };
      // A rejection nobody awaits (every waiter left) must not become an unhandled rejection.
      promise.catch(() => {});
      this.#jobs.set(key, job);
      this.#schedule();
    }
    const current = job;
    current.waiters++;
    if (signal === undefined) return current.promise;
    if (signal.aborted) {
      this.#leave(current);
      return Promise.reject(new BuildCancelled());
    }
    return new Promise<Buffer>((resolve, reject) => {
      const onAbort = () => {
        this.#leave(current);
        reject(new BuildCancelled());
      };
      signal.addEventListener('abort', onAbort, { once: true });
      current.promise.then(
        (body) => {
          signal.removeEventListener('abort', onAbort);
          resolve(body);
        },
        (err: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      );
    });
  }

  #leave(job: Job): void {
    job.waiters--;
    if (job.waiters > 0 || this.#jobs.get(job.key) !== job) return;
    this.#jobs.delete(job.key);
    job.reject(new BuildCancelled());
  }

  #schedule(): void {
    if (this.#scheduled || this.#jobs.size === 0) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#slice();
    });
  }

  /**
   * The job to advance: the one with the least work left (shortest remaining first keeps small pages
   * fast under any backlog), except every fourth chunk, which goes to the oldest job, so a big page
   * progresses at a quarter of the throughput at least, however many small ones keep coming. (Aging the
   * priority by wait instead turns a long backlog into FIFO, and the small request waits for all of it.)
   */
  #next(): Job | undefined {
    const oldestTurn = ++this.#turn % 4 === 0;
    let best: Job | undefined;
    for (const job of this.#jobs.values()) {
      // Map order is insertion order: the first job is the oldest.
      if (oldestTurn) return job;
      if (best === undefined || job.remaining < best.remaining) best = job;
    }
    return best;
  }

  #slice(): void {
    const started = performance.now();
    let now = started;
    let rows = 0;
    while (now - started < this.#sliceMs) {
      const job = this.#next();
      if (job === undefined) break;
      try {
        const step = job.chunks.next();
        if (step.done) {
          this.#jobs.delete(job.key);
          Promise.resolve(job.writer.finish()).then(job.resolve, job.reject);
        } else {
          job.writer.add(step.value);
          job.remaining -= step.value.length;
          rows += step.value.length;
        }
      } catch (err) {
        this.#jobs.delete(job.key);
        job.reject(err);
      }
      now = performance.now();
    }
    const elapsed = now - started;
    if (rows > 0 && elapsed > 0.5) this.#rowsPerMs = 0.8 * this.#rowsPerMs + 0.2 * (rows / elapsed);
    this.#schedule();
  }
}
