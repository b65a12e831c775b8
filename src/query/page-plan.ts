/**
 * The page plan: which rows to ask for next, and how many per page. It is a cursor, not a list, so its
 * memory is O(1) whatever total the server claims (a list of `{start, limit}` for `X-Total: 10^12` took
 * gigabytes before the first row was read), and it sizes the pages planned after each page that arrives
 * (bytes per row, a server that clamps, a rate limit).
 */
import { type PagePart, partLength } from '../convert/page-parts.js';
import { type PageRef, RowLimitError } from '../core/errors.js';

/**
 * Pages of about this many bytes, once the first page has shown the bytes per row. Every request pays a
 * round trip and the service's fixed cost per page (measured in bench/wan.js: 40 ms + 30 ms a page), so
 * pages much smaller than this spend their time on overhead, under a cap on requests in flight most of
 * all; much larger ones make the window (`windowBytes`) hold few pages and the first batch come late.
 */
export const TARGET_PAGE_BYTES = 4.5e6;
const MIN_AUTO_PAGE = 1000;
/** `spread()`: the pages in flight at first, and as many again planned behind them. */
const SPREAD_WAVES = 2;
const MAX_AUTO_PAGE = 50_000;
/** With metered requests (a rate limit, set or learned), pages are this many rows at most. */
const MAX_METERED_PAGE = 100_000;

/** How a plan with `pageSize: 'auto'` sizes its pages. */
export interface PageSizing {
  /** Bytes the stream's window may hold: a metered plan asks for pages of half of it. */
  readonly windowBytes: number;
  /** Whether requests are metered now (a rate limit, set or learned). */
  readonly rateLimited: () => boolean;
}

/** What the plan learns from: a page that has arrived. */
export interface ArrivedPage {
  readonly parts: readonly PagePart[];
  readonly rowCount: number;
  /** Decoded body bytes. */
  readonly bytes: number;
  /** Requests it took (more than 1: the server answered short). */
  readonly requests: number;
}

/** One page request: 1-based `start` and the number of rows asked for (the `PageRef` errors name). */
export type PageRange = PageRef;

export class PagePlan {
  /** First row not yet handed out. */
  #next: number;
  /** Last row of the result (1-based, inclusive). */
  readonly #last: number;
  #pageSize: number;
  /** The most rows the server answered to a bigger `limit` (it clamps): no page asks for more. */
  #clamp = Number.POSITIVE_INFINITY;

  /** Set for `pageSize: 'auto'`: how pages are sized from what arrives. */
  readonly #sizing: PageSizing | undefined;
  /** The bytes per row have set the page size (once). */
  #sized: boolean;
  /** Requests turned out metered: pages were made as large as the window allows (once). */
  #metered = false;
  /** Rows of the next page only: the rest of a whole page after a shorter prefetched one (`skip`). */
  #short: number | undefined;
  /** What the service's time to first byte says of its cost per row (`ServiceCost`). */
  readonly #cost = new ServiceCost();
  /** The page size the bytes per row gave (the most rows a page may have under `'auto'`). */
  #byteRows = MAX_AUTO_PAGE;
  #perRowBytes: number | undefined;
  /** Pages are spread smaller than the byte target until the service's cost is known (`spread()`). */
  #spread = false;

  constructor(startRow: number, total: number, pageSize: number, sizing?: PageSizing) {
    this.#next = startRow;
    this.#last = total;
    this.#pageSize = pageSize;
    this.#sizing = sizing;
    this.#sized = sizing === undefined;
  }

