/**
 * The result formats, in one table: format name → media type, an optional fast decoder and the reference
 * decoder. Every format has a reference (bytes to wire rows, the values table JSON would carry, or the
 * right error); a format may add a fast path (a whole body straight into columns) that either gives
 * exactly the reference's result or declines the page. The fallback between the two lives in one place,
 * `PageDecoder` (page-decoder.ts).
 *
 * Adding a format = its decoder in a file of its own + one entry here.
 */

import type { DecodedColumns } from '../convert/column-data.js';
import type { PagePart } from '../convert/page-parts.js';
import type { ColumnPlan } from '../convert/plan.js';
import type { DatesAs } from '../convert/row-factory.js';
import type { DecodeError, PageRef } from '../core/errors.js';
import { MediaType, type WireValue } from '../core/wire.js';
import { BodyBuffers } from './body-buffers.js';
import { decodeCsv } from './csv.js';
import { FastCsvDecoder } from './csv-columns.js';
import { checkFields, parseTablePage } from './table-json.js';
import { type FastRowPage, FastTableDecoder, type FastTablePage } from './table-json-fast.js';
import { checkedUtf8, findInvalidUtf8, type InvalidUtf8, invalidUtf8Error } from './utf8.js';
import { decodeXlsx } from './xlsx.js';

/** What a page says of itself, for formats whose pages carry an envelope (table JSON). */
export interface PageEnvelope {
  readonly total: number;
  readonly count: number;
  readonly start: number;
}

/** The rows of a page: wire rows (reference decoders) or decoded columns (fast decoders). */
export type { PagePart } from '../convert/page-parts.js';

/** A decoded page: its rows and, for formats that have one, its envelope (else the headers tell). */
export interface DecodedPage {
  readonly part: PagePart;
  readonly envelope?: PageEnvelope | undefined;
}

/** A table-JSON page decoded by a byte decoder: its rows, and its envelope members beside them. */
function tablePage(page: (PagePart & PageEnvelope) | undefined): DecodedPage | undefined {
  return page && { part: page, envelope: page };
}

/** Options for making a fast decoder. */
export interface FastDecoderOptions {
  /**
   * `'utf8'` (Arrow output) or `'exact'` (row objects, whose strings are JS strings: pages where the two
   * differ, such as a lone surrogate, are declined).
   */
  readonly strings: 'utf8' | 'exact';
  /**
   * Row objects wanted (`output: 'rows'`), with their dates as `dates` says: a format that can make them
   * straight from the bytes (table JSON) does; the others decode to columns as for Arrow.
   */
  readonly rows?: { readonly dates: DatesAs } | undefined;
}

/**
 * A decode in steps: the generator runs a slice of the work per `next()`, and its return value is the
 * result. Between two steps the caller lets the event loop run (`PageDecoder`): a 4.5 MB page decoded in
 * one go held the loop for 20-30 ms.
 */
export type DecodeSteps<T> = Generator<void, T, void>;

/**
 * A fast path, one per stream (it may keep buffers between pages): a whole body → the page as columns,
 * or `undefined` when the page is anything but ordinary (the reference then decides).
 */
export interface FastDecoder {
  /** The page in steps; every decode started must be run to its end. */
  decode(body: Buffer, where: PageRef): DecodeSteps<DecodedPage | undefined>;
  /**
   * The page decoded as its body arrives, for a decoder that can: `bodyLength` is the body's declared
   * length when it has one (a sizing hint).
   */
  stream?(where: PageRef, bodyLength: number | undefined): PageStream;
  /** Takes back the buffers of a decoded page once its rows were copied out. */
  recycle?(part: DecodedColumns): void;
  /** A buffer to read a body of `size` bytes into; given back with `releaseBody()`. */
  bodyBuffer?(size: number): Buffer;
  releaseBody?(buffer: Buffer): void;
}

/** A page decoded as its body arrives (`prepare()`, the body's chunks in order, then `finish()` or `abandon()`). */
export interface PageStream {
  /** Allocates what the page is decoded into (called in a turn of its own before the first chunk). */
  prepare(): void;
  push(chunk: Uint8Array): void;
  /** The page was declined already: no need to read the rest of the body. */
  readonly declined: boolean;
  /**
   * The body has ended: the page (in steps), or `undefined` when it is not ordinary (the reference then
   * decides). Every finish started must be run to its end.
   */
  finish(): DecodeSteps<DecodedPage | undefined>;
  /** The body failed: the stream gives its buffers back. */
  abandon(): void;
}

/** What the reference decoders take besides the body. */
export interface ReferenceOptions {
  /** Bytes that are not UTF-8: a located `DecodeError`, or U+FFFD as `TextDecoder` reads them. */
  readonly invalidUtf8: InvalidUtf8;
}

export const REFERENCE_DEFAULTS: ReferenceOptions = { invalidUtf8: 'error' };

/** One result format. */
export interface ResultFormat {
  readonly mediaType: string;
  /** Pages carry `total`, `count` and `start` in their body; otherwise the response headers give them. */
  readonly envelope: boolean;
  /** Makes the stream's fast decoder, if the format has one. */
  readonly fast?: (plan: readonly ColumnPlan[], options: FastDecoderOptions) => FastDecoder;
  /** The reference: the body as it arrives → the page's wire rows, or the right `DecodeError`. */
  readonly reference: (
    body: AsyncIterable<Uint8Array | string>,
    plan: readonly ColumnPlan[],
    where: PageRef,
    options: ReferenceOptions,
  ) => Promise<DecodedPage>;
}

