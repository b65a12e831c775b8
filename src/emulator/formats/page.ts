import type { FieldDescriptor, QueryState, WireValue } from '../../core/wire.js';
import { unmarkJson } from '../big-integers.js';

/** Everything a result body is made of, whatever its format. */
export interface PageData {
  readonly id: string;
  readonly state: QueryState;
  readonly total: number;
  /** Echo of the requested start (1-based). */
  readonly start: number;
  /** Echo of the requested limit (before clamping). */
  readonly limit: number;
  /** Rows in this page (`count`). */
  readonly count: number;
  /**
   * The rows in order, generated chunk by chunk: each chunk's arrays die young instead of a whole page of
   * them surviving into the old generation, which halves the cost of a 10,000-row page.
   */
  chunks(): Iterable<readonly (readonly WireValue[])[]>;
  readonly fields: readonly FieldDescriptor[];
  readonly lastDateUpdated: string;
}

/** What a page is made of, less its rows: the rows come to a `PageWriter` chunk by chunk. */
export type PageMeta = Omit<PageData, 'chunks'>;

type Rows = readonly (readonly WireValue[])[];

/**
 * A format's serializer, fed one chunk of rows at a time so a large page is built in slices between
 * which the event loop serves others; `finish` gives the body.
 */
export interface PageWriter {
  add(rows: Rows): void;
  finish(): Buffer | Promise<Buffer>;
}

/** Serializes a whole page at once through its writer (tests, small pages). */
export function writeAll(writer: PageWriter, page: PageData): Buffer | Promise<Buffer> {
  for (const chunk of page.chunks()) writer.add(chunk);
  return writer.finish();
}

const fieldsJsonCache = new WeakMap<readonly FieldDescriptor[], string>();

/** Datasets' field arrays are constant: serialize each once. */
export function fieldsJson(fields: readonly FieldDescriptor[]): string {
  let json = fieldsJsonCache.get(fields);
  if (json === undefined) {
    json = JSON.stringify(fields);
    fieldsJsonCache.set(fields, json);
  }
  return json;
}

/**
 * The page object with `rows` spliced in as ready-made JSON text: the member order of the spec's table,
 * built by concatenation so a 100,000-row page is one `JSON.stringify` of the rows and nothing more.
 */
export function pageJson(page: PageMeta, rowsJson: string): string {
  const [head, tail] = pageJsonParts(page);
  return `${head}${rowsJson}${tail}`;
}

/** The page object's text before and after the rows array. */
export function pageJsonParts(page: PageMeta): [head: string, tail: string] {
  return [
    `{"id":${JSON.stringify(page.id)},"state":${JSON.stringify(page.state)},"total":${page.total},` +
      `"count":${page.count},"start":${page.start},"limit":${page.limit},"rows":`,
    `,"fields":${fieldsJson(page.fields)},"group_fields":[],"sort_fields":[],` +
      `"last_date_updated":${JSON.stringify(page.lastDateUpdated)}}`,
  ];
}

const COMMA = Buffer.from(',');

/**
 * A JSON page writer: each chunk's rows (as `toJson` makes them) become one Buffer, joined with commas
 * into the rows array at `finish`; no string ever holds the whole page.
 */
export function jsonPageWriter(page: PageMeta, toJson: (rows: Rows) => string): PageWriter {
  const [head, tail] = pageJsonParts(page);
  const parts: Buffer[] = [Buffer.from(`${head}[`, 'utf8')];
  let first = true;
  return {
    add(rows) {
      if (rows.length === 0) return;
      // One native stringify per chunk, encoded as it is and its brackets cut off the Buffer, so the
      // chunks join into one array: slicing or prefixing the string instead makes V8 copy it first.
      const json = Buffer.from(unmarkJson(toJson(rows)), 'utf8');
      if (!first) parts.push(COMMA);
      parts.push(json.subarray(1, json.length - 1));
      first = false;
    },
    finish() {
      parts.push(Buffer.from(`]${tail}`, 'utf8'));
      return Buffer.concat(parts);
    },
  };
}
