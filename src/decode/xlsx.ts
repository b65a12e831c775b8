/**
 * XLSX (`application/vnd.openxmlformats-officedocument.spreadsheetml.sheet`), as docs/wire-formats.md
 * describes it: the first worksheet holds a header row of field ids, then one row per result row; a null
 * is an absent cell and the empty string a text cell holding "".
 *
 * Text cells follow Excel's OOXML string escapes (ST_Xstring): `_xHHHH_` stands for the UTF-16 unit HHHH
 * (the emulator writes a CR as `_x000D_`, since XML line-end handling would turn a raw CR into LF, and a
 * literal `_xHHHH_` as `_x005F_xHHHH_`). exceljs's streaming reader leaves them as they are; we undo them.
 *
 * Read with exceljs's streaming `WorkbookReader`. Three of its behaviours shape this module:
 * - It decodes every inflated chunk of a zip entry as UTF-8 on its own, so a multi-byte character cut by
 *   a chunk boundary became U+FFFD (seen on 1500-row pages of Japanese reviews). We hand its XML parser
 *   text instead: worksheet iterators are wrapped in a streaming TextDecoder, and shared-string entries get
 *   `setEncoding('utf8')` (its decoder passes strings through). Both hooks are instance-level overrides
 *   of `_parseWorksheet`/`_parseSharedStrings`, checked for before use; the tests would catch their loss.
 * - A row with no cells at all is not emitted: gaps in row numbers are all-null rows, and we restore
 *   them. All-null rows at the very end of a page cannot be seen at all (no cell, no row element).
 * - On some corrupted bodies (a damaged deflate stream inside the zip) exceljs/unzipper neither finish
 *   nor fail. A watchdog turns "exceljs has had all the input it asked for and produced nothing for
 *   `stallMs`" into a DecodeError. It runs only while exceljs is working: not while we wait for the
 *   network (the transport's timeouts cover that), nor while our consumer holds a yielded chunk, nor
 *   in a window when the event loop was mostly busy with other work (exceljs may have been starved).
 */

import { Readable } from 'node:stream';
import type ExcelJS from 'exceljs';
import type { ColumnKind } from '../convert/column-kind.js';
import { formatDateDays, formatTimestampMs } from '../convert/dates.js';
import { numberWire } from '../convert/numbers.js';
import type { ColumnPlan } from '../convert/plan.js';
import { DecodeError, DqsError, type PageRef, safeRepr } from '../core/errors.js';
import { eventLoopBusy } from '../core/event-loop.js';
import { invalid } from '../core/validate.js';
import type { WireValue } from '../core/wire.js';

export interface XlsxDecodeOptions {
  /**
   * How long exceljs may work without progress (with all the input it asked for, and an event loop not
   * mostly busy with other work) before the body is declared undecodable. Minimum 1.
   * @default 10_000
   */
  readonly stallMs?: number;
}

/** Event-loop utilization over which a stall window is not counted (see `Feed`'s `#arm`). */
const BUSY_LOOP = 0.5;
/**
 * Busy windows in a row that are not counted, at most: a stuck exceljs in a process whose loop stays busy
 * (a loaded server) is still reported, after this many more windows, rather than never.
 */
const MAX_BUSY_WINDOWS = 5;
/** Rows per yielded chunk: small enough to stream, large enough to keep per-chunk overhead low. */
const CHUNK_ROWS = 1000;
const MS_PER_DAY = 86_400_000;
/** Every zip (and so every XLSX) starts with a local file header: "PK\x03\x04". */
const ESCAPE = /_x([0-9A-Fa-f]{4})_/g;