/**
 * A format this client decodes, by the one name it has everywhere (stream options, `--format`, the table
 * below). Table JSON is `'json'` here; the wire's own names (`'table'`, ...) are for raw downloads.
 * Spelled out rather than `keyof typeof FORMATS` so the public type does not expose the decoders.
 */
export type DecodableFormat = 'json' | 'csv' | 'xlsx';

/** The formats this client reads, in the order `format: 'auto'` prefers them (fastest to decode first). */
export const FORMATS = {
  json: {
    mediaType: MediaType.table,
    envelope: true,
    fast(plan, options) {
      const decoder = new FastTableDecoder<FastTablePage | FastRowPage>(plan, options);
      return {
        *decode(body, where) {
          return tablePage(yield* decoder.slices(body, where));
        },
        stream(where, bodyLength) {
          const stream = decoder.stream(where, bodyLength);
          return {
            prepare: () => stream.prepare(),
            push: (chunk) => stream.push(chunk),
            get declined() {
              return stream.declined;
            },
            *finish() {
              return tablePage(yield* stream.finish());
            },
            abandon: () => stream.abandon(),
          };
        },
        recycle: (part) => decoder.recycle(part),
        bodyBuffer: (size) => decoder.bodyBuffer(size),
        releaseBody: (buffer) => decoder.releaseBody(buffer),
      };
    },
    reference: decodeTableJson,
  },
  csv: {
    mediaType: MediaType.csv,
    envelope: false,
    fast(plan) {
      const decoder = new FastCsvDecoder(plan);
      // Bodies read into buffers of the decoder's (which copies what it keeps): read so, a body is taken
      // from its socket at most 256 kB a turn (core/loop-budget.ts), and pages reuse the buffers.
      const bodies = new BodyBuffers();
      return {
        *decode(body, where) {
          const part = yield* decoder.slices(body, where);
          return part && { part };
        },
        bodyBuffer: (size) => bodies.take(size),
        releaseBody: (buffer) => bodies.release(buffer),
      };
    },
    reference: async (body, plan, where, options) => ({
      part: await allRows(
        decodeCsv(options.invalidUtf8 === 'error' ? checkedUtf8(body, where) : body, plan, where),
      ),
    }),
  },
  xlsx: {
    mediaType: MediaType.xlsx,
    envelope: false,
    // An XLSX body is a zip of XML: its XML parser, not us, reads the text inside.
    reference: async (body, plan, where) => ({ part: await allRows(decodeXlsx(body, plan, where)) }),
  },
} as const satisfies Record<DecodableFormat, ResultFormat>;

/** The decodable formats, in `format: 'auto'`'s order of preference. */
export const DECODABLE_FORMATS = Object.keys(FORMATS) as DecodableFormat[];

async function allRows(chunks: AsyncIterable<WireValue[][]>): Promise<WireValue[][]> {
  const rows: WireValue[][] = [];
  for await (const chunk of chunks) for (const row of chunk) rows.push(row);
  return rows;
}

/**
 * Table JSON's reference: reads the whole body (`JSON.parse` cannot take it in pieces), parses and checks
 * the page. Values are typed by position, so a page whose rows follow other columns than the plan's is a
 * `DecodeError` (an empty page is left to the page fetcher, which knows whether rows were due).
 */
export async function decodeTableJson(
  body: AsyncIterable<Uint8Array | string>,
  plan: readonly ColumnPlan[],
  where: PageRef,
  options: ReferenceOptions = REFERENCE_DEFAULTS,
): Promise<DecodedPage> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const bytes =
      typeof chunk === 'string'
        ? Buffer.from(chunk)
        : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    parts.push(bytes);
    size += bytes.length;
  }
  const whole = parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
  if (options.invalidUtf8 === 'error') {
    const found = findInvalidUtf8(whole);
    if (found) throw locateInvalidUtf8(whole, 'invalid' in found ? found.invalid : found.incomplete, where);
  }
  const page = parseTablePage(whole.toString('utf8'), where);
  if (page.rows.length > 0) checkFields(page.fields, plan, where);
  return { part: page.rows, envelope: { total: page.total, count: page.count, start: page.start } };
}

/** A noncharacter (U+FDD0, never in interchange text) put where the malformed bytes were, to find their cell. */
const MARK = Buffer.from('\ufdd0');

/**
 * The error for the malformed bytes at `at`, naming the row and column when they are inside a cell: the
 * page is parsed once more with a mark in their place (only pages that fail take this path).
 */
function locateInvalidUtf8(whole: Buffer, at: number, where: PageRef): DecodeError {
  let cell: { row: number; column: string } | undefined;
  try {
    const marked = Buffer.concat([whole.subarray(0, at), MARK, whole.subarray(at + 1)]).toString('utf8');
    const page = JSON.parse(marked) as { rows?: unknown; fields?: unknown };
    const rows = Array.isArray(page.rows) ? (page.rows as unknown[]) : [];
    const fields = Array.isArray(page.fields) ? (page.fields as { id?: unknown }[]) : [];
    for (let r = 0; r < rows.length && cell === undefined; r++) {
      const row = rows[r];
      if (!Array.isArray(row)) continue;
      const j = row.findIndex((v) => typeof v === 'string' && v.includes('\ufdd0'));
      if (j >= 0) cell = { row: where.start + r, column: String(fields[j]?.id ?? `#${j + 1}`) };
    }
  } catch {
    // Not JSON around the bytes either: the page and the offset say enough.
  }
  return invalidUtf8Error(whole, at, where, { cell });
}
