/**
 * Table JSON (`application/vnd.service.table+json`), the reference decoder: `JSON.parse` reads the page,
 * and one pass of the byte scanner over it finds what `JSON.parse` cannot say (a member sent twice) or
 * would lose (a number literal of the rows whose double would not give it back: numbers.ts, quoted so its
 * text reaches the converters). It is the oracle the fast path must equal or decline to.
 *
 * Validation is deliberately shallow: the members we rely on, checked in O(fields + rows), never O(values).
 * Row lengths and value types are checked by the converters (builder / row factory), which look at every
 * value anyway. Members we do not use (`id`, `state`, `group_fields`, ...) are passed through as sent.
 */

import { numberWire } from '../convert/numbers.js';
import type { ColumnPlan } from '../convert/plan.js';
import { DecodeError, type PageRef, safeRepr } from '../core/errors.js';
import type { ResultPage } from '../core/wire.js';
import {
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COLON,
  COMMA,
  latin1,
  OPEN_ARRAY,
  OPEN_OBJECT,
  QUOTE,
  Scan,
} from './json-scan.js';
import {
  fieldsArePlanned,
  fieldsProblem,
  type TableEnvelope,
  unplannedFields,
} from './table-json-envelope.js';

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
  let pass: Pass | undefined;
  try {
    pass = walk(Buffer.from(text));
  } catch {
    // Not JSON: `JSON.parse` says where.
  }
  let page: unknown;
  try {
    page = JSON.parse(pass?.text ?? text);
  } catch (error) {
    throw fail(`the body is not JSON (${(error as Error).message})`, where, error);
  }
  if (!isObject(page)) throw fail(`the body is ${safeRepr(page)}, not an object`, where);
  // JSON.parse keeps the last of two members of one name: a page with two `rows` would be read by its
  // second without a word.
  if (pass?.twice !== undefined)
    throw fail(`the member ${safeRepr(pass.twice)} appears more than once`, where);
  const { rows, fields } = page;
  if (!Array.isArray(rows)) throw fail('rows is not an array', where);
  for (let i = 0; i < rows.length; i++) {
    if (!Array.isArray(rows[i])) throw fail(`rows[${i}] is not an array`, where);
  }
  const problem = fieldsProblem(fields);
  if (problem !== undefined) throw fail(problem, where);
  for (const member of ['total', 'count', 'start'] as const) {
    if (!Number.isInteger(page[member]))
      throw fail(`${member} is not an integer (${safeRepr(page[member])})`, where);
  }
  return page as unknown as ResultPage;
}

/** What the reference's pass over a page's bytes found. */
interface Pass {
  /** The first member name the page has twice. */
  readonly twice?: string | undefined;
  /** The page with its rows' numbers that need their text quoted, when there is one. */
  readonly text?: string | undefined;
}

/**
 * One pass over a page (JSON, or it throws): the names of its members, and the number literals inside
 * `rows` whose wire value is their text (`numberWire`), quoted. Tokens only, with a depth count: any
 * nesting `JSON.parse` reads is walked without recursion.
 */
function walk(b: Buffer): Pass {
  const s = new Scan();
  s.at(b, 0);
  const seen = new Set<string>();
  let twice: string | undefined;
  let member = '';
  let depth = 0;
  let keyNext = false;
  let parts: Buffer[] | undefined;
  let from = 0;
  for (;;) {
    const c = s.ws();
    if (c === undefined) break;
    if (c === QUOTE) {
      s.string();
      if (depth === 1 && keyNext) {
        member = s.str();
        if (seen.has(member)) twice ??= member;
        seen.add(member);
      }
      keyNext = false;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      depth++;
      keyNext = c === OPEN_OBJECT && depth === 1;
      s.i++;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
      s.i++;
    } else if (c === COMMA || c === COLON) {
      keyNext = c === COMMA && depth === 1;
      s.i++;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      s.number();
      if (depth > 2 && member === 'rows' && typeof numberWire(latin1(b, s.start, s.end)) === 'string') {
        parts ??= [];
        parts.push(b.subarray(from, s.start), QUOTE_BYTES, b.subarray(s.start, s.end), QUOTE_BYTES);
        from = s.end;
      }
    } else s.keyword();
  }
  if (parts === undefined) return { twice };
  parts.push(b.subarray(from));
  return { twice, text: Buffer.concat(parts).toString('utf8') };
}

const QUOTE_BYTES = Buffer.from('"');

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

/** The page's descriptors must be the planned columns, in order. */
export function checkFields(
  fields: readonly { id: string }[],
  plan: readonly ColumnPlan[],
  where: PageRef,
): void {
  if (!fieldsArePlanned(fields, plan)) throw new DecodeError(unplannedFields(fields, plan), { page: where });
}
