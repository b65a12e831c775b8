/**
 * The page engine: one owner for a page's way from the plan to the consumer.
 *
 *   plan (page-plan.ts: which rows, how many per page, from the link model when the request can leave)
 *   → requests (page-requests.ts: each a task of the scheduler's queue, its limit the link model's)
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
import { AdaptiveConcurrency, FixedConcurrency } from './concurrency.js';
import { HedgePolicy } from './hedge.js';
import { OrderedWindow, type WindowTask } from './ordered-window.js';
import { fetchPage, type PageData, type PageFetchContext } from './page-fetcher.js';
import { checkRowLimit, PagePlan, type PageRange } from './page-plan.js';
import { PageRequests, type Pauses } from './page-requests.js';
import type { KeptPage, LocalMark, ResultSource } from './result-source.js';
import { type ConcurrencyChange, RequestScheduler } from './scheduler.js';
import type { SplitInfo } from './split-info.js';
import { chooseFormat, DEFAULT_MAX_CONCURRENCY, type NormalizedStreamOptions } from './stream-options.js';

/** A page converted and pushed: its progress is due once the consumer has read row `end - 1`. */
export type PageMark = Omit<LocalMark, 'source'> & { readonly source?: LocalMark['source'] };

/** One result read as a run of pages: a whole result, or a part of a split one. */
interface Segment {
  /** The row of the whole result its row 1 is. */
  readonly firstRow: number;
  readonly ctx: PageFetchContext;
  readonly plan: PagePlan;
  /** Its first page, read with its query, still to be handed to the window. */
  kept: KeptPage | undefined;
}

/** A page of a segment, as the window holds it. */
interface SegmentPage {
  readonly page: PageData;
  readonly segment: Segment;
}

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
  #window: OrderedWindow<SegmentPage> | undefined;
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
    const scheduler = this.#schedulerFor(source);
    this.#scheduler = scheduler;
    const detachScheduler = scheduler.onChange((change) => this.#events.concurrency(change));
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
    // The result's pages, as one run: the result itself, or each part of a split one after the other
    // (one window over them all, so the next part's pages go out while this one's drain, under one
    // scheduler and one byte budget, and one converter builds every batch).
    const segments = this.#segments(source, format, scheduler, {
      mediaType,
      decoder,
      maxResponseBytes: source.pages.maxResponseBytes,
      timeoutMs: opts.timeoutMs,
      hedge: opts.hedge ? this.#hedge : undefined,
    });
    // Pages of this stream waiting out a pause before a retry (a Retry-After, most often): each holds
    // its slot in the window while the consumer waits for it.
    const pauses: Pauses = { count: 0 };
    const fetch = this.#fetch;
    const retry = (event: RetryEvent) => this.#events.retry(event);
    const task =
      (segment: Segment, range: PageRange, kept?: KeptPage): WindowTask<SegmentPage> =>
      (s) =>
        fetch(segment.ctx, range, s, new PageRequests(scheduler, pauses, retry), kept).then((page) => {
          segment.plan.learn(page);
          return { page, segment };
        });
    let segment = segments.next().value;
    const window = new OrderedWindow<SegmentPage>(
      () => {
        for (;;) {
          if (segment === undefined) return undefined;
          const kept = segment.kept;
          if (kept) {
            segment.kept = undefined;
            return task(segment, kept.range, kept);
          }
          if (!segment.plan.done) {
            // A page is planned when its request can be sent: sized from all that was measured by then.
            if (!scheduler.room) return null;
            return task(segment, segment.plan.next()!);
          }
          segment = segments.next().value;
        }
      },
      {
        // A fixed concurrency keeps its documented window (2 x). 'auto' holds as many pages again as are in
        // flight (at least 2 more: a slow consumer on loopback, at a limit of 2, holds 4 pages), and as
        // many again for each page waiting out a Retry-After: the consumer waits for that page, and
        // without the room the other requests would stop too. windowBytes bounds it all.
        maxPages: () =>
          opts.window ??
          (opts.concurrency === 'auto'
            ? Math.max(scheduler.limit + 2, 2 * scheduler.limit) + pauses.count * scheduler.limit
            : 2 * scheduler.limit),
        maxBytes: opts.windowBytes,
        sizeOf: (item) => item.page.bytes,
        // Before any page has arrived, pages in flight count at the planned size (the first page showed
        // the bytes per row).
        expectedSize: () => segment?.plan.pageBytes,
        wake: (fill) => scheduler.onRoom(fill),
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
        const { page, segment: part } = next.value;
        // A turn of the event loop before each page's conversion (~1-4 ms, more while the code is cold):
        // pages already waiting in the window were otherwise converted back to back in one turn (4 pages,
        // 17 ms, seen among the >15 ms stalls of a 500k-row toTable()).
        await new Promise<void>((resolve) => setImmediate(resolve));
        // Converts the page, or at least checks it: an invalid value fails here, before any of its rows.
        const pieces = convert.page(page);
        bytes += page.bytes;
        pageCount++;
        // Reported once the consumer has taken the page's last row (counted in the whole result).
        const end = part.firstRow + page.range.start + page.rowCount - 1;
        this.#events.mark({ end, pages: pageCount, bytes });
        for (const out of pieces) if (out.length) yield out;
        if (end > source.total) {
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
   * The runs of pages a result is read as, in order: the result itself, or each part of a split result
   * (from the part holding `startRow` on). A part's first page read with its query serves it, if it fits.
   */
  *#segments(
    source: ResultSource,
    format: string,
    scheduler: RequestScheduler,
    shared: Omit<PageFetchContext, 'pages' | 'datasetId' | 'queryId' | 'total'>,
  ): Generator<Segment, void, undefined> {
    const opts = this.#options;
    const parts = source.parts ?? [{ firstRow: 1, source }];
    let firstWave = true;
    for (const { firstRow, source: part } of parts) {
      const from = Math.max(1, opts.startRow - firstRow + 1);
      if (from > part.total) continue;
      const plan = new PagePlan(
        from,
        part.total,
        opts.pageSize,
        opts.pageSizeAuto
          ? {
              link: scheduler.link,
              now: () => performance.now(),
              windowBytes: opts.windowBytes,
              rateLimited: () => part.pages.rateLimited,
              scarce: () => scheduler.capped,
            }
          : undefined,
      );
      // The page read with the query (its descriptors came from it) is the part's first, if it fits.
      // (Not when the caller chose smaller pages than it: their progress and batches follow their size.)
      const inHand = from === 1 && format === 'json' ? part.takeFirstPage?.() : undefined;
      const kept = inHand && (opts.pageSizeAuto || inHand.range.limit <= opts.pageSize) ? inHand : undefined;
      if (kept) {
        // Its bytes per row size the first requests, its wait and body the first wave; its rows are read.
        plan.learn({ parts: [], rowCount: kept.range.limit, bytes: kept.bytes.length, requests: 1 });
        if (firstWave && kept.waitMs !== undefined && kept.bodyMs !== undefined) {
          scheduler.firstPage({ waitMs: kept.waitMs, bodyMs: kept.bodyMs });
        }
        plan.skip(kept.range);
      }
      firstWave = false;
      const ctx: PageFetchContext = {
        ...shared,
        pages: part.pages,
        datasetId: part.datasetId,
        queryId: part.id,
        total: part.total,
      };
      yield { firstRow, ctx, plan, kept };
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
    const pages = source.pages;
    return new RequestScheduler(
      new AdaptiveConcurrency({
        max: opts.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY,
        metered: () => pages.rateLimited,
      }),
    );
  }
}
