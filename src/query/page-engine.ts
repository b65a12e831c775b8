/**
 * The page engine: one owner for a page's way from the plan to the consumer.
 *
 *   plan (page-plan.ts: which rows, how many per page, learned from each page that arrives)
 *   → slot (ordered-window.ts takes a scheduler permit; page-slot.ts holds it for the page's requests)
 *   → request and body (page-fetcher.ts through the client's `PageTransport`; the query's first page is
 *     already in hand as a `KeptPage`)
 *   → decode (decode/PageDecoder) → convert (convert/page-converters.ts, with the batch policy)
 *   → order (the window hands pages back strictly in row order, bounded in pages and bytes).
 *
 * `ResultStream` is only its face: it resolves the query, then pulls chunks from `chunks()` as Node's
 * buffer has room, which is what stops new requests when the consumer is slow.
 */
import type { Schema } from 'apache-arrow';
import {
  arrowConverter,
  buildSchema,
  type Chunk,
  type ConverterOptions,
  planColumns,
  RecordBatchBuilder,
  rowConverter,
} from '../convert/index.js';
import { DqsError, TruncatedError } from '../core/errors.js';
import { PageDecoder } from '../decode/index.js';
import type { RetryEvent } from '../transport/retry.js';
import { adaptiveConcurrency, FixedConcurrency } from './concurrency.js';
import { HedgePolicy } from './hedge.js';
import { OrderedWindow, type WindowTask } from './ordered-window.js';
import { fetchPage, type PageData, type PageFetchContext } from './page-fetcher.js';
import { checkRowLimit, PagePlan, TARGET_PAGE_BYTES } from './page-plan.js';
import { PageSlot, type Pauses } from './page-slot.js';
import type { LocalMark, ResultSource } from './result-source.js';
import { type ConcurrencyChange, RequestScheduler } from './scheduler.js';
import type { SplitInfo } from './split-info.js';
import { chooseFormat, DEFAULT_MAX_CONCURRENCY, type NormalizedStreamOptions } from './stream-options.js';

/** A page converted and pushed: its progress is due once the consumer has read row `end - 1`. */
export type PageMark = Omit<LocalMark, 'source'> & { readonly source?: LocalMark['source'] };

/** What the engine tells the stream it feeds. */
export interface EngineEvents {
  schema(schema: Schema): void;
  /** A result of `split: true` read in parts: which (after the schema). */
  split(info: SplitInfo): void;
  truncated(info: { total: number }): void;
  retry(event: RetryEvent): void;
  concurrency(change: ConcurrencyChange): void;
  /** A page's chunks follow: its mark, for `'progress'` once the consumer has read them. */
  mark(mark: PageMark): void;
}

export class PageEngine {
  readonly #source: ResultSource;
  readonly #options: NormalizedStreamOptions;
  readonly #events: EngineEvents;
  readonly #signal: AbortSignal;
  readonly #hedge: HedgePolicy;
  readonly #fetch: typeof fetchPage;
  readonly #keepsRows: boolean;
  #window: OrderedWindow<PageData> | undefined;
  #scheduler: RequestScheduler | undefined;

  constructor(
    source: ResultSource,
    options: NormalizedStreamOptions,
    events: EngineEvents,
    signal: AbortSignal,
    hedge: HedgePolicy = new HedgePolicy(),
    /** How a page is fetched: `fetchPage`, or it wrapped (telemetry's span per page). */
    fetch: typeof fetchPage = fetchPage,
    /**
     * The consumer keeps every row it is given (`toArray()`): row objects are then made as a page is
     * decoded, straight from its bytes. A consumer that reads rows and drops them gets them made a slice
     * at a time instead, from decoded columns: the pages waiting in the window hold no objects, which
     * would outlive the young generation (measured: 1.7x the time of `lib-rows`, bench/run.js).
     */
    keepsRows = false,
  ) {
    this.#fetch = fetch;
    this.#keepsRows = keepsRows;
    this.#source = source;
    this.#options = options;
    this.#events = events;
    this.#signal = signal;
    this.#hedge = hedge;
  }

