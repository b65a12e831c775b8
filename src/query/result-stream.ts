/**
 * `ResultStream`: a real object-mode `Readable` of a query's result, as Arrow `RecordBatch`es or row objects.
 *
 * The engine: pages are planned from the total, fetched through an `OrderedWindow` (p-queue, bounded
 * window) and converted strictly in row order. The Readable pulls: `_read()` asks the engine for the next
 * chunks only when Node's buffer has room, so a slow consumer stops page requests from starting.
 * `destroy()`, the caller's `signal` and a `break` out of `for await` all abort the in-flight requests.
 */
import { Readable } from 'node:stream';
import type { RecordBatch, Schema } from 'apache-arrow';
import {
  buildSchema,
  type ColumnPlan,
  type DecodedColumns,
  makeColumnRowFactory,
  makeRowFactory,
  planColumns,
  RecordBatchBuilder,
} from '../convert/index.js';
import { abortReason } from '../core/abortable.js';
import {
  DqsError,
  RateLimitedError,
  type ResumePoint,
  ServerError,
  TimeoutError,
  TruncatedError,
} from '../core/errors.js';
import type { FieldDescriptor } from '../core/wire.js';
import { PageDecoder } from '../decode/index.js';
import { queryTelemetryOf } from '../telemetry/telemetry.js';
import type { EndpointClient } from '../transport/endpoints.js';
import type { RetryEvent } from '../transport/retry.js';
import { adaptiveConcurrency, type Congestion, FixedConcurrency, INITIAL_LIMIT } from './concurrency.js';
import { HedgePolicy } from './hedge.js';
import { OrderedWindow, type WindowTask } from './ordered-window.js';
import {
  fetchPage as fetchPlainPage,
  type PageData,
  type PageFetchContext,
  partLength,
} from './page-fetcher.js';
import { checkRowLimit, PagePlan, type PageRange } from './page-plan.js';
import { type ConcurrencyChange, type Permit, RequestScheduler } from './scheduler.js';
import { chooseFormat, DEFAULT_MAX_CONCURRENCY, type NormalizedStreamOptions } from './stream-options.js';

/** What a stream needs to know about a completed query. */
export interface ResultSource {
  readonly client: EndpointClient;
  readonly datasetId: string;
  readonly id: string;
  readonly total: number;
  readonly truncated: boolean;
  readonly formats: readonly string[];
  readonly fields: readonly FieldDescriptor[];
  readonly maxResponseBytes: number;
  /** The client's shared scheduler for `concurrency: 'auto'` streams. */
  readonly scheduler?: RequestScheduler | undefined;
  /** The page read with the query, handed to the first stream that can use it (once). */
  readonly takeFirstPage?: (() => FirstPage | undefined) | undefined;
  /** `last_date_updated` of the result's pages, when known (the result cache compares it). */
  readonly lastDateUpdated?: string | undefined;
  /** Rows from somewhere else than the page engine (the result cache): see `LocalRows`. */
  readonly local?: LocalRows | undefined;
}

/** A table-JSON page already read (its descriptors described the query): rows `range`, body bytes. */
export interface FirstPage {
  readonly range: PageRange;
  /** Serves the page's bytes as a response again. */
  readonly open: NonNullable<PageFetchContext['openPage']>;
}

/**
 * Pages of about this many bytes, once the first page has shown the bytes per row. Every request pays a
 * round trip and the service's fixed cost per page (measured in bench/wan.js: 40 ms + 30 ms a page), so
 * pages much smaller than this spend their time on overhead, under a cap on requests in flight most of
 * all; much larger ones make the window (`windowBytes`) hold few pages and the first batch come late.
 */
const TARGET_PAGE_BYTES = 4.5e6;
const MIN_AUTO_PAGE = 1000;
const MAX_AUTO_PAGE = 50_000;
/** With metered requests (a rate limit, set or learned), pages are this many rows at most. */
const MAX_METERED_PAGE = 100_000;

function congestionOf(error: unknown): Congestion | undefined {
  if (error instanceof RateLimitedError) return 'throttled';
  if (error instanceof ServerError && error.status === 503) return 'unavailable';
  if (error instanceof TimeoutError) return 'timeout';
  return undefined;
}

