/**
 * What a synthetic dataset is: its wire description plus two pure functions, one giving how many rows a
 * company has and one giving any single row. Nothing is stored, so a 600,000-row result costs no memory.
 */
import { daysFromCivil, formatDateDays } from '../../convert/dates.js';
import type { FieldDescriptor, FormatName, WireValue } from '../../core/wire.js';
import type { CompanyProfile } from '../companies.js';
import type { Rng } from '../random.js';

/** Where a row sits; one object is reused for every row of a page. */
export interface RowContext {
  company: CompanyProfile;
  /** 0-based position among the company's rows. */
  index: number;
  /** The company's row count in this dataset. */
  count: number;
  /** A hash of (seed, dataset, company): for per-company constants such as a traffic scale. */
  companyKey: number;
}

export interface DatasetDefinition {
  readonly id: string;
  readonly displayName: string;
  readonly summary: string;
  readonly blogUrl: string | null;
  /** Keeps this dataset's hash keys apart from the other datasets'. */
  readonly salt: number;
  readonly fields: readonly FieldDescriptor[];
  /** Result formats its queries offer, in `X-Formats` order. */
  readonly formats: readonly FormatName[];
  /** `last_date_updated` of its result pages: fixed, so pages are byte-for-byte reproducible. */
  readonly lastDateUpdated: string;
  /** Whether the company has any rows here. */
  includes(company: CompanyProfile): boolean;
  /** The company's row count; `rng` is seeded from (seed, dataset, company) only. */
  rowCount(company: CompanyProfile, rng: Rng): number;
  /** One row, values in `fields` order; `rng` is seeded from (seed, dataset, company, index) only. */
  row(ctx: RowContext, rng: Rng): WireValue[];
}

export interface FieldOptions {
  format?: string;
  metric?: boolean;
  length?: number;
}

const DEFAULT_LENGTH: Record<string, number> = { string: 255, number: 8, date: 8, datetime: 16, boolean: 1 };

/** A full field descriptor; `length` defaults by type (the declared width of the column). */
export function field(
  id: string,
  displayName: string,
  type: 'string' | 'number' | 'date' | 'datetime' | 'boolean',
  summary: string,
  options: FieldOptions = {},
): FieldDescriptor {
  return {
    id,
    display_name: displayName,
    summary,
    type,
    format: options.format ?? null,
    metric: options.metric ?? false,
    length: options.length ?? DEFAULT_LENGTH[type] ?? 255,
    options: [],
  };
}

/** The first column of every dataset: the company's ticker, with the `ticker` format. */
export function tickerField(): FieldDescriptor {
  return field('ticker', 'Ticker', 'string', 'Company ticker, <market>:<identifier>.', {
    format: 'ticker',
    length: 64,
  });
}

export const MS_PER_DAY = 86_400_000;

/** Last day of synthetic data, 2024-12-31 (a leap year, so 20240229 shows up). */
export const END_DAY = daysFromCivil(2024, 12, 31);

export function civilDay(year: number, month: number, day: number): number {
  return daysFromCivil(year, month, day);
}

export function roundTo(value: number, decimals: number): number {
  const f = 10 ** decimals;
  return Math.round(value * f) / f;
}

/** Every dataset offers these unless it says otherwise. */
export const ALL_FORMATS: readonly FormatName[] = ['table', 'map', 'csv', 'xls', 'xlsx'];

/** Days any dataset uses: 1980-01-01 to 2025-12-31. */
const FIRST_CACHED_DAY = daysFromCivil(1980, 1, 1);
const dayTexts: string[] = [];

/**
 * `formatDateDays`, memoised: every row has a few dates, and the same few thousand days recur, so a
 * lookup replaces the civil-date arithmetic and string building on the hot path.
 */
export function dayText(day: number): string {
  const slot = day - FIRST_CACHED_DAY;
  if (slot < 0 || slot > 16_800) return formatDateDays(day);
  let text = dayTexts[slot];
  if (text === undefined) {
    text = formatDateDays(day);
    dayTexts[slot] = text;
  }
  return text;
}

const PAD2 = Array.from({ length: 60 }, (_, n) => String(n).padStart(2, '0'));

/** `formatTimestampMs` for whole-second times, on top of `dayText` (a test pins them equal). */
export function timestampText(ms: number): string {
  const day = Math.floor(ms / MS_PER_DAY);
  const second = Math.floor((ms - day * MS_PER_DAY) / 1000);
  const hh = Math.floor(second / 3600);
  const mm = Math.floor((second % 3600) / 60);
  return `${dayText(day)}T${PAD2[hh]}${PAD2[mm]}${PAD2[second % 60]}Z`;
}
