/**
 * `ResultStream`: a real object-mode `Readable` of a query's result, as Arrow `RecordBatch`es or row objects.
 *
 * This is the engine's face (page-engine.ts owns a page's way): it resolves the query, then pulls chunks
 * from the engine only when Node's buffer has room (`_read()`), so a slow consumer stops page requests
 * from starting. It owns what the consumer sees around the rows: `'schema'`, `'truncated'`, `'progress'`
 * once a page's last row has been read, checkpoints, and failures handed over after the rows before them.
 * `destroy()`, the caller's `signal` and a `break` out of `for await` all abort the in-flight requests.
 */
import { Readable } from 'node:stream';
import type { RecordBatch, Schema } from 'apache-arrow';
import type { Chunk } from '../convert/index.js';
import { abortReason } from '../core/abortable.js';
import { DqsError, type ResumePoint } from '../core/errors.js';
import { queryTelemetryOf } from '../telemetry/telemetry.js';
import type { RetryEvent } from '../transport/retry.js';
import { UNMEASURED_LIMIT } from './concurrency.js';
import { HedgePolicy } from './hedge.js';
import { PageEngine, type PageMark } from './page-engine.js';
import { fetchPage } from './page-fetcher.js';
import type { ResultInfo, ResultSource } from './result-source.js';
import type { ConcurrencyChange } from './scheduler.js';
import type { SplitInfo } from './split-info.js';
import type { NormalizedStreamOptions } from './stream-options.js';

/** Where a download stands; pass `nextRow` as `startRow` to resume without re-reading rows. */
export type Checkpoint = ResumePoint;

/** Sent once the consumer has read the last row of a page, so `checkpoint` is always safe to resume from. */
export interface ProgressEvent {
  /** Rows read from this stream so far. */
  readonly rows: number;
  /** Rows this stream will emit in all (the result's total minus rows skipped by `startRow`). */
  readonly total: number;
  readonly pages: number;
  /** Response body bytes of those pages. */
  readonly bytes: number;
  readonly checkpoint: Checkpoint;
  /** Where these rows came from: the service, or the local result cache. */
  readonly source: 'service' | 'cache';
}

export interface ResultStreamEvents {
  progress: (event: ProgressEvent) => void;
  retry: (event: RetryEvent) => void;
  truncated: (info: { total: number }) => void;
  /** The page requests allowed in flight changed (see `concurrency`). */
  concurrency: (change: ConcurrencyChange) => void;
  schema: (schema: Schema) => void;
  /** A result of `split: true` read in parts: which, in the order read (after `'schema'`). */
  split: (info: SplitInfo) => void;
}

export class ResultStream extends Readable {
  readonly #resolve: (signal: AbortSignal) => Promise<ResultSource>;
  readonly #options: NormalizedStreamOptions;
  readonly #abort = new AbortController();
  readonly #detachSignal: () => void;
  #chunks: AsyncGenerator<Chunk[], void, undefined> | undefined;
  #engine: PageEngine | undefined;
  #pending: Chunk[] = [];
  #pendingAt = 0;
  #reading = false;
  /** The engine's failure, held until the consumer has read the chunks already in the buffer. */
  #failure: Error | undefined;
  #schema: Schema | undefined;
  #source: ResultSource | undefined;
  /** Rows handed to the consumer (`'data'` emitted): chunks still in Node's buffer do not count. */
  #delivered = 0;
  /** Pages converted but not yet wholly read by the consumer, with their progress figures. */
  #marks: PageMark[] = [];
  readonly #hedge = new HedgePolicy();

  /** @internal Use `result.stream()` or `client.stream()`. */
  constructor(resolve: (signal: AbortSignal) => Promise<ResultSource>, options: NormalizedStreamOptions) {
    // One Arrow batch waits in Node's buffer: the window already holds the pages read ahead, and each
    // batch held here is a page's buffers kept alive (two were a batch more of the IPC export's peak RSS,
    // with no time gained: bench/run.js --base, 5 rounds).
    super({ objectMode: true, highWaterMark: options.output === 'rows' ? 1024 : 1 });
    this.#resolve = resolve;
    this.#options = options;
    const signal = options.signal;
    if (signal) {
      const onAbort = () => this.destroy(abortReason(signal, 'The result stream'));
      if (signal.aborted) queueMicrotask(onAbort);
      else signal.addEventListener('abort', onAbort, { once: true });
      this.#detachSignal = () => signal.removeEventListener('abort', onAbort);
    } else {
      this.#detachSignal = () => {};
    }
  }