/** Undoes Excel's `_xHHHH_` string escapes (`_x005F_` protects a literal `_x...`: one left-to-right pass). */
export function unescapeXlsxText(text: string): string {
  if (!text.includes('_x')) return text;
  return text.replace(ESCAPE, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}
const ZIP_MAGIC = [0x50, 0x4b, 0x03, 0x04] as const;

/**
 * Decodes one XLSX page, yielding rows (wire values in field order) in chunks.
 *
 * @throws DecodeError for a body that is not a readable workbook (never a hang or another exception
 *   type), a header row that is not the field ids, or a row with cells beyond the field count. Errors of
 *   `body` itself pass through unchanged.
 */
export async function* decodeXlsx(
  body: AsyncIterable<Uint8Array | string> | NodeJS.ReadableStream,
  plan: readonly ColumnPlan[],
  where: PageRef,
  options: XlsxDecodeOptions = {},
): AsyncGenerator<WireValue[][]> {
  const stallMs = options.stallMs ?? 10_000;
  if (typeof stallMs !== 'number' || !(stallMs >= 1) || !Number.isFinite(stallMs)) {
    throw invalid('stallMs', 'a finite number >= 1', stallMs);
  }
  const input = (body as AsyncIterable<Uint8Array | string>)[Symbol.asyncIterator]();
  let head: Buffer[];
  try {
    head = await peekMagic(input, where);
  } catch (error) {
    await input.return?.()?.catch(() => {});
    throw error;
  }
  // Loaded on first use: exceljs adds ~12 MB to every process that imports the client otherwise.
  const { default: excel } = await import('exceljs');
  const feed = new Feed(input, head, stallMs, where);
  const reader = new excel.stream.xlsx.WorkbookReader(feed.stream, {
    worksheets: 'emit',
    sharedStrings: 'cache',
    hyperlinks: 'ignore',
    styles: 'ignore',
    entries: 'ignore',
  });
  decodeTextWhole(reader);
  const rows = new RowReader(plan, where);
  try {
    const sheets = reader[Symbol.asyncIterator]();
    let sheetCount = 0;
    for (;;) {
      const sheet = await feed.guard(sheets.next());
      if (sheet.done) break;
      sheetCount++;
      const sheetRows = (sheet.value as AsyncIterable<ExcelJS.Row>)[Symbol.asyncIterator]();
      for (;;) {
        const next = await feed.guard(sheetRows.next());
        if (next.done) break;
        // Only the first worksheet holds the results; later ones are read through and ignored.
        if (sheetCount === 1) rows.add(next.value);
        if (rows.pending.length >= CHUNK_ROWS) {
          feed.pause();
          yield rows.take();
          feed.resume();
        }
      }
    }
  } catch (error) {
    throw feed.failure(error);
  } finally {
    feed.close();
  }
  if (!rows.headerSeen)
    throw new DecodeError('XLSX body has no worksheet with a header row', { page: where });
  if (rows.pending.length > 0) yield rows.take();
}

type Chunk = Uint8Array | string;

/** A byte stream as text, characters never split between chunks. */
async function* utf8Text(source: AsyncIterable<Chunk>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8');
  for await (const chunk of source) {
    const text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    if (text.length > 0) yield text;
  }
  const rest = decoder.decode();
  if (rest.length > 0) yield rest;
}

/** A cell holding a value that looks like a number (attributes in group 1, the value in 2). */
const NUMBER_CELL = /<c\b([^>]*)><v>([-+.\deE]+)<\/v><\/c>/g;
/** Text held back at most, waiting for the end of a cell, before it is passed on as it is. */
const MAX_CARRY = 1 << 20;

/**
 * Worksheet XML with every numeric cell whose double would not give its text back
 * (`<v>9007199254740993</v>`, `<v>1.50</v>`: numbers.ts) made a text cell (`t="str"`): exceljs reads
 * numeric cells with `parseFloat`, which would round it before we see it. As text the converters read it
 * exactly or report it, like such a literal in table JSON. Chunks are cut after the last complete cell,
 * so a cell split between chunks is still seen whole.
 */
export async function* exactIntegerCells(source: AsyncIterable<string>): AsyncGenerator<string> {
  let carry = '';
  for await (const chunk of source) {
    const text = carry + chunk;
    const end = text.lastIndexOf('</c>');
    if (end < 0 && text.length < MAX_CARRY) {
      carry = text;
      continue;
    }
    const cut = end < 0 ? text.length : end + 4;
    carry = text.slice(cut);
    yield textCells(text.slice(0, cut));
  }
  if (carry.length > 0) yield textCells(carry);
}

function textCells(xml: string): string {
  return xml.replace(NUMBER_CELL, (cell: string, attributes: string, digits: string) => {
    if (typeof numberWire(digits) === 'number') return cell;
    const typed = / t="([^"]*)"/.exec(attributes);
    if (typed && typed[1] !== 'n') return cell;
    return `<c${attributes.replace(/ t="n"/, '')} t="str"><v>${digits}</v></c>`;
  });
}

interface ReaderInternals {
  _parseWorksheet?: (iterator: AsyncIterable<Chunk>, sheetNo: string) => unknown;
  _parseSharedStrings?: (entry: NodeJS.ReadableStream) => unknown;
}

/** See the module comment: make exceljs parse text, not independently decoded byte chunks. */
function decodeTextWhole(reader: ExcelJS.stream.xlsx.WorkbookReader): void {
  const internals = reader as unknown as ReaderInternals;
  const parseWorksheet = internals._parseWorksheet;
  if (typeof parseWorksheet === 'function') {
    internals._parseWorksheet = function (this: unknown, iterator, sheetNo) {
      return parseWorksheet.call(this, exactIntegerCells(utf8Text(iterator)), sheetNo);
    };
  }
  const parseSharedStrings = internals._parseSharedStrings;
  if (typeof parseSharedStrings === 'function') {
    internals._parseSharedStrings = function (this: unknown, entry) {
      entry.setEncoding?.('utf8');
      return parseSharedStrings.call(this, entry);
    };
  }
}