/** A stream's progress mark for rows a `LocalRows` produced: `end` is the row after them. */
export interface LocalMark {
  readonly end: number;
  readonly pages: number;
  readonly bytes: number;
  readonly source: 'service' | 'cache';
}

/** Output chunks, and the progress marks they complete. */
export interface LocalStep {
  readonly chunks: readonly Chunk[];
  readonly marks?: readonly LocalMark[] | undefined;
}

export interface LocalReadContext {
  readonly options: NormalizedStreamOptions;
  readonly plan: readonly ColumnPlan[];
  /** The schema the stream announced: every Arrow chunk must carry it. */
  readonly schema: Schema;
  readonly signal: AbortSignal;
  readonly retry: (event: RetryEvent) => void;
}

/**
 * The one extension point of the stream engine: a source that makes its own chunks (the result cache
 * serves an entry, or fills one while reading the service). The stream still owns everything the
 * consumer sees around them: `'schema'`, `'truncated'`, `'progress'`, checkpoints, backpressure, abort.
 */
export interface LocalRows {
  /** This stream's chunks, or `undefined` to read the service through the page engine as usual. */
  open(context: LocalReadContext): AsyncIterable<LocalStep> | undefined;
}

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
}

type Chunk = RecordBatch | Record<string, unknown>;

/** Row objects made at a time from decoded columns. */
const ROW_SLICE = 1000;