  /** The Arrow schema, once known (after the `'schema'` event). */
  get schema(): Schema | undefined {
    return this.#schema;
  }

  /** The query behind the stream, once created and complete. */
  get source(): ResultInfo | undefined {
    return this.#source;
  }

  /**
   * Where to resume from if the stream fails now: the first row not yet read from this stream. Rows
   * converted but still in the stream's buffer do not count (a stream destroyed by its caller drops
   * them; one whose page failed hands them over first, then fails).
   */
  get checkpoint(): Checkpoint | undefined {
    return this.#checkpointAt(this.#options.startRow + this.#delivered);
  }

  /**
   * Page requests allowed in flight now: the adaptive limit (`'auto'`), or the fixed `concurrency`, less
   * after 429s and recovering as pages succeed. Its changes are `'concurrency'` events.
   */
  get concurrency(): number {
    const opts = this.#options;
    return this.#engine?.limit ?? (opts.concurrency === 'auto' ? UNMEASURED_LIMIT : opts.concurrency);
  }

  #checkpointAt(nextRow: number): Checkpoint | undefined {
    return this.#source && { datasetId: this.#source.datasetId, queryId: this.#source.id, nextRow };
  }

  /**
   * Every chunk that reaches the consumer is announced by a `'data'` event: `read()` emits it for
   * for-await and paused-mode readers, and flowing mode (`pipe`, `pipeline`) emits it directly without
   * calling `read()`. So this is where rows count as delivered, and where a page's `'progress'` is due
   * once its last row has been taken.
   */
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'data') this.#deliver(this.#rowsIn(args[0] as Chunk));
    return super.emit(event, ...args);
  }

  /** Rows in an output chunk: a batch's, or one row object. */
  #rowsIn(chunk: Chunk): number {
    return this.#options.output === 'arrow' ? (chunk as RecordBatch).numRows : 1;
  }

  /** `rows` more have reached the consumer: a failure held back, and due progress, follow. */
  #deliver(rows: number): void {
    this.#delivered += rows;
    // The last chunk before a failure has left the buffer: fail once the consumer has it.
    if (this.#failure && this.readableLength === 0) process.nextTick(() => this.#fail());
    const nextRow = this.#options.startRow + this.#delivered;
    while (this.#marks.length > 0 && this.#marks[0]!.end <= nextRow) {
      const mark = this.#marks.shift()!;
      super.emit('progress', {
        rows: mark.end - this.#options.startRow,
        total: this.#engine?.toEmit ?? 0,
        pages: mark.pages,
        bytes: mark.bytes,
        checkpoint: this.#checkpointAt(mark.end)!,
        source: mark.source ?? 'service',
      } satisfies ProgressEvent);
    }
  }

  /** Page requests sent again on another connection because the first was slow, and those that won. */
  get hedges(): { readonly sent: number; readonly won: number } {
    return { sent: this.#hedge.sent, won: this.#hedge.won };
  }

  /** Pages requested so far (for tests of backpressure and for progress displays). */
  get pagesStarted(): number {
    return this.#engine?.pagesStarted ?? 0;
  }

  /**
   * @internal The engine's chunks a group at a time (a page's batch, a page of row objects), without the
   * Readable's step per chunk: `toArray()` takes whole groups, and keeps every row (so row objects are
   * made as pages are decoded, see `PageEngine`). The stream must not be read otherwise as well. Ends
   * (or fails) the stream with the groups.
   */
  async *groups(): AsyncGenerator<readonly Chunk[], void, undefined> {
    // A failure reaches the caller as this generator's throw; the stream's 'error' event, which nobody
    // else listens to here, must not become an unhandled error.
    this.on('error', () => {});
    this.#chunks ??= this.#run(true);
    let ended = false;
    try {
      for (;;) {
        const next = await this.#chunks.next();
        if (next.done) {
          ended = true;
          return;
        }
        yield next.value;
        let rows = 0;
        for (const chunk of next.value) rows += this.#rowsIn(chunk);
        this.#deliver(rows);
      }
    } catch (err) {
      ended = true;
      this.destroy(err as Error);
      throw err;
    } finally {
      // A consumer that stopped early (or one that read to the end) leaves nothing in flight.
      if (!this.destroyed)
        this.destroy(ended ? undefined : new DqsError('DQS_ABORTED', 'The result stream was stopped'));
      // Closed before the caller goes on, as a read stream is by then: 'close' listeners (telemetry's
      // read span) have run.
      if (!this.closed) await new Promise((resolve) => this.once('close', resolve));
    }
  }

  override _read(): void {
    // A held failure ends the stream once the buffer is read (`#deliver`): a new pump would find the
    // engine finished and end the stream cleanly, handing the consumer part of the result as all of it.
    if (this.#reading || this.#failure) return;
    this.#reading = true;
    this.#pump().catch((err: unknown) => {
      this.#reading = false;
      // The rows before the failing page are the consumer's: those already in the buffer are read
      // first (destroying now would drop them), then the stream fails (see `#deliver`).
      this.#failure = err as Error;
      if (this.readableLength === 0) this.#fail();
    });
  }

  #fail(): void {
    if (!this.destroyed) this.destroy(this.#failure);
  }

  /**
   * Pushes buffered chunks until Node says stop, pulling more from the engine as needed. `#reading` is
   * cleared synchronously with the `push()` that returned false: Node may call `_read()` again before any
   * later microtask, and a call ignored then would stall the stream for good.
   */
  async #pump(): Promise<void> {
    this.#chunks ??= this.#run();
    for (;;) {
      while (this.#pendingAt < this.#pending.length) {
        const chunk = this.#pending[this.#pendingAt++]!;
        if (!this.push(chunk)) {
          this.#reading = false;
          return;
        }
      }
      if (this.destroyed) return;
      const next = await this.#chunks.next();
      if (this.destroyed) return;
      if (next.done) {
        this.#reading = false;
        this.push(null);
        return;
      }
      this.#pending = next.value;
      this.#pendingAt = 0;
    }
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#detachSignal();
    // The error says where to resume (nothing is read any more, so the count is final).
    if (error instanceof DqsError && error.checkpoint === undefined) error.checkpoint = this.checkpoint;
    this.#abort.abort(error ?? new DqsError('DQS_ABORTED', 'The result stream was destroyed'));
    this.#engine?.cancel(this.#abort.signal.reason);
    // Let a suspended engine run its `finally` (it is not running: we only reach here between awaits
    // or with the engine blocked on an aborted request, which rejects promptly).
    this.#chunks?.return(undefined).catch(() => {});
    callback(error);
  }

  /**
   * Resolves the query, then yields the engine's chunks page by page, in row order. `keepsRows`: the
   * consumer (`groups()`, for `toArray()`) keeps every row (see `PageEngine`).
   */
  async *#run(keepsRows = false): AsyncGenerator<Chunk[], void, undefined> {
    const signal = this.#abort.signal;
    const source = await this.#resolve(signal);
    this.#source = source;
    const opts = this.#options;
    // OpenTelemetry (telemetry/): a span for this read and one per page, when the query has a span.
    const read = queryTelemetryOf(source)?.read(this, { output: opts.output, startRow: opts.startRow });
    const engine = new PageEngine(
      source,
      this.#options,
      {
        schema: (schema) => {
          this.#schema = schema;
          this.emit('schema', schema);
        },
        split: (info) => this.emit('split', info),
        truncated: (info) => this.emit('truncated', info),
        retry: (event) => this.emit('retry', event),
        concurrency: (change) => this.emit('concurrency', change),
        mark: (mark) => this.#marks.push(mark),
      },
      signal,
      this.#hedge,
      read ? read.pages(fetchPage) : fetchPage,
      keepsRows,
    );
    this.#engine = engine;
    yield* engine.chunks();
  }
}
