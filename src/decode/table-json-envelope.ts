/**
 * A page's envelope (its members but `rows`), read forward as its bytes come, member by member, on every
 * page (the query's first one too): the members the client uses are read, every other one is checked as
 * strictly as `JSON.parse` and skipped, and a second member of any name declines the page (`JSON.parse`
 * would keep the last one without a word; the reference refuses it). The reference checks `fields` with
 * the same words (`fieldsProblem`).
 */

import type { ColumnPlan } from '../convert/plan.js';
import { safeRepr } from '../core/errors.js';
import type { FieldDescriptor } from '../core/wire.js';
import { BAIL, COLON, QUOTE, type Scan, utf8 } from './json-scan.js';

/**
 * What a caller that only describes a result needs of a page: its envelope and how many rows it holds,
 * not the rows as values (the query's first page keeps its bytes for the stream's decoder).
 */
export interface TableEnvelope {
  readonly fields: FieldDescriptor[];
  readonly total: number;
  readonly count: number;
  readonly start: number;
  /** As sent (the spec says a date string). */
  readonly lastDateUpdated: string;
  /**
   * The rows the page holds: counted by the reference; read from the bytes (`readTableEnvelope`), the
   * page's own `count`, which the stream's decoder checks against the rows when it decodes them.
   */
  readonly rowCount: number;
}

/** What is wrong with a page's `fields` (not an array of descriptors with string ids), if anything. */
export function fieldsProblem(fields: unknown): string | undefined {
  if (!Array.isArray(fields)) return 'fields is not an array';
  for (let j = 0; j < fields.length; j++) {
    const f: unknown = fields[j];
    if (
      typeof f !== 'object' ||
      f === null ||
      Array.isArray(f) ||
      typeof (f as { id?: unknown }).id !== 'string'
    )
      return `fields[${j}] is not a descriptor with a string id`;
  }
  return undefined;
}

/** Whether descriptors `fields` are the planned columns, in order. */
export function fieldsArePlanned(fields: readonly { id: string }[], plan: readonly ColumnPlan[]): boolean {
  return fields.length === plan.length && plan.every((c) => fields[c.index]?.id === c.id);
}

/** The error text of descriptors that are not the planned columns. */
export function unplannedFields(fields: readonly { id: string }[], plan: readonly ColumnPlan[]): string {
  return `The page's fields are not the planned columns: expected ${safeRepr(plan.map((c) => c.id).join(','))}, got ${safeRepr(fields.map((f) => f.id).join(','))}`;
}

/** A page's members as the forward reader meets them. */
export class Envelope {
  readonly #seen = new Set<string>();
  total = Number.NaN;
  count = Number.NaN;
  start = Number.NaN;
  /** `fields`' bytes, as sent. */
  fields: Buffer | undefined;
  /** `last_date_updated`, as `JSON.parse` reads it. */
  lastDateUpdated: unknown;
  /** `rows` framed unread (an envelope alone): whether it is `[]`. */
  rowsEmpty = false;

  /** The member name at `s.i` and its colon (`s.i` after it); a name seen before declines the page. */
  name(s: Scan): string {
    if (s.b[s.i] !== QUOTE) throw BAIL;
    s.string();
    const name = s.str();
    if (s.ws() !== COLON) throw BAIL;
    s.i++;
    if (this.#seen.has(name)) throw BAIL;
    this.#seen.add(name);
    return name;
  }

  /** The value of member `name` (not `rows`) at `s.i`, read or checked and skipped. */
  value(name: string, s: Scan): void {
    const from = s.i;
    if (name === 'total' || name === 'count' || name === 'start') {
      s.number();
      if (!Number.isInteger(s.num)) throw BAIL;
      this[name] = s.num;
      return;
    }
    s.skip();
    if (name === 'fields') this.fields = Buffer.from(s.b.subarray(from, s.i));
    else if (name === 'last_date_updated') this.lastDateUpdated = JSON.parse(utf8(s.b, from, s.i));
  }

  /** Whether the members the page fetcher checks are all there (`rows` is the reader's to know). */
  get whole(): boolean {
    return (
      this.fields !== undefined &&
      !Number.isNaN(this.total) &&
      !Number.isNaN(this.count) &&
      !Number.isNaN(this.start)
    );
  }
}

/**
 * The check of a page's `fields` against the plan: descriptors with the plan's ids, in order. A decoder
 * keeps one per stream and remembers the last bytes that passed, so the next pages' (the same bytes) pass
 * at once.
 */
export class PageFields {
  readonly #plan: readonly ColumnPlan[];
  #passed: Buffer | undefined;

  constructor(plan: readonly ColumnPlan[]) {
    this.#plan = plan;
  }

  /** Declines (`BAIL`) unless `bytes` are such descriptors. */
  check(bytes: Buffer): void {
    if (this.#passed?.equals(bytes)) return;
    const fields: unknown = JSON.parse(utf8(bytes, 0, bytes.length));
    if (fieldsProblem(fields) !== undefined || !fieldsArePlanned(fields as FieldDescriptor[], this.#plan))
      throw BAIL;
    this.#passed = bytes;
  }
}