export class ResultStream extends Readable {
  readonly #resolve: (signal: AbortSignal) => Promise<ResultSource>;
  readonly #options: NormalizedStreamOptions;
  readonly #abort = new AbortController();
  readonly #detachSignal: () => void;
  #engine: AsyncGenerator<Chunk[], void, undefined> | undefined;
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
  #marks: {
    readonly end: number;
    readonly pages: number;
    readonly bytes: number;
    readonly source?: 'service' | 'cache';
  }[] = [];
  #toEmit = 0;
  #window: OrderedWindow<PageData> | undefined;
  #scheduler: RequestScheduler | undefined;
  readonly #hedge = new HedgePolicy();

  /** @internal Use `result.stream()` or `client.stream()`. */
  constructor(resolve: (signal: AbortSignal) => Promise<ResultSource>, options: NormalizedStreamOptions) {
    super({ objectMode: true, highWaterMark: options.output === 'rows' ? 1024 : 2 });
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
  get source(): ResultSource | undefined {
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
    return this.#scheduler?.limit ?? (opts.concurrency === 'auto' ? INITIAL_LIMIT : opts.concurrency);
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
    if (event === 'data') this.#deliver(args[0] as Chunk);
    return super.emit(event, ...args);
  }

  #deliver(chunk: Chunk): void {
    this.#delivered += this.#options.output === 'arrow' ? (chunk as RecordBatch).numRows : 1;
    // The last chunk before a failure has left the buffer: fail once the consumer has it.
    if (this.#failure && this.readableLength === 0) process.nextTick(() => this.#fail());
    const nextRow = this.#options.startRow + this.#delivered;
    while (this.#marks.length > 0 && this.#marks[0]!.end <= nextRow) {
      const mark = this.#marks.shift()!;
      super.emit('progress', {
        rows: mark.end - this.#options.startRow,
        total: this.#toEmit,
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
    return this.#window?.started ?? 0;
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
    this.#engine ??= this.#run();
    for (;;) {
      while (this.#pendingAt < this.#pending.length) {
        const chunk = this.#pending[this.#pendingAt++]!;
        if (!this.push(chunk)) {
          this.#reading = false;
          return;
        }
      }
      if (this.destroyed) return;
      const next = await this.#engine.next();
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
    this.#window?.cancel(this.#abort.signal.reason);
    // Let a suspended engine run its `finally` (it is not running: we only reach here between awaits
    // or with the engine blocked on an aborted request, which rejects promptly).
    this.#engine?.return(undefined).catch(() => {});
    callback(error);
  }

  /** The engine: resolves the query, then yields chunks of output page by page, in row order. */
  async *#run(): AsyncGenerator<Chunk[], void, undefined> {
    const signal = this.#abort.signal;
    const source = await this.#resolve(signal);
    this.#source = source;
    const opts = this.#options;
    // OpenTelemetry (telemetry/): a span for this read and one per page, when the query has a span.
    const read = queryTelemetryOf(source)?.read(this, { output: opts.output, startRow: opts.startRow });
    const fetchPage = read ? read.pages(fetchPlainPage) : fetchPlainPage;
    // Before any page: a total the server made up must not be read (nor planned).
    checkRowLimit(source.total, opts.maxRows);
    const plan = planColumns([...source.fields], opts.types ? { ...opts.types } : undefined, opts.bigNumbers);
    const schema = buildSchema(plan);
    this.#schema = schema;
    this.emit('schema', schema);
    if (source.truncated) {
      if (opts.onTruncated === 'error') throw new TruncatedError(source.total);
      this.emit('truncated', { total: source.total });
    }
    const local = source.local?.open({
      options: opts,
      plan,
      schema,
      signal,
      retry: (event) => this.emit('retry', event),
    });
    if (local) {
      this.#toEmit = Math.max(0, source.total - opts.startRow + 1);
      for await (const step of local) {
        if (step.marks) this.#marks.push(...step.marks);
        if (step.chunks.length) yield step.chunks as Chunk[];
      }
      return;
    }
    const { format, mediaType } = chooseFormat(opts.format, source.formats);
    const pages = new PagePlan(opts.startRow, source.total, opts.pageSize);
    // The page read with the query (its descriptors came from it) is the stream's first, if it fits.
    // (Not when the caller chose smaller pages than it: their progress and batches follow their size.)
    const kept = opts.startRow === 1 && format === 'json' ? source.takeFirstPage?.() : undefined;
    const first = kept && (opts.pageSizeAuto || kept.range.limit <= opts.pageSize) ? kept : undefined;
    // Fast decoders (bytes straight into columns) feed Arrow batches and row objects alike.
    const decoder = new PageDecoder(format, plan, {
      // The fast decoders fill Float64 columns: exact numbers come from the reference's wire values.
      fast: opts.decoder === 'fast' && opts.bigNumbers === 'error',
      strings: opts.output === 'rows' ? 'exact' : 'utf8',
      invalidUtf8: opts.invalidUtf8,
    });
    const scheduler = this.#schedulerFor(source);
    this.#scheduler = scheduler;
    const detachScheduler = scheduler.onChange((change) => this.emit('concurrency', change));
    // A far service (the query's own requests were slow to answer) starts from more requests at once.
    scheduler.prime(source.client.http.fastestAnswerMs);
    const ctx: PageFetchContext = {
      client: source.client,
      datasetId: source.datasetId,
      queryId: source.id,
      total: source.total,
      mediaType,
      decoder,
      maxResponseBytes: source.maxResponseBytes,
      timeoutMs: opts.timeoutMs,
      onRetry: (event: RetryEvent) => this.emit('retry', event),
      hedge: opts.hedge ? this.#hedge : undefined,
    };
    // What a page shows sets the size of the pages planned after it, as soon as it has arrived (not when
    // the consumer reaches it: by then a fast link has planned the whole result at the first guess).
    let learned = !opts.pageSizeAuto;
    let metered = false;
    const learnFrom = (page: PageData): PageData => {
      learned = this.#learn(pages, page, learned);
      if (opts.pageSizeAuto && !metered && source.client.http.rateLimited && page.rowCount > 0) {
        metered = true;
        pages.pageSize = this.#meteredPageSize(pages.pageSize, page);
      }
      return page;
    };
    // Pages of this stream waiting out a pause before a retry (a Retry-After, most often): each holds
    // its slot in the window while the consumer waits for it.
    let pausing = 0;
    const fetchWith = (range: PageRange, s: AbortSignal, permit: Permit | undefined) => {
      let paused = false;
      const resume = () => {
        if (paused) pausing--;
        paused = false;
      };
      // The slot is the network's: it goes back as soon as a body has been read, before the page is
      // decoded, so the next request leaves while this one decodes (and a controller measures the
      // link, not our CPU). A page that needs another request (a server that answered short) takes a
      // slot again for it; the window releases the first permit, this function any later one.
      let held = permit;
      // Set when the service pushed back on this page: its next request waits for room on the wire.
      let refused = false;
      return fetchPage(
        {
          ...ctx,
          onSend: async (signal) => {
            resume();
            if (permit === undefined) return () => {};
            held ??= await scheduler.acquire(signal);
            if (!refused) return held.sending();
            refused = false;
            return held.resending(signal);
          },
          onBodyRead: (bytes) => {
            held?.succeeded(bytes);
            held?.release();
            held = undefined;
          },
          // The retries of this page tell its permit (and so the controller) that the service pushed back.
          onRetry: (event: RetryEvent) => {
            this.emit('retry', event);
            if (!paused) pausing++;
            paused = true;
            const kind = congestionOf(event.error);
            if (kind) {
              refused = true;
              (held ?? permit)?.congested(kind);
            }
          },
        },
        range,
        s,
      )
        .finally(() => {
          resume();
          if (held !== permit) held?.release();
        })
        .then(learnFrom);
    };
    let firstTask: WindowTask<PageData> | undefined;
    if (first) {
      pages.skip(first.range);
      firstTask = {
        local: true,
        run: (s) => fetchPage({ ...ctx, openPage: first.open }, first.range, s).then(learnFrom),
      };
    }
    const window = new OrderedWindow<PageData>(
      () => {
        if (firstTask) {
          const task = firstTask;
          firstTask = undefined;
          return task;
        }
        const range = pages.next();
        if (range === undefined) return undefined;
        return { run: (s, permit) => fetchWith(range, s, permit) };
      },
      {
        scheduler,
        // A fixed concurrency keeps its documented window (2 x). 'auto' holds as many pages again as are in
        // flight (at least 2 more: a slow consumer on loopback, at a limit of 2, holds 4 pages, as before),
        // and as many again for each page waiting out a Retry-After: the consumer waits for that page,
        // and without the room the other requests would stop too, for a second or more (under a cap of 6
        // on the WAN bench, a page refused twice held the link idle 0.6 s). windowBytes bounds it all.
        maxPages: () =>
          opts.window ??
          (opts.concurrency === 'auto'
            ? Math.max(scheduler.limit + 2, 2 * scheduler.limit) + pausing * scheduler.limit
            : 2 * scheduler.limit),
        maxBytes: opts.windowBytes,
        sizeOf: (page) => page.bytes,
      },
    );
    this.#window = window;
    const onAbort = () => window.cancel(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    this.#toEmit = Math.max(0, source.total - opts.startRow + 1);
    let bytes = 0;
    let pageCount = 0;
    try {
      const convert =
        opts.output === 'arrow' ? this.#arrowConverter(plan, decoder) : this.#rowConverter(plan, decoder);
      if (this.#toEmit === 0 && opts.output === 'arrow') {
        // An empty result still carries its schema, so writers and `toTable()` know the columns.
        yield [new RecordBatchBuilder(plan, { onInvalid: opts.onInvalid }).flush()];
        return;
      }
      for (;;) {
        const next = await window.next();
        if (next.done) break;
        const page = next.value;
        // Converts the page, or at least checks it: an invalid value fails here, before any of its rows.
        const pieces = convert.page(page);
        bytes += page.bytes;
        pageCount++;
        // Reported by `#deliver()` once the consumer has taken the page's last row.
        this.#marks.push({ end: page.range.start + page.rowCount, pages: pageCount, bytes });
        for (const out of pieces) if (out.length) yield out;
        if (page.range.start + page.rowCount > source.total) {
          const last = convert.finish();
          if (last) yield [last];
        }
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      detachScheduler();
      window.cancel(new DqsError('DQS_ABORTED', 'The result stream ended'));
    }
  }

  /**
   * The page size for the rest, from what a page showed: ~4.5 MB pages at its bytes per row (once, from
   * the first page; it may be more rows than the first page's), and never more rows than a server that
   * clamps `limit` answers (a page that took more than one request shows it).
   */
  #learn(pages: PagePlan, page: PageData, learned: boolean): boolean {
    const firstPart = page.parts[0];
    const answered = firstPart === undefined ? 0 : partLength(firstPart);
    if (page.requests > 1 && answered > 0) pages.clampTo(answered);
    if (learned || page.rowCount === 0) return learned;
    const perRow = page.bytes / page.rowCount;
    const rows = Math.round(TARGET_PAGE_BYTES / perRow / 1000) * 1000;
    pages.pageSize = Math.max(MIN_AUTO_PAGE, Math.min(MAX_AUTO_PAGE, rows));
    return true;
  }

  /**
   * Under a rate limit requests, not bytes, are what the result costs: the rest of it in as few pages as
   * the window holds two of (so one can be read while the next arrives), at most MAX_METERED_PAGE rows.
   */
  #meteredPageSize(current: number, page: PageData): number {
    const perRow = page.bytes / page.rowCount;
    const rows = Math.floor(this.#options.windowBytes / 2 / perRow / 1000) * 1000;
    return Math.max(current, Math.min(MAX_METERED_PAGE, rows));
  }

  /**
   * `'auto'` streams share their client's scheduler (one limit for all its queries), unless they set their
   * own `maxConcurrency`; a fixed concurrency gets a scheduler of its own.
   */
  #schedulerFor(source: ResultSource): RequestScheduler {
    const opts = this.#options;
    if (opts.concurrency !== 'auto') return new RequestScheduler(new FixedConcurrency(opts.concurrency));
    if (opts.maxConcurrency === undefined && source.scheduler) return source.scheduler;
    return new RequestScheduler(
      adaptiveConcurrency(opts.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY, source.client.http.rateLimited),
    );
  }

  #arrowConverter(plan: ColumnPlan[], decoder: PageDecoder) {
    const builder = new RecordBatchBuilder(plan, { onInvalid: this.#options.onInvalid });
    const auto = this.#options.batchSizeAuto;
    const fixedBatch = this.#options.batchSize;
    return {
      page(page: PageData): Iterable<Chunk[]> {
        const out: Chunk[] = [];
        const { range } = page;
        // Unset, a batch is a page (page sizes change as the stream learns; batches follow them).
        const batchSize = auto ? Math.max(1, page.rowCount) : fixedBatch;
        let first = range.start; // result position of the part's first row
        for (const part of page.parts) {
          const n = partLength(part);
          // The common case (a decoded page that is exactly one batch): its buffers become the batch's.
          if (!Array.isArray(part) && builder.length === 0 && n === batchSize) {
            out.push(builder.adoptDecoded(part));
            first += n;
            continue;
          }
          let i = 0;
          while (i < n) {
            const take = Math.min(batchSize - builder.length, n - i);
            if (Array.isArray(part)) {
              builder.appendRows(i === 0 && take === n ? part : part.slice(i, i + take), first + i, range);
            } else builder.appendDecoded(part, i, i + take);
            i += take;
            if (builder.length >= batchSize) out.push(builder.flush());
          }
          // Copied into the builder: the decoder may decode the next page into these buffers.
          if (!Array.isArray(part)) decoder.recycle(part);
          first += n;
        }
        return [out];
      },
      finish(): RecordBatch | undefined {
        return builder.length > 0 ? builder.flush() : undefined;
      },
    };
  }

  #rowConverter(plan: ColumnPlan[], decoder: PageDecoder) {
    const dates = this.#options.dates;
    const make = makeRowFactory(plan, { onInvalid: this.#options.onInvalid, dates });
    // Made at the first decoded page (table JSON or CSV through a columnar decoder).
    let fromColumns: ReturnType<typeof makeColumnRowFactory> | undefined;
    return {
      /**
       * Wire rows are converted at once (an invalid value fails the page before any of its rows is
       * emitted). Decoded columns cannot fail: their objects are made a slice at a time as the consumer
       * reads, so a page's worth of objects is never alive at once (they would outlive the young
       * generation and make the GC copy them).
       */
      page(page: PageData): Iterable<Chunk[]> {
        const { range } = page;
        const jobs: (Chunk[] | DecodedColumns)[] = [];
        let first = range.start;
        for (const part of page.parts) {
          if (Array.isArray(part)) {
            const out: Chunk[] = new Array(part.length);
            for (let i = 0; i < part.length; i++) out[i] = make(part[i]!, first + i, range);
            jobs.push(out);
          } else jobs.push(part);
          first += partLength(part);
        }
        return (function* () {
          for (const job of jobs) {
            if (Array.isArray(job)) {
              yield job;
              continue;
            }
            for (let from = 0; from < job.length; from += ROW_SLICE) {
              const out: Chunk[] = [];
              fromColumns ??= makeColumnRowFactory(plan, dates);
              fromColumns(job, from, Math.min(job.length, from + ROW_SLICE), out);
              yield out;
            }
            decoder.recycle(job);
          }
        })();
      },
      finish(): undefined {
        return undefined;
      },
    };
  }
}