  /**
   * Sizes the pages planned from now on from a page that has arrived (as soon as it has, not when the
   * consumer reaches it: by then a fast link would have planned the whole result at the first guess).
   * Never more rows than a server that clamps `limit` answers (a page that took more than one request
   * shows it); with `'auto'`, ~TARGET_PAGE_BYTES pages at the first page's bytes per row; and under a rate
   * limit, where requests rather than bytes are what a result costs, the rest in as few pages as the
   * window holds two of (so one can be read while the next arrives).
   */
  learn(page: ArrivedPage): boolean {
    const firstPart = page.parts[0];
    const answered = firstPart === undefined ? 0 : partLength(firstPart);
    if (page.requests > 1 && answered > 0) this.clampTo(answered);
    const sizing = this.#sizing;
    if (sizing === undefined || page.rowCount === 0) return false;
    const perRow = page.bytes / page.rowCount;
    if (!this.#sized) {
      this.#sized = true;
      this.#perRowBytes = perRow;
      const rows = Math.round(TARGET_PAGE_BYTES / perRow / 1000) * 1000;
      this.#byteRows = Math.max(MIN_AUTO_PAGE, Math.min(MAX_AUTO_PAGE, rows));
      this.pageSize = this.#byteRows;
    }
    if (!this.#metered && sizing.rateLimited()) {
      this.#metered = true;
      const rows = Math.floor(sizing.windowBytes / 2 / perRow / 1000) * 1000;
      const before = this.#pageSize;
      this.pageSize = Math.max(this.#pageSize, Math.min(MAX_METERED_PAGE, rows));
      // Pages planned at the old size and not yet requested would each cost a request: plan them anew.
      return this.#pageSize >= 2 * before;
    }
    return false;
  }

  /**
   * A page request was answered (its headers came) `waitMs` after it was sent, for `rows` asked: what
   * the service's cost per row is learned from, as soon as the answers come (not when their pages have
   * arrived whole, by when many more would have been planned at the old size). With `'auto'` only.
   * Returns true when the pages planned but still waiting for a slot should be planned anew (they were
   * `spread()` smaller than the cost now calls for).
   */
  answered(rows: number, waitMs: number): boolean {
    if (this.#sizing === undefined || !this.#sized || this.#metered) return false;
    const sized = this.#cost.add(rows, waitMs, this.#byteRows);
    if (!this.#cost.decided) return false;
    const spread = this.#spread;
    this.#spread = false;
    if (sized === undefined || sized >= this.#byteRows) {
      // The rows' cost does not call for smaller pages: those planned from now on are byte-sized. Those
      // already planned keep their size: made bigger, the last pages of a result would end alone, on too
      // few connections to fill the link (a link 10x slower than the bench's: 5.06 s against 4.97).
      if (spread) this.pageSize = this.#byteRows;
      return false;
    }
    // Halvings of the byte target, at most MAX_COST_CUT times smaller. Halvings: page boundaries stay the
    // same from run to run whatever the measured waits (a cache of pages keyed by start and limit, the
    // service's or a proxy's, keeps hitting; the WAN bench's emulator rebuilt every page of sizes that
    // drifted by 1,000 rows, on the client's cores). At most MAX_COST_CUT: the first page was sent alone
    // and the bigger ones together, so a service that slows down under load looks dearer per row than it
    // is (an emulator sharing the client's two cores made 10,000-row pages 1,000), and past a few
    // thousand rows `max` requests in flight hold the bytes the link needs anyway.
    let cut = 2;
    while (cut < MAX_COST_CUT && this.#byteRows / (cut * 2) >= sized) cut *= 2;
    const before = this.#pageSize;
    this.pageSize = Math.max(MIN_AUTO_PAGE, Math.round(this.#byteRows / cut / 1000) * 1000);
    // Pages planned at the spread size and still waiting for a slot are planned anew if this is smaller
    // (bigger: see above).
    return spread && this.#pageSize < before;
  }

  /**
   * Spreads what is left over `slots` requests at once, twice over, while the service's cost per row is
   * not known yet (`ServiceCost`): a result the byte target would cut into fewer pages than that (a
   * small one, or narrow rows) was otherwise planned whole at once, from the first page alone, before a
   * single answer could tell whether its rows make a big page wait (193,000 rows of 165 bytes: 7 pages of
   * 27,000 rows, each waiting ~0.6 s for its first byte on the WAN bench, where 7,000-row pages wait 0.2
   * s). Twice over: the first `slots` pages go out and answer, the cost is known from them, and the pages
   * still waiting for a slot are planned anew if it calls for smaller ones (`answered()` returns true).
   * Never smaller than the cost could make them (`MAX_COST_CUT`), nor than `MIN_AUTO_PAGE`.
   */
  spread(slots: number): number {
    if (this.#sizing === undefined || !this.#sized || this.#metered || this.#cost.decided) return 0;
    const rest = this.#last - this.#next + 1;
    const rows = Math.ceil(rest / (SPREAD_WAVES * Math.max(1, slots)) / 1000) * 1000;
    const floor = Math.max(MIN_AUTO_PAGE, Math.round(this.#byteRows / MAX_COST_CUT / 1000) * 1000);
    const spreadRows = Math.max(floor, rows);
    if (spreadRows >= this.#pageSize) return 0;
    this.pageSize = spreadRows;
    this.#spread = true;
    return Math.ceil(rest / this.#pageSize);
  }

  /** Decoded bytes a page planned now is expected to hold, once a page has shown the bytes per row. */
  get pageBytes(): number | undefined {
    return this.#perRowBytes === undefined ? undefined : this.#perRowBytes * this.#pageSize;
  }

  /** Rows per page from now on (pages already handed out keep theirs). */
  get pageSize(): number {
    return this.#pageSize;
  }

  set pageSize(rows: number) {
    this.#pageSize = Math.max(1, Math.min(this.#clamp, Math.floor(rows)));
  }

  /** The server answered only `rows` rows to a bigger `limit`: pages from now on ask for no more. */
  clampTo(rows: number): void {
    this.#clamp = Math.min(this.#clamp, Math.max(1, Math.floor(rows)));
    this.pageSize = this.#pageSize;
  }

  /** True once every row has been handed out. */
  get done(): boolean {
    return this.#next > this.#last;
  }

  /** The next page, or undefined after the last. */
  next(): PageRange | undefined {
    if (this.#next > this.#last) return undefined;
    const start = this.#next;
    const limit = Math.min(this.#short ?? this.#pageSize, this.#pageSize, this.#last - start + 1);
    this.#short = undefined;
    this.#next = start + limit;
    return { start, limit };
  }

  /**
   * Takes back `range`, the last range handed out, never requested: its rows are handed out again, in
   * pages of the size planned now. Ranges are given back latest first, so the cursor only moves back.
   */
  giveBack(range: PageRange): void {
    if (range.start + range.limit !== this.#next) {
      throw new Error(`PagePlan: rows ${range.start}+${range.limit} are not the last handed out`);
    }
    this.#next = range.start;
  }

  /**
   * Takes rows `start..start+limit-1` as already read (a page prefetched with the query). With a page
   * size of the caller's own, a shorter prefetched page is made up to a whole one by the next page, so
   * the pages after it start where theirs would (1,000 rows read with the query, pages of 5,000: the next
   * asks for 4,000, then 5,001 onwards).
   */
  skip(range: PageRange): void {
    const end = range.start + range.limit;
    if (this.#sizing === undefined && range.start === this.#next && range.limit < this.#pageSize) {
      this.#short = this.#pageSize - range.limit;
    }
    this.#next = Math.max(this.#next, end);
  }
}

/**
 * Pages are sized so that the rows' share of a page's wait for its first byte is about this many times
 * the service's fixed share (round trip and per-request work): where the service spends time per row,
 * a bigger page makes every page wait longer for its first byte (bytes in flight must cover that wait,
 * and pages sent together end together), while smaller pages cost requests; where rows cost nearly
 * nothing, the byte target decides alone. Applied only where the rows dominate (ROWS_DOMINATE): on the
 * WAN bench (70 ms fixed, 0.02 ms a row: 200 ms for a 10,000-row page's rows) the byte target stays; with
 * ten times the cost per row, 700 rows by this rule, a quarter of the byte target (MAX_COST_CUT).
 */
const ROW_SHARE = 2;
/** Pages are made smaller only where a byte-target page's rows wait this many times its fixed cost. */
const ROWS_DOMINATE = 4;
/**
 * Pages are made smaller than the byte target only when its rows wait this long for the service: the
 * WAN bench's 10,000-row pages wait 200 ms for theirs, a loopback emulator's 27,000-row pages 5 ms.
 */
const MIN_ROW_WAIT_MS = 50;
/** The service's cost per row makes pages at most this many times smaller than the byte target. */
const MAX_COST_CUT = 4;
/** Answers of one size whose quickest counts: the quickest of a few is free of queueing and stalls. */
const COST_SAMPLES = 3;

/**
 * The service's time to first byte as a function of rows per page: `fixed + rows x perRow`, fitted
 * through the quickest answer of the smallest page size seen (the query's first page, alone on the link)
 * and of the largest (once it has answered COST_SAMPLES times), sizes at least twice apart. The quickest,
 * not the mean: queueing, a busy event loop and new connections only ever add to a wait.
 */
export class ServiceCost {
  #small: { rows: number; ms: number; n: number } | undefined;
  #large: { rows: number; ms: number; n: number } | undefined;
  #decided = false;

  /** Whether the answers so far have told the cost per row (then no answer changes anything). */
  get decided(): boolean {
    return this.#decided;
  }

  /**
   * One answer: `rows` asked for, answered after `ms`. Returns the page size to use instead of
   * `byteRows` (the byte target's), once known (once); undefined to keep it.
   */
  add(rows: number, ms: number, byteRows: number): number | undefined {
    if (!(ms >= 0) || rows < 1 || this.#decided) return undefined;
    const small = this.#small;
    if (small === undefined || rows < small.rows) this.#small = { rows, ms, n: 1 };
    else if (rows === small.rows) this.#small = { rows, ms: Math.min(small.ms, ms), n: small.n + 1 };
    const large = this.#large;
    if (large === undefined || rows > large.rows) this.#large = { rows, ms, n: 1 };
    else if (rows === large.rows) this.#large = { rows, ms: Math.min(large.ms, ms), n: large.n + 1 };
    const a = this.#small!;
    const b = this.#large!;
    if (b.rows < 2 * a.rows || b.n < COST_SAMPLES) return undefined;
    this.#decided = true;
    const perRow = (b.ms - a.ms) / (b.rows - a.rows);
    const fixed = a.ms - a.rows * perRow;
    // Rows whose wait is small whatever their number (a near service, a cached result: a few ms for a
    // byte-target page on loopback, where the emulator builds pages as it answers): the byte target decides.
    if (!(perRow > 0) || !(fixed > 0) || byteRows * perRow < MIN_ROW_WAIT_MS) return undefined;
    // Nor unless the rows dominate a byte-target page's wait: smaller pages cost requests, which a
    // service that meters them (20 a minute on the WAN bench) refuses sooner, and on the WAN bench's
    // service (its rows 2.9x the fixed cost) 5,000-row pages were no faster than 10,000-row ones.
    if (byteRows * perRow < ROWS_DOMINATE * fixed) return undefined;
    return Math.round((ROW_SHARE * fixed) / perRow / 1000) * 1000;
  }
}

/**
 * The guard on what the server says about size: a total above `maxRows` is refused before any page is
 * read. The spec caps results at 500,000 rows, so by default a bigger total is a broken or hostile
 * server, and reading it would never end (or fill memory).
 */
export function checkRowLimit(total: number, maxRows: number): void {
  if (total > maxRows) throw new RowLimitError(total, maxRows);
}
