/**
 * CSV (`text/csv`), as docs/wire-formats.md describes it: RFC 4180, a header line of field ids, then one
 * record per row; `""` is the empty string and an unquoted empty field is null.
 *
 * Values are turned into what table JSON would carry for the column's kind (numbers as numbers, booleans
 * as booleans, everything else as text), so the converters see the same input whatever the format; text
 * that does not fit its kind is kept as is, and the converter reports it with its original spelling.
 *
 * Speed: csv-parse hands a `cast` function a context object built with three object spreads per field;
 * that alone made parsing ~10x slower than csv-parse without `cast` (5.6 s vs 0.55 s for 100k rows x 14).
 * So, when the installed csv-parse has the shape we know (its core `parser.api` with `__onField`,
 * `state.field` and `state.wasQuoting`), we drive that core directly and replace its `__onField` with one
 * that makes the field's text and wire value at once, reading the quoting flag without building a
 * context. Otherwise we fall back to the public API (`csv-parse/sync` with `cast` and `context.quoting`):
 * exact, but it buffers the page and is slow. Both paths run the same tests.
 *
 * This is the reference path. Streams decode CSV pages with `FastCsvDecoder` (csv-columns.ts), which
 * drives the same core but writes fields straight into columns, and falls back to this one.
 */

import { type CastingContext, CsvError, Parser } from 'csv-parse';
import { parse as parseSync } from 'csv-parse/sync';
import type { ColumnKind } from '../convert/column-kind.js';
import { numberWire } from '../convert/numbers.js';
import type { ColumnPlan } from '../convert/plan.js';
import { DecodeError, DqsError, type PageRef, safeRepr } from '../core/errors.js';
import type { WireValue } from '../core/wire.js';

export interface CsvDecodeOptions {
  /**
   * `'core'` drives csv-parse's core directly (streamed, fast); `'public'` uses only its public API
   * (buffers the page; slow). `'auto'` picks `'core'` when the installed csv-parse supports it.
   * @default 'auto'
   */
  readonly engine?: 'auto' | 'core' | 'public';
}

/** The part of csv-parse's core (`new Parser().api`) we use; checked at run time before use. */
export interface CsvCore {
  parse(
    buf: Buffer | undefined,
    end: boolean,
    push: (record: WireValue[]) => void,
    close: () => void,
  ): Error | undefined;
  state: { wasQuoting: boolean; enabled: boolean; record: unknown[]; field: FieldBuffer };
  __onField: () => Error | undefined;
}

/** csv-parse's `ResizeableBuffer` holding the current field's bytes. */
interface FieldBuffer {
  buf: Buffer;
  length: number;
}

/** Options for both engines: BOM tolerated, strict column count (the header fixes it). */
export const PARSER_OPTIONS = { bom: true, relax_column_count: false } as const;

/** The parser's core when it has the shape we drive (see the module comment), else undefined. */
export function coreOf(parser: Parser): CsvCore | undefined {
  const api = (parser as unknown as { api?: Partial<CsvCore> }).api;
  if (
    api !== undefined &&
    typeof api.parse === 'function' &&
    typeof api.__onField === 'function' &&
    typeof api.state === 'object' &&
    api.state !== null &&
    typeof api.state.wasQuoting === 'boolean' &&
    api.state.enabled === true &&
    Array.isArray(api.state.record) &&
    typeof api.state.field === 'object' &&
    api.state.field !== null &&
    Buffer.isBuffer(api.state.field.buf) &&
    typeof api.state.field.length === 'number'
  ) {
    return api as CsvCore;
  }
  return undefined;
}

/** Field text → the wire value table JSON would carry for this column kind. */
export function fieldValue(text: string, quoted: boolean, kind: ColumnKind | undefined): WireValue {
  if (text === '') return quoted ? '' : null;
  // A number the double would not give back as sent stays text: the converters read it exactly
  // (numbers.ts), as they do a table-JSON literal.
  if (kind === 'number') return numberWire(text);
  if (kind === 'boolean') return text === 'true' ? true : text === 'false' ? false : text;
  return text;
}