function toBuffer(chunk: Chunk): Buffer {
  if (typeof chunk === 'string') return Buffer.from(chunk, 'utf8');
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

/** Reads until 4 bytes are in: empty bodies and non-zip bodies fail here, before exceljs sees them. */
async function peekMagic(input: AsyncIterator<Chunk>, where: PageRef): Promise<Buffer[]> {
  const head: Buffer[] = [];
  let bytes = 0;
  while (bytes < ZIP_MAGIC.length) {
    const next = await input.next();
    if (next.done) break;
    const buf = toBuffer(next.value);
    head.push(buf);
    bytes += buf.length;
  }
  const start = Buffer.concat(head).subarray(0, ZIP_MAGIC.length);
  if (bytes === 0) throw new DecodeError('XLSX body is empty', { page: where });
  if (start.length < ZIP_MAGIC.length || ZIP_MAGIC.some((b, i) => start[i] !== b)) {
    throw new DecodeError(
      `Not an XLSX workbook (no zip signature; starts with ${safeRepr(start.toString('latin1'))})`,
      {
        page: where,
      },
    );
  }
  return head;
}

/**
 * The body as the Node stream exceljs wants, pulled only when exceljs reads, plus the watchdog and the
 * failure bookkeeping (a body error must surface as itself, not as a decode error).
 */
class Feed {
  readonly stream: Readable;
  #head: Buffer[];
  #pulling = false;
  #bodyError: unknown;
  #timer: NodeJS.Timeout | undefined;
  /** The loop's busy share since the timer was (re)started. */
  #busySinceArmed: (() => number) | undefined;
  /** Busy windows not counted since exceljs last made progress (or was paused, or waited). */
  #busyWindows = 0;
  #waitingOnNetwork = false;
  #paused = false;
  #rejectAbort!: (error: unknown) => void;
  readonly #aborted: Promise<never>;

  constructor(
    readonly input: AsyncIterator<Chunk>,
    head: Buffer[],
    readonly stallMs: number,
    readonly where: PageRef,
  ) {
    this.#head = head;
    this.#aborted = new Promise<never>((_, reject) => {
      this.#rejectAbort = reject;
    });
    this.#aborted.catch(() => {});
    this.stream = new Readable({ read: () => void this.#pull() });
    this.#arm();
  }

  /** Waits for an exceljs step, unless the body fails or exceljs stalls first. */
  async guard<T>(step: Promise<T>): Promise<T> {
    const value = await Promise.race([step, this.#aborted]);
    this.#arm();
    return value;
  }

  pause(): void {
    this.#paused = true;
    this.#arm();
  }

  resume(): void {
    this.#paused = false;
    this.#arm();
  }

  failure(error: unknown): unknown {
    if (this.#bodyError !== undefined) return this.#bodyError;
    if (error instanceof DqsError) return error;
    const message = error instanceof Error ? error.message : safeRepr(error);
    return new DecodeError(
      `Not a readable XLSX workbook: ${message}`,
      { page: this.where },
      { cause: error },
    );
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#paused = true;
    this.stream.destroy();
    void this.input.return?.()?.catch(() => {});
  }

  /**
   * (Re)starts the stall timer when exceljs is the one expected to make progress. A window in which the
   * event loop was mostly busy (other pages' decodes, the application) does not count: exceljs may have
   * been starved rather than stuck. A 500k-row XLSX `toTable()` on a loaded machine (4 pages of 40,000
   * rows decoding at once, 40 % of the time in scavenges) failed so, with "no progress for 10000 ms", on a
   * body that decodes. A stuck exceljs leaves the loop idle once the rest is done, and is reported then
   * (or after `MAX_BUSY_WINDOWS` busy windows in a row, if the loop never goes idle).
   */
  #arm(): void {
    this.#busyWindows = 0;
    this.#start();
  }

  #start(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#paused || this.#waitingOnNetwork) return;
    this.#busySinceArmed = eventLoopBusy();
    this.#timer = setTimeout(() => this.#expired(), this.stallMs);
  }

  #expired(): void {
    const busy = this.#busySinceArmed?.() ?? 0;
    if (busy > BUSY_LOOP && this.#busyWindows < MAX_BUSY_WINDOWS) {
      this.#busyWindows++;
      this.#start();
      return;
    }
    this.#rejectAbort(
      new DecodeError(`Not a readable XLSX workbook: the decoder made no progress for ${this.stallMs} ms`, {
        page: this.where,
      }),
    );
  }

  async #pull(): Promise<void> {
    if (this.#pulling) return;
    this.#pulling = true;
    try {
      const buffered = this.#head.shift();
      if (buffered !== undefined) {
        this.stream.push(buffered);
        return;
      }
      this.#waitingOnNetwork = true;
      this.#arm();
      let next: IteratorResult<Chunk>;
      try {
        next = await this.input.next();
      } finally {
        this.#waitingOnNetwork = false;
      }
      if (this.stream.destroyed) return;
      this.stream.push(next.done ? null : toBuffer(next.value));
    } catch (error) {
      this.#bodyError = error;
      this.#rejectAbort(error);
      this.stream.destroy();
    } finally {
      this.#pulling = false;
      this.#arm();
    }
  }
}

