/**
 * The envelope of a table-JSON page read from its bytes, never from a parsed page: forward, the members
 * around `rows` for the byte decoder (`PageMembersWalk`, which leaves `rows` to the decoder's row loop), and
 * for the query's first page the envelope alone (`readTableEnvelope`), read backward from the end so the
 * rows are never walked.
 */
import { isUtf8 } from 'node:buffer';
import type { FieldDescriptor } from '../core/wire.js';
import {
  BACKSLASH,
  BAIL,
  COMMA,
  integer,
  isDecline,
  isWs,
  QUOTE,
  STOP,
  skipValue,
  skipWs,
  walkMembers,
} from './json-scan.js';
import type { TableEnvelope } from './table-json.js';

/** Where the envelope members the byte decoder checks are, as `[start, end)` of their values. */
export interface PageMembers {
  readonly total: number;
  readonly count: number;
  readonly start: number;
  readonly fields: [number, number];
}

/**
 * Walks a whole page forward in two steps around `rows`, which the decoder reads in between (a slice at
 * a time, see table-json-fast.ts): `toRows()` walks the members before it and returns where its value
 * starts, `after(rowsEnd)` walks on from the index after it. The other members are checked as strictly as
 * `JSON.parse` and `total`, `count`, `start` read. A duplicate of any of them, one missing, or anything
 * after the closing brace declines the page.
 */
export class PageMembersWalk {
  readonly #b: Buffer;
  readonly #spans: Partial<Record<string, [number, number]>> = {};
  #sawRows = false;

  constructor(b: Buffer) {
    this.#b = b;
  }

  /** Where the value of `rows` starts (a page without `rows` is declined). */
  toRows(): number {
    let rowsAt = -1;
    const end = walkMembers(this.#b, (ks, ke, s) => {
      if (!this.#isRows(ks, ke)) return this.#member(ks, ke, s);
      this.#sawRows = true;
      rowsAt = s;
      return STOP;
    });
    if (end !== STOP) throw BAIL;
    return rowsAt;
  }

  /** The members, once `rows` has been read up to `rowsEnd` (the index after its closing bracket). */
  after(rowsEnd: number): PageMembers {
    const b = this.#b;
    const end = walkMembers(
      b,
      (ks, ke, s) => {
        if (this.#isRows(ks, ke)) throw BAIL;
        return this.#member(ks, ke, s);
      },
      rowsEnd,
    );
    const { total, count, start, fields } = this.#spans;
    if (skipWs(b, end) !== b.length) throw BAIL;
    if (!this.#sawRows || !total || !count || !start || !fields) throw BAIL;
    return { total: integer(b, total), count: integer(b, count), start: integer(b, start), fields };
  }

  #isRows(ks: number, ke: number): boolean {
    const b = this.#b;
    return ke - ks === 4 && b[ks] === 0x72 && b[ks + 1] === 0x6f && b[ks + 2] === 0x77 && b[ks + 3] === 0x73;
  }

  /** A member other than `rows`: those we read are kept as spans (once each), the others skipped. */
  #member(ks: number, ke: number, s: number): number {
    const b = this.#b;
    const name = ke - ks >= 5 && ke - ks <= 6 ? b.toString('latin1', ks, ke) : '';
    switch (name) {
      case 'total':
      case 'count':
      case 'start':
      case 'fields': {
        if (this.#spans[name]) throw BAIL;
        const span: [number, number] = [s, skipValue(b, s, 0)];
        this.#spans[name] = span;
        return span[1];
      }
      default:
        return skipValue(b, s, 0);
    }
  }
}

/**
 * The members of page `b` in one go: `readRows` reads the `rows` array at the index it is given and
 * returns the index after it (for a decoder that reads the rows in one step; `PageMembersWalk` otherwise).
 */
export function pageMembers(b: Buffer, readRows: (at: number) => number): PageMembers {
  const walk = new PageMembersWalk(b);
  return walk.after(readRows(walk.toRows()));
}

/**
 * The check of a page's `fields`: descriptors with the plan's ids, in order. A decoder keeps one per stream
 * and remembers the last bytes that passed, so the next pages' (the same bytes) pass at once.
 */
export class PageFields {
  readonly #ids: readonly string[];
  #passed: Buffer | undefined;

