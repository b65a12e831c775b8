/**
 * The service's wire shapes, as ../shared/SPEC.md describes them. Names follow the wire (snake_case) so a
 * user can read the spec and our types side by side.
 */

/** Media types that `X-Formats` can list. */
export const MediaType = {
  table: 'application/vnd.service.table+json',
  map: 'application/vnd.service.map+json',
  csv: 'text/csv',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
} as const;
export type FormatName = keyof typeof MediaType;
export type MediaTypeValue = (typeof MediaType)[FormatName];

/** The `X-API-Version` every request sends unless overridden. */
export const API_VERSION = '20151130';

/** The row cap of the service: results over it are truncated. */
export const ROW_CAP = 500_000;

/** Query states seen on the wire. Others are not shown by the spec; we keep them as strings. */
export type QueryState = 'running' | 'complete' | (string & {});

export interface DatasetInfo {
  id: string;
  display_name: string;
  summary: string;
  /** `ready` is the value seen. */
  state: string;
  blog_url: string | null;
  companies_count: number | null;
}

export interface FieldDescriptor {
  /** Column identifier; the Arrow column name. */
  id: string;
  display_name: string;
  summary: string;
  /** `string`, `number`, `date`, `datetime`, `boolean` (also accepted: `integer`, `float`, `timestamp`). */
  type: string;
  /** e.g. `ticker`; null when none. */
  format: string | null;
  metric: boolean;
  length: number;
  options: unknown[];
}

/** `GET /datasets/<id>`: not shown by the spec; the list item plus the column descriptors. */
export interface DatasetMetadata extends DatasetInfo {
  fields: FieldDescriptor[];
  /** The row cap that applies to this dataset's results. */
  truncate_limit: number;
  /** Media types the dataset's queries offer, when the service says. */
  formats?: string[];
}

export interface Entity {
  /** `<entity_name>@<ticker>` */
  id: string;
  display_name: string;
}

export interface TickerEntry {
  /** `<market>:<identifier>`, lower case; private companies use market `private`. */
  id: string;
  display_name: string;
  sector: string;
  industry: string;
  country: string;
  url: string;
  entities: Entity[];
}

/**
 * The body of `POST /datasets/<id>/query/` as the spec shows it: `tickers`, nothing else. Any other member
 * is refused (`InvalidArgumentError`), since a misspelt one (`ticker`) would otherwise be sent, ignored by
 * the service, and query the whole dataset. Members the spec does not show (`filters`, `sorts`, …) are
 * sent on purpose with `rawBody({ … })`.
 */
export interface QueryBody {
  /** Only the rows of these tickers, `<market>:<identifier>`. Omitted or empty: every row. */
  readonly tickers?: readonly string[];
}

/**
 * A query body as it goes on the wire: `tickers`, and whatever members a `rawBody()` carries. What the
 * library passes around once the caller's body was checked (and what the emulator receives).
 */
export interface WireBody {
  readonly tickers?: readonly string[];
  readonly [member: string]: unknown;
}

/** The response of query creation. */
export interface QueryHandle {
  /** 64 lower-case hex characters. */
  id: string;
  state: QueryState;
  total: number;
  formats: string[];
  /** A `message` the service sent with the handle (not in the spec; kept for a failed state). */
  message?: string;
}

/** What a HEAD check tells, from its headers. */
export interface QueryStatus {
  state: QueryState;
  total: number;
  truncated: boolean;
  formats: string[];
  /** The HTTP status the check answered with (200, or 202 while running on some deployments). */
  httpStatus: number;
  /** The check's `Retry-After`, in ms: when the service wants to be asked again (while running). */
  retryAfterMs?: number | undefined;
}

export interface SortEntry {
  column: string;
  order: 'asc' | 'desc';
}

/** A row value as it arrives in table JSON. */
export type WireValue = string | number | boolean | null;

/** One page of results in table JSON. */
export interface ResultPage {
  id: string;
  state: QueryState;
  total: number;
  count: number;
  start: number;
  limit: number;
  rows: WireValue[][];
  fields: FieldDescriptor[];
  group_fields: FieldDescriptor[];
  sort_fields: SortEntry[];
  last_date_updated: string;
}