/** Checks the header, restores skipped all-null rows, converts cells to wire values. */
class RowReader {
  headerSeen = false;
  pending: WireValue[][] = [];
  /** The sheet row number the next data row should have. */
  #expected = 2;
  readonly #width: number;
  readonly #kinds: readonly ColumnKind[];

  constructor(
    readonly plan: readonly ColumnPlan[],
    readonly where: PageRef,
  ) {
    this.#width = plan.length;
    this.#kinds = plan.map((c) => c.kind);
  }

  take(): WireValue[][] {
    const out = this.pending;
    this.pending = [];
    return out;
  }

  add(row: ExcelJS.Row): void {
    const values = row.values as unknown[];
    if (!this.headerSeen) {
      this.#header(row.number, values);
      return;
    }
    const number = row.number;
    if (number < this.#expected) {
      throw new DecodeError(`XLSX rows out of order: sheet row ${number} after ${this.#expected - 1}`, {
        page: this.where,
      });
    }
    for (; this.#expected < number; this.#expected++) this.pending.push(new Array(this.#width).fill(null));
    this.#expected++;
    const resultRow = this.where.start + (number - 2);
    if (
      values.length - 1 > this.#width &&
      values.slice(this.#width + 1).some((v) => v !== undefined && v !== null)
    ) {
      throw new DecodeError(`A result row has cells beyond the ${this.#width} fields (sheet row ${number})`, {
        page: this.where,
        row: resultRow,
      });
    }
    const out: WireValue[] = new Array(this.#width);
    for (let j = 0; j < this.#width; j++) out[j] = this.#cell(values[j + 1], j, resultRow);
    this.pending.push(out);
  }

  #header(number: number, values: unknown[]): void {
    const ids = this.plan.map((c) => c.id);
    const got = values.slice(1).map((v) => (v === undefined ? null : v));
    // Header cells may come escaped or not (the emulator writes ids as they are): accept either spelling.
    const matches = (v: unknown, id: string) =>
      v === id || (typeof v === 'string' && unescapeXlsxText(v) === id);
    if (number !== 1 || got.length !== ids.length || got.some((v, j) => !matches(v, ids[j]!))) {
      throw new DecodeError(
        `XLSX header row does not match the fields: expected ${safeRepr(ids.join(','))}, got ${
          number !== 1 ? `no header (first row is sheet row ${number})` : safeRepr(got.join(','))
        }`,
        { page: this.where },
      );
    }
    this.headerSeen = true;
  }

  /** One exceljs cell value → a wire value (text, number, boolean, null). */
  #cell(v: unknown, j: number, row: number): WireValue {
    if (v === undefined || v === null) return null;
    if (typeof v === 'string') return unescapeXlsxText(v);
    if (typeof v === 'number' || typeof v === 'boolean') return v;
    if (v instanceof Date) {
      // Only with date-formatted numeric cells; give the column its wire spelling.
      const ms = v.getTime();
      return this.#kinds[j] === 'date' && ms % MS_PER_DAY === 0
        ? formatDateDays(ms / MS_PER_DAY)
        : formatTimestampMs(ms);
    }
    if (typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (Array.isArray(o.richText))
        return o.richText.map((run) => String((run as { text?: unknown }).text ?? '')).join('');
      if ('formula' in o || 'sharedFormula' in o)
        return o.result === undefined ? null : this.#cell(o.result, j, row);
      if (typeof o.text === 'string' && 'hyperlink' in o) return unescapeXlsxText(o.text);
      if ('error' in o) {
        throw new DecodeError(`XLSX cell holds the error ${safeRepr(o.error)}`, {
          page: this.where,
          row,
          column: this.plan[j]!.id,
        });
      }
    }
    throw new DecodeError(`Unsupported XLSX cell value ${safeRepr(v)}`, {
      page: this.where,
      row,
      column: this.plan[j]!.id,
    });
  }
}