  constructor(ids: readonly string[]) {
    this.#ids = ids;
  }

  /** Declines (`BAIL`) unless `b[s, e)` is such an array. */
  check(b: Buffer, s: number, e: number): void {
    const slice = b.subarray(s, e);
    if (this.#passed?.equals(slice)) return;
    const fields: unknown = JSON.parse(slice.toString('utf8'));
    if (!Array.isArray(fields) || fields.length !== this.#ids.length) throw BAIL;
    for (let j = 0; j < fields.length; j++) {
      const f: unknown = fields[j];
      if (typeof f !== 'object' || f === null || Array.isArray(f)) throw BAIL;
      if ((f as { id?: unknown }).id !== this.#ids[j]) throw BAIL;
    }
    this.#passed = Buffer.from(slice);
  }
}

/**
 * A page's envelope read from its bytes, its rows never read: the query's first page (up to 10,000 rows,
 * read for its descriptors) is then decoded once, by the stream's decoder. The members before `rows` are
 * walked forward and those after it (`fields` comes after `rows` in the service's pages) backward from the
 * closing brace, so the cost is that of the envelope, not of the page: delimiting the rows was ~0.9 ms of
 * client CPU per query in a fan-out of 121 small queries, where the library and five lines of `fetch` were
 * otherwise within 1 %. `rowCount` is the page's own `count`: the stream's decoder checks it against the
 * rows it decodes (a `ProtocolError` naming the page), as it checks every page; a row the reference would
 * reject fails there too, as a `DecodeError` or `InvalidValueError` naming the page. `undefined` whenever
 * the rest is anything but ordinary (not UTF-8, a syntax error outside the rows, a duplicate or escaped
 * member name, a member of the wrong shape): the caller then takes `parseTablePage`, which gives the same
 * envelope or the right `DecodeError`.
 */
export function readTableEnvelope(body: Buffer): TableEnvelope | undefined {
  if (!isUtf8(body)) return undefined;
  try {
    return envelope(body);
  } catch (error) {
    if (isDecline(error)) return undefined;
    throw error;
  }
}

function envelope(b: Buffer): TableEnvelope {
  const members = new Map<string, [number, number]>();
  let rowsAt = -1;
  walkMembers(b, (ks, ke, at) => {
    const key = b.toString('utf8', ks, ke);
    if (members.has(key)) throw BAIL;
    if (key === 'rows') {
      rowsAt = at;
      return STOP;
    }
    const after = skipValue(b, at, 0);
    members.set(key, [at, after]);
    return after;
  });
  if (rowsAt < 0 || b[rowsAt] !== 0x5b) throw BAIL;
  membersAfterRows(b, rowsAt, members);
  const member = (name: string): unknown => {
    const at = members.get(name);
    return at === undefined ? undefined : JSON.parse(b.toString('utf8', at[0], at[1]));
  };
  const required = (name: string): [number, number] => {
    const at = members.get(name);
    if (at === undefined) throw BAIL;
    return at;
  };
  const fields = member('fields');
  if (!Array.isArray(fields)) throw BAIL;
  for (const f of fields as unknown[]) {
    if (typeof f !== 'object' || f === null || Array.isArray(f)) throw BAIL;
    if (typeof (f as { id?: unknown }).id !== 'string') throw BAIL;
  }
  const count = integer(b, required('count'));
  // An empty page's rows are checked here: no decoder reads them when the result is empty.
  if (count < 0 || (count === 0 && b[skipWs(b, rowsAt + 1)] !== 0x5d)) throw BAIL;
  return {
    fields: fields as FieldDescriptor[],
    total: integer(b, required('total')),
    count,
    start: integer(b, required('start')),
    // Required here (the service always sends it): a member missed behind another array of arrays
    // (see `membersAfterRows`) then cannot be one this envelope reports.
    lastDateUpdated: JSON.parse(b.toString('utf8', ...required('last_date_updated'))) as string,
    rowCount: count,
  };
}

/**
 * The members after the `rows` array that opens at `rowsAt`, read backward from the page's closing brace
 * into `members`; each value found is checked forward (`skipValue`) as strictly as `JSON.parse`. An array
 * whose last element is an array (`]]`) is taken to be `rows` without reading it: in a result page only
 * `rows` is an array of arrays. Were another member one, the members between it and `rows` would go
 * unread: a missing member the envelope reports declines the page (all of them are required here), one
 * it does not report is not needed.
 */
function membersAfterRows(b: Buffer, rowsAt: number, members: Map<string, [number, number]>): void {
  let e = skipWsBack(b, b.length);
  if (b[e - 1] !== 0x7d) throw BAIL;
  e = skipWsBack(b, e - 1);
  for (;;) {
    if (b[e - 1] === 0x5d && b[skipWsBack(b, e - 1) - 1] === 0x5d) return; // `]]`: the rows
    const s = valueStartBack(b, e, rowsAt);
    if (s === rowsAt) return; // rows with no row in it
    if (s < rowsAt || skipValue(b, s, 0) !== e) throw BAIL;
    let i = skipWsBack(b, s);
    if (b[i - 1] !== 0x3a) throw BAIL;
    i = skipWsBack(b, i - 1);
    if (b[i - 1] !== QUOTE) throw BAIL;
    const ke = i - 1;
    const ks = b.lastIndexOf(QUOTE, ke - 1) + 1;
    if (ks <= rowsAt) throw BAIL;
    // A key with a backslash could spell a member we read ("r\u006fws"): left to `JSON.parse`.
    for (let k = ks; k < ke; k++) if (b[k] === BACKSLASH || b[k]! < 0x20) throw BAIL;
    const key = b.toString('utf8', ks, ke);
    if (key === 'rows' || members.has(key)) throw BAIL;
    members.set(key, [s, e]);
    i = skipWsBack(b, ks - 1);
    if (b[i - 1] !== COMMA) throw BAIL;
    e = skipWsBack(b, i - 1);
  }
}

/** The index after the last byte before `i` that is not JSON white space. */
function skipWsBack(b: Uint8Array, i: number): number {
  while (i > 0 && isWs(b[i - 1])) i--;
  return i;
}

/**
 * Where the value that ends just before `e` starts, reading backward and never below `floor`: a string
 * back to its opening quote (a quote after an odd run of backslashes is escaped), an array or object back
 * to its opening bracket (strings skipped), a number or literal back over its characters. The caller
 * checks the value forward.
 */
function valueStartBack(b: Buffer, e: number, floor: number): number {
  const last = b[e - 1];
  if (last === QUOTE) return openingQuote(b, e - 1, floor);
  if (last === 0x5d || last === 0x7d) {
    let depth = 0;
    for (let i = e - 1; i >= floor; i--) {
      const c = b[i];
      if (c === QUOTE) i = openingQuote(b, i, floor);
      else if (c === 0x5d || c === 0x7d) depth++;
      else if ((c === 0x5b || c === 0x7b) && --depth === 0) return i;
    }
    throw BAIL;
  }
  let i = e;
  while (i > floor && isScalarByte(b[i - 1]!)) i--;
  if (i === e) throw BAIL;
  return i;
}

/** The opening quote of the string whose closing quote is at `close`. */
function openingQuote(b: Buffer, close: number, floor: number): number {
  let q = b.lastIndexOf(QUOTE, close - 1);
  for (;;) {
    if (q < floor) throw BAIL;
    let k = q - 1;
    while (k >= 0 && b[k] === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q; // an even run of backslashes: the quote is not escaped
    q = b.lastIndexOf(QUOTE, q - 1);
  }
}

/** Bytes of a number, `true`, `false` or `null`. */
function isScalarByte(c: number): boolean {
  return (
    (c >= 0x30 && c <= 0x39) ||
    (c >= 0x61 && c <= 0x7a) ||
    c === 0x2d ||
    c === 0x2b ||
    c === 0x2e ||
    c === 0x45
  );
}
