/**
 * Table JSON (`application/vnd.service.table+json`): one result page per body.
 *
 * Validation is deliberately shallow: the members we rely on, checked in O(fields + rows), never O(values).
 * Row lengths and value types are checked by the converters (builder / row factory), which look at every
 * value anyway. Members we do not use (`id`, `state`, `group_fields`, ...) are passed through as sent.
 */

import { isBigIntegerText } from '../convert/values.js';
import { DecodeError, type PageRef, safeRepr } from '../core/errors.js';
import type { FieldDescriptor, ResultPage } from '../core/wire.js';

function fail(why: string, where: PageRef, cause?: unknown): DecodeError {
  return new DecodeError(
    `Not a result page: ${why}`,
    { page: where },
    cause === undefined ? undefined : { cause },
  );
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Parses and checks one page of table JSON.
 *
 * @param where the request the page answers (its `start` and `limit`), named in errors.
 * @throws DecodeError when the text is not JSON or not shaped like a result page.
 */
export function parseTablePage(text: string, where: PageRef): ResultPage {
  let page: unknown;
  try {
    page = JSON.parse(quoteBigIntegers(text));
  } catch (error) {
    throw fail(`the body is not JSON (${(error as Error).message})`, where, error);
  }
  if (!isObject(page)) throw fail(`the body is ${safeRepr(page)}, not an object`, where);
  // JSON.parse keeps the last of two members of one name: a page with two `rows` would be read by its
  // second without a word. Only the page's own members are checked (what the client reads).
  const twice = repeatedMember(text);
  if (twice !== undefined) throw fail(`the member ${safeRepr(twice)} appears more than once`, where);
  const { rows, fields } = page;
  if (!Array.isArray(rows)) throw fail('rows is not an array', where);
  for (let i = 0; i < rows.length; i++) {
    if (!Array.isArray(rows[i])) throw fail(`rows[${i}] is not an array`, where);
  }
  if (!Array.isArray(fields)) throw fail('fields is not an array', where);
  for (let j = 0; j < fields.length; j++) {
    const f: unknown = fields[j];
    if (!isObject(f) || typeof f.id !== 'string')
      throw fail(`fields[${j}] is not a descriptor with a string id`, where);
  }
  for (const member of ['total', 'count', 'start'] as const) {
    if (!Number.isInteger(page[member]))
      throw fail(`${member} is not an integer (${safeRepr(page[member])})`, where);
  }
  return page as unknown as ResultPage;
}

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
   * The rows the page holds: counted by the reference; on the fast path (`readTableEnvelope`) the page's
   * own `count`, which the stream's decoder checks against the rows when it decodes them.
   */
  readonly rowCount: number;
}

/** The envelope of a page parsed by `parseTablePage` (the reference path). */
export function envelopeOf(page: ResultPage): TableEnvelope {
  return {
    fields: page.fields,
    total: page.total,
    count: page.count,
    start: page.start,
    lastDateUpdated: page.last_date_updated,
    rowCount: page.rows.length,
  };
}

/**
 * The first member name that the top-level object of `text` (valid JSON: `JSON.parse` took it) has more
 * than once, or undefined. One pass over the characters, strings skipped; only the reference path and
 * the first page's envelope read it.
 */
export function repeatedMember(text: string): string | undefined {
  const seen = new Set<string>();
  let depth = 0;
  let keyNext = false; // the next string at depth 1 is a member name
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const start = i;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
      if (depth === 1 && keyNext) {
        const raw = text.slice(start, i + 1);
        const name = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
        if (seen.has(name)) return name;
        seen.add(name);
      }
      keyNext = false;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      keyNext = c === 0x7b && depth === 1;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    } else if (c === 0x2c) {
      keyNext = depth === 1;
    }
  }
  return undefined;
}

/**
 * `text` with every integer literal outside ±2^53 turned into a string of its digits
 * (`9007199254740993` → `"9007199254740993"`), so `JSON.parse` cannot round it: the converters read a
 * numeric string as its number, and keep or report a big integer (Node 20's `JSON.parse` has no way
 * to hand a reviver the literal's source). The text itself when there is none, as almost always.
 */
export function quoteBigIntegers(text: string): string {
  let out: string[] | undefined;
  let from = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      let integer = true;
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) integer = false;
        else if (d < 0x30 || d > 0x39) break;
      }
      // Fewer than 16 digits is below 2^53; `i` is now just past the literal.
      if (integer && i - start >= 16 && isBigIntegerText(text.slice(start, i))) {
        out ??= [];
        out.push(text.slice(from, start), '"', text.slice(start, i), '"');
        from = i;
      }
      i--;
    }
  }
  if (out === undefined) return text;
  out.push(text.slice(from));
  return out.join('');
}
