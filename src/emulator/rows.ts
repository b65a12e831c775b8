/**
 * A query's result as a plan: which companies, how many rows each, and prefix sums, so row N of the
 * result maps to (company, index) by binary search and any page is generated on demand.
 */
import type { WireValue } from '../core/wire.js';
import { BIG_INTEGER_EVERY, bigIntegerAt } from './big-integers.js';
import { COMPANY_PROFILES, type CompanyProfile, companyByTicker } from './companies.js';
import type { DatasetDefinition, RowContext } from './datasets/index.js';
import { hash2, hashWords, Rng } from './random.js';

export interface ResultPlan {
  readonly dataset: DatasetDefinition;
  readonly seed: number;
  readonly companies: readonly CompanyProfile[];
  /** `starts[i]` = rows before company i (0-based result offset); `starts[companies.length]` = all rows. */
  readonly starts: readonly number[];
  readonly companyKeys: readonly number[];
  /** Rows before the cap. */
  readonly rowsBeforeCap: number;
  /** Rows served: min(rowsBeforeCap, rowCap). */
  readonly total: number;
  readonly truncated: boolean;
  /** Column given a big integer every `BIG_INTEGER_EVERY` rows (the `bigIntegers` option), or -1. */
  readonly bigIntegerColumn: number;
}

/** Tag words that keep count keys apart from row keys. */
const COUNT_TAG = 0x434f554e;

/**
 * @param tickers sorted and de-duplicated; empty = every company of the dataset. Tickers the dataset does
 *   not have contribute no rows.
 */
export function planResult(
  dataset: DatasetDefinition,
  tickers: readonly string[],
  seed: number,
  rowCap: number,
  bigIntegers = false,
): ResultPlan {
  const selected =
    tickers.length === 0
      ? COMPANY_PROFILES.filter((c) => dataset.includes(c))
      : tickers
          .map((t) => companyByTicker(t))
          .filter((c): c is CompanyProfile => c !== undefined && dataset.includes(c))
          // COMPANY_PROFILES and sorted tickers share one order, but be explicit about the contract.
          .sort((a, b) => a.index - b.index);
  const starts = [0];
  const companyKeys: number[] = [];
  const rng = new Rng();
  let sum = 0;
  for (const company of selected) {
    const companyKey = hashWords(seed, dataset.salt, company.index);
    companyKeys.push(companyKey);
    sum += dataset.rowCount(company, rng.reset(hashWords(seed, dataset.salt, company.index, COUNT_TAG, 1)));
    starts.push(sum);
  }
  return {
    dataset,
    seed,
    companies: selected,
    starts,
    companyKeys,
    rowsBeforeCap: sum,
    total: Math.min(sum, rowCap),
    truncated: sum > rowCap,
    bigIntegerColumn: bigIntegers ? dataset.fields.findIndex((f) => f.type === 'number') : -1,
  };
}

/** Index of the company holding 0-based result offset `offset` (requires offset < rowsBeforeCap). */
function companyAt(starts: readonly number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Rows at 0-based offsets [offset, offset + count), clipped to the served total. */
export function planRows(plan: ResultPlan, offset: number, count: number): WireValue[][] {
  const end = Math.min(plan.total, offset + count);
  if (offset < 0 || offset >= end) return [];
  const rows: WireValue[][] = new Array(end - offset);
  const rng = new Rng();
  let c = companyAt(plan.starts, offset);
  const ctx: RowContext = {
    company: plan.companies[c]!,
    index: offset - plan.starts[c]!,
    count: plan.starts[c + 1]! - plan.starts[c]!,
    companyKey: plan.companyKeys[c]!,
  };
  for (let r = 0; r < rows.length; r++) {
    while (ctx.index >= ctx.count) {
      c++;
      ctx.company = plan.companies[c]!;
      ctx.index = 0;
      ctx.count = plan.starts[c + 1]! - plan.starts[c]!;
      ctx.companyKey = plan.companyKeys[c]!;
    }
    const row = plan.dataset.row(ctx, rng.reset(hash2(ctx.companyKey, ctx.index)));
    if (plan.bigIntegerColumn >= 0 && (offset + r) % BIG_INTEGER_EVERY === 0) {
      row[plan.bigIntegerColumn] = bigIntegerAt(offset + r);
    }
    rows[r] = row;
    ctx.index++;
  }
  return rows;
}

/** How many rows a page at 0-based `offset` asking for `count` rows holds. */
export function pageRowCount(plan: ResultPlan, offset: number, count: number): number {
  return Math.max(0, Math.min(plan.total - offset, count));
}

const CHUNK_ROWS = 1024;

/** The rows of [offset, offset + count) in chunks of at most 1024, generated as iterated. */
export function* planRowChunks(plan: ResultPlan, offset: number, count: number): Generator<WireValue[][]> {
  const n = pageRowCount(plan, offset, count);
  for (let done = 0; done < n; done += CHUNK_ROWS)
    yield planRows(plan, offset + done, Math.min(CHUNK_ROWS, n - done));
}