function toBuffer(chunk: Uint8Array | string): Buffer {
  if (typeof chunk === 'string') return Buffer.from(chunk, 'utf8');
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

class HeaderCheck {
  seen = false;
  constructor(
    readonly ids: readonly string[],
    readonly where: PageRef,
  ) {}

  check(record: readonly unknown[]): void {
    this.seen = true;
    const ids = this.ids;
    if (record.length === ids.length && record.every((v, j) => v === ids[j])) return;
    throw new DecodeError(
      `CSV header does not match the fields: expected ${safeRepr(ids.join(','))}, got ${safeRepr(record.join(','))}`,
      { page: this.where },
    );
  }
}

/** A csv-parse failure (or anything unexpected from it) as a DecodeError naming page, row and line. */
function csvFailure(error: unknown, where: PageRef): DqsError {
  if (error instanceof DqsError) return error;
  if (error instanceof CsvError) {
    const info = error as CsvError & { lines?: number; records?: number };
    // `records` counts records already emitted, the header included: the failing one is data row `records`.
    const records = typeof info.records === 'number' ? info.records : undefined;
    const row = records !== undefined && records > 0 ? where.start + records - 1 : undefined;
    const line = typeof info.lines === 'number' ? ` at line ${info.lines}` : '';
    return new DecodeError(
      `Malformed CSV${line}: ${error.code}: ${error.message}`,
      { page: where, row },
      { cause: error },
    );
  }
  return new DecodeError(
    `Malformed CSV: ${(error as Error)?.message ?? safeRepr(error)}`,
    { page: where },
    { cause: error },
  );
}

/**
 * Decodes one CSV page, yielding rows (one array of wire values per record, in field order) in chunks
 * as the body arrives.
 *
 * @throws DecodeError for a header that is not the field ids, a record with the wrong number of fields,
 *   or malformed CSV (with page, row and line). Errors of `body` itself pass through unchanged.
 */
export async function* decodeCsv(
  body: AsyncIterable<Uint8Array | string>,
  plan: readonly ColumnPlan[],
  where: PageRef,
  options: CsvDecodeOptions = {},
): AsyncGenerator<WireValue[][]> {
  const kinds = plan.map((c) => c.kind);
  const header = new HeaderCheck(
    plan.map((c) => c.id),
    where,
  );
  const engine = options.engine ?? 'auto';
  const parser = engine === 'public' ? undefined : new Parser(PARSER_OPTIONS);
  const core = parser === undefined ? undefined : coreOf(parser);
  if (core === undefined) {
    if (engine === 'core')
      throw new DecodeError('The installed csv-parse does not expose the expected core', { page: where });
    yield* decodePublic(body, kinds, header, where);
    return;
  }

  const state = core.state;
  // Replaces csv-parse's `__onField` on this parser instance only: the field's bytes become text with one
  // `toString` (csv-parse slices a Buffer first), and the text becomes its wire value right here, reading
  // the quoting flag, instead of through `cast` (which builds a context object per field) or `__cast`
  // (which returns a fresh tuple per field). The rest (state machine, records, errors) stays csv-parse's.
  core.__onField = () => {
    const field = state.field;
    const length = field.length;
    const record = state.record;
    if (length === 0) record.push(state.wasQuoting ? '' : null);
    else {
      const text = field.buf.toString('utf8', 0, length);
      record.push(header.seen ? fieldValue(text, state.wasQuoting, kinds[record.length]) : text);
    }
    field.length = 0;
    state.wasQuoting = false;
    return undefined;
  };
  let out: WireValue[][] = [];
  const push = (record: WireValue[]) => {
    if (header.seen) out.push(record);
    else header.check(record);
  };
  const close = () => {};
  const run = (buf: Buffer | undefined, end: boolean) => {
    let error: unknown;
    try {
      error = core.parse(buf, end, push, close);
    } catch (thrown) {
      error = thrown;
    }
    if (error !== undefined) throw csvFailure(error, where);
  };
  for await (const chunk of body) {
    run(toBuffer(chunk), false);
    if (out.length > 0) {
      yield out;
      out = [];
    }
  }
  run(undefined, true);
  if (!header.seen) throw new DecodeError('CSV body is empty: no header line', { page: where });
  if (out.length > 0) yield out;
}

/** The public-API engine: buffers the page, then csv-parse/sync with `cast` reading `context.quoting`. */
async function* decodePublic(
  body: AsyncIterable<Uint8Array | string>,
  kinds: readonly ColumnKind[],
  header: HeaderCheck,
  where: PageRef,
): AsyncGenerator<WireValue[][]> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(toBuffer(chunk));
  let records: WireValue[][];
  try {
    records = parseSync(Buffer.concat(chunks), {
      ...PARSER_OPTIONS,
      cast: (value: string, context: CastingContext) =>
        context.records === 0
          ? value === '' && !context.quoting
            ? null
            : value
          : fieldValue(value, context.quoting, kinds[context.index]),
    }) as WireValue[][];
  } catch (error) {
    throw csvFailure(error, where);
  }
  const first = records[0];
  if (first === undefined) throw new DecodeError('CSV body is empty: no header line', { page: where });
  header.check(first);
  if (records.length > 1) yield records.slice(1);
}
