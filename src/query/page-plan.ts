/**
 * The page plan: which rows to ask for next. It is a cursor, not a list, so its memory is O(1) whatever
 * total the server claims (a list of `{start, limit}` for `X-Total: 10^12` took gigabytes before the first
 * row was read), and its page size can change as the stream learns (bytes per row, a server that clamps).
 */
import { type PageRef, RowLimitError } from '../core/errors.js';

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

  constructor(startRow: number, total: number, pageSize: number) {
    this.#next = startRow;
    this.#last = total;
    this.#pageSize = pageSize;
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
    const limit = Math.min(this.#pageSize, this.#last - start + 1);
    this.#next = start + limit;
    return { start, limit };
  }

  /** Takes rows `start..start+limit-1` as already read (a page prefetched with the query). */
  skip(range: PageRange): void {
    this.#next = Math.max(this.#next, range.start + range.limit);
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