  /** Rows this stream will emit in all (the total minus rows skipped by `startRow`). */
  get toEmit(): number {
    return Math.max(0, this.#source.total - this.#options.startRow + 1);
  }

  /** Pages requested so far. */
  get pagesStarted(): number {
    return this.#window?.started ?? 0;
  }

  /** The scheduler's limit, once pages are being read. */
  get limit(): number | undefined {
    return this.#scheduler?.limit;
  }

  /** Aborts every page in flight; nothing more starts. */
  cancel(reason: unknown): void {
    this.#window?.cancel(reason);
  }

  /** The result's output, page by page, in row order. */
  async *chunks(): AsyncGenerator<Chunk[], void, undefined> {
    const source = this.#source;
    const opts = this.#options;
    const signal = this.#signal;
    // Before any page: a total the server made up must not be read (nor planned). Each part of a split
    // result was a query of its own, held to the limit on its own.
    checkRowLimit(source.total, opts.maxRows * (source.split?.parts.length ?? 1));
    const plan = planColumns([...source.fields], opts.types ? { ...opts.types } : undefined, opts.bigNumbers);
    const schema = buildSchema(plan);
    this.#events.schema(schema);
    if (source.split) this.#events.split(source.split);
    if (source.truncated) {
      if (opts.onTruncated === 'error') throw new TruncatedError(source.total);
      this.#events.truncated({ total: source.total });
    }
    const local = source.local?.open({
      options: opts,
      plan,
      schema,
      signal,
      retry: (event) => this.#events.retry(event),
    });
    if (local) {
      for await (const step of local) {
        for (const mark of step.marks ?? []) this.#events.mark(mark);
        if (step.chunks.length) yield step.chunks as Chunk[];
      }
      return;
    }
    const { format, mediaType } = chooseFormat(opts.format, source.formats);
    const pages = new PagePlan(
      opts.startRow,
      source.total,
      opts.pageSize,
      opts.pageSizeAuto
        ? { windowBytes: opts.windowBytes, rateLimited: () => source.pages.rateLimited }
        : undefined,
    );
    // The page read with the query (its descriptors came from it) is the stream's first, if it fits.
    // (Not when the caller chose smaller pages than it: their progress and batches follow their size.)
    const kept = opts.startRow === 1 && format === 'json' ? source.takeFirstPage?.() : undefined;
    const first = kept && (opts.pageSizeAuto || kept.range.limit <= opts.pageSize) ? kept : undefined;
    // Fast decoders (bytes straight into columns) feed Arrow batches and row objects alike.
    const decoder = new PageDecoder(format, plan, {
      // The fast decoders fill Float64 columns: exact numbers come from the reference's wire values.
      fast: opts.decoder === 'fast' && opts.bigNumbers === 'error',
      strings: opts.output === 'rows' ? 'exact' : 'utf8',
      // Row objects straight from table JSON's bytes, without columns in between, when all are kept.
      rows: opts.output === 'rows' && this.#keepsRows ? { dates: opts.dates } : undefined,
      invalidUtf8: opts.invalidUtf8,
      budget: source.pages.loopBudget,
    });
    const scheduler = this.#schedulerFor(source);
    this.#scheduler = scheduler;
    const detachScheduler = scheduler.onChange((change) => this.#events.concurrency(change));
    // The kept page shows the bytes per row before any other page is planned: the first requests already
    // ask for pages of the size the plan aims at.
    if (first) {
      const rows = first.range.limit;
      pages.learn({ parts: [], rowCount: rows, bytes: first.bytes.length, requests: 1 });
      if (first.waitMs !== undefined) pages.answered(rows, first.waitMs);
      // Its rows are read: what is left (which `spread` cuts) starts after them.
      pages.skip(first.range);
    }
    // A far service (the query's own requests were slow to answer) starts from more requests at once, and
    // grows per answer up to what the byte budget holds (the window then bounds what is held and in flight).
    const pageBytes = pages.pageBytes ?? TARGET_PAGE_BYTES;
    scheduler.prime(source.pages.fastestAnswerMs, Math.floor(opts.windowBytes / pageBytes));
    const spread = pages.spread(scheduler.limit);
    // A spread result the byte budget holds whole goes out whole: waiting for answers before sending the
    // rest would cost a service's wait per step (`planned`). The rest wait twice the quickest answer,
    // which a refusal by a service that caps requests in flight takes at most (a new connection's
    // handshake, then the request).
    if (
      spread > scheduler.limit &&
      spread * (pages.pageBytes ?? Number.POSITIVE_INFINITY) <= opts.windowBytes
    ) {
      scheduler.planned(spread, 2 * (source.pages.fastestAnswerMs ?? 0));
    }
    const ctx: PageFetchContext = {
      pages: source.pages,
      datasetId: source.datasetId,
      queryId: source.id,
      total: source.total,
      mediaType,
      decoder,
      maxResponseBytes: source.pages.maxResponseBytes,
      timeoutMs: opts.timeoutMs,
      hedge: opts.hedge ? this.#hedge : undefined,
      answered: (rows, waitMs) => {
        if (pages.answered(rows, waitMs)) window.retract();
      },
    };
    // Pages of this stream waiting out a pause before a retry (a Retry-After, most often): each holds
    // its slot in the window while the consumer waits for it.
    const pauses: Pauses = { count: 0 };
    const fetch = this.#fetch;
    const retry = (event: RetryEvent) => this.#events.retry(event);
    const read = (run: Promise<PageData>) =>
      run.then((page) => {
        // Requests turned out metered, and pages are now larger: those planned but still waiting for a
        // slot are planned anew (under 20 requests a minute, 10 pages of 5,000 rows became one request).
        if (pages.learn(page)) window.retract();
        return page;
      });
    let firstTask: WindowTask<PageData> | undefined;
    if (first) {
      firstTask = {
        local: true,
        run: (s) =>
          read(fetch(ctx, first.range, s, new PageSlot(undefined, undefined, pauses, retry), first)),
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
        return {
          run: (s, permit) => read(fetch(ctx, range, s, new PageSlot(scheduler, permit, pauses, retry))),
          giveBack: () => pages.giveBack(range),
        };
      },
      {
        scheduler,
        // A fixed concurrency keeps its documented window (2 x). 'auto' holds as many pages again as are in
        // flight (at least 2 more: a slow consumer on loopback, at a limit of 2, holds 4 pages), and as
        // many again for each page waiting out a Retry-After: the consumer waits for that page, and
        // without the room the other requests would stop too, for a second or more (under a cap of 6 on
        // the WAN bench, a page refused twice held the link idle 0.6 s). windowBytes bounds it all.
        maxPages: () =>
          opts.window ??
          (opts.concurrency === 'auto'
            ? Math.max(scheduler.limit + 2, 2 * scheduler.limit) + pauses.count * scheduler.limit
            : 2 * scheduler.limit),
        maxBytes: opts.windowBytes,
        sizeOf: (page) => page.bytes,
        // Before any page has arrived, pages in flight count at the planned size (the first page showed
        // the bytes per row): a far service's startup may otherwise plan far past the budget.
        expectedSize: () => pages.pageBytes,
      },
    );
    this.#window = window;
    const onAbort = () => window.cancel(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    let bytes = 0;
    let pageCount = 0;
    try {
      const convertOptions: ConverterOptions = opts;
      const recycle = decoder.recycle.bind(decoder);
      const convert =
        opts.output === 'arrow'
          ? arrowConverter(plan, convertOptions, recycle)
          : rowConverter(plan, convertOptions, recycle);
      if (this.toEmit === 0 && opts.output === 'arrow') {
        // An empty result still carries its schema, so writers and `toTable()` know the columns.
        yield [new RecordBatchBuilder(plan, { onInvalid: opts.onInvalid }).flush()];
        return;
      }
      for (;;) {
        const next = await window.next();
        if (next.done) break;
        const page = next.value;
        // A turn of the event loop before each page's conversion (~1-4 ms, more while the code is cold):
        // pages already waiting in the window were otherwise converted back to back in one turn (4 pages,
        // 17 ms, seen among the >15 ms stalls of a 500k-row toTable()).
        await new Promise<void>((resolve) => setImmediate(resolve));
        // Converts the page, or at least checks it: an invalid value fails here, before any of its rows.
        const pieces = convert.page(page);
        bytes += page.bytes;
        pageCount++;
        // Reported once the consumer has taken the page's last row.
        this.#events.mark({ end: page.range.start + page.rowCount, pages: pageCount, bytes });
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
   * `'auto'` streams share their client's scheduler (one limit for all its queries), unless they set their
   * own `maxConcurrency`; a fixed concurrency gets a scheduler of its own.
   */
  #schedulerFor(source: ResultSource): RequestScheduler {
    const opts = this.#options;
    if (opts.concurrency !== 'auto') return new RequestScheduler(new FixedConcurrency(opts.concurrency));
    if (opts.maxConcurrency === undefined && source.scheduler) return source.scheduler;
    return new RequestScheduler(
      adaptiveConcurrency(opts.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY, source.pages.rateLimited),
    );
  }
}
