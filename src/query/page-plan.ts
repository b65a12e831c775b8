import type { PageRef } from '../core/errors.js';

/** One page request: 1-based `start` and the number of rows asked for (the `PageRef` errors name). */
export type PageRange = PageRef;

/** Splits rows `startRow..total` (1-based, inclusive) into pages of `pageSize` rows. */
export function planPages(startRow: number, total: number, pageSize: number): PageRange[] {
  const pages: PageRange[] = [];
  for (let start = startRow; start <= total; start += pageSize) {
    pages.push({ start, limit: Math.min(pageSize, total - start + 1) });
  }
  return pages;
}
