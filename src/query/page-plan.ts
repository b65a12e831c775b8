/**
 * The page plan: which rows to ask for next, and how many. It is a cursor, not a list, so its memory is
 * O(1) whatever total the server claims (a list of `{start, limit}` for `X-Total: 10^12` took gigabytes
 * before the first row was read), and with `pageSize: 'auto'` each page is sized when it is handed out,
 * from what the link model has measured by then (`LinkModel.pageRows`).
 */
import { type PagePart, partLength } from '../convert/page-parts.js';
import { type PageRef, RowLimitError } from '../core/errors.js';
import { PAGE_BYTES_MAX, PAGE_BYTES_MIN, PAGE_ROWS_UNIT, STARTUP_SIZE_RATIO } from './link-constants.js';
import { type LinkModel, onLadder } from './link-model.js';

/** How a plan with `pageSize: 'auto'` sizes its pages. */
export interface PageSizing {
  readonly link: LinkModel;
  readonly now: () => number;
  /** Bytes the stream's window may hold: a metered plan asks for pages of half of it. */
  readonly windowBytes: number;
  /** Whether requests are metered now (a rate limit, set or learned). */
  readonly rateLimited: () => boolean;
  /** Whether the service caps requests in flight below what the link could use (a 429's ceiling). */
  readonly scarce?: () => boolean;
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
  /** Rows per page: the caller's, or under `'auto'` the size handed out last. */
  #pageSize: number;
  /** The most rows the server answered to a bigger `limit` (it clamps): no page asks for more. */
  #clamp = Number.POSITIVE_INFINITY;
  /** Set for `pageSize: 'auto'`. */
  readonly #sizing: PageSizing | undefined;
  /** Bytes and rows of the pages seen, for the bytes per row. */
  #bytes = 0;
  #rows = 0;
  /** Pages handed out while the service's cost was unknown: they alternate between two sizes. */
  #probes = 0;
  /** Rows of the next page only: the rest of a whole page after a shorter prefetched one (`skip`). */
  #short: number | undefined;

  constructor(startRow: number, total: number, pageSize: number, sizing?: PageSizing) {
    this.#next = startRow;
    this.#last = total;
    this.#pageSize = pageSize;
    this.#sizing = sizing;
    if (sizing) this.#pageSize = PAGE_ROWS_UNIT * STARTUP_SIZE_RATIO;
  }

  /**
   * A page has arrived (as soon as it has, not when the consumer reaches it): its bytes per row size the
   * pages planned from now on, and a page that took more than one request shows a server that clamps
   * `limit` (no page asks for more than it answered).
   */
  learn(page: ArrivedPage): void {
    const firstPart = page.parts[0];
    const answered = firstPart === undefined ? 0 : partLength(firstPart);
    if (page.requests > 1 && answered > 0) this.clampTo(answered);
    if (page.rowCount > 0) {
      this.#bytes += page.bytes;
      this.#rows += page.rowCount;
    }
  }

  /** Bytes per row of the pages seen, if any. */
  get bytesPerRow(): number | undefined {
    return this.#rows > 0 ? this.#bytes / this.#rows : undefined;
  }

  /** Decoded bytes a page planned now is expected to hold, once a page has shown the bytes per row. */
  get pageBytes(): number | undefined {
    const perRow = this.bytesPerRow;
    return perRow === undefined ? undefined : perRow * Math.min(this.#pageSize, this.#clamp);
  }

  /** Rows per page: the caller's, or the size handed out last (pages already handed out keep theirs). */
  get pageSize(): number {
    return this.#pageSize;
  }

  /** The server answered only `rows` rows to a bigger `limit`: pages from now on ask for no more. */
  clampTo(rows: number): void {
    this.#clamp = Math.min(this.#clamp, Math.max(1, Math.floor(rows)));
  }

  /** True once every row has been handed out. */
  get done(): boolean {
    return this.#next > this.#last;
  }

  /** Rows not yet handed out. */
  get remaining(): number {
    return Math.max(0, this.#last - this.#next + 1);
  }

  /** The next page, sized now, or undefined after the last. */
  next(): PageRange | undefined {
    if (this.#next > this.#last) return undefined;
    const start = this.#next;
    let limit = this.#short ?? this.#pageSize;
    this.#short = undefined;
    if (this.#sizing) limit = this.#autoRows(start);
    limit = Math.max(1, Math.min(limit, this.#clamp, this.#last - start + 1));
    this.#next = start + limit;
    return { start, limit };
  }

  /**
   * Under `'auto'`: under a rate limit, where requests rather than bytes are what a result costs, the
   * rest in pages of half the window (one is read while the next arrives); else the link model's size,
   * ending on a multiple of it (boundaries stay the same from run to run, and for a cache of pages); while
   * the service's cost is unknown, two sizes in turn, which tell it.
   */
  #autoRows(start: number): number {
    const sizing = this.#sizing!;
    const perRow = this.bytesPerRow;
    if (perRow !== undefined && sizing.rateLimited()) {
      const rows = Math.floor(sizing.windowBytes / 2 / perRow / PAGE_ROWS_UNIT) * PAGE_ROWS_UNIT;
      this.#pageSize = Math.max(this.#pageSize, rows);
      return this.#pageSize;
    }
    const rows =
      perRow === undefined ? undefined : sizing.link.pageRows(perRow, sizing.now(), sizing.scarce?.());
    if (rows !== undefined) {
      this.#pageSize = rows;
      // To the next multiple of `rows` (shorter once, where the size changed).
      return rows - ((start - 1) % rows);
    }
    // The smaller size: the ladder's least whose body is at least PAGE_BYTES_MIN (rows narrow enough
    // make a thousand of them too little to be worth a request).
    const most = perRow === undefined ? Number.POSITIVE_INFINITY : Math.max(1, PAGE_BYTES_MAX / perRow);
    const least = Math.max(PAGE_ROWS_UNIT, PAGE_BYTES_MIN / (perRow ?? Number.POSITIVE_INFINITY));
    const small = onLadder(least, least, most);
    const large = Math.min(Math.floor(most), small * STARTUP_SIZE_RATIO);
    // No more than a page of each size is left: nothing learned from them would size another.
    if (this.remaining <= large + small) return Math.min(Math.floor(most), this.remaining);
    return this.#probes++ % 2 === 0 ? large : small;
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
 * The guard on what the server says about size: a total above `maxRows` is refused before any page is
 * read. The spec caps results at 500,000 rows, so by default a bigger total is a broken or hostile
 * server, and reading it would never end (or fill memory).
 */
export function checkRowLimit(total: number, maxRows: number): void {
  if (total > maxRows) throw new RowLimitError(total, maxRows);
}
