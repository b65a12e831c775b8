/**
 * A table-JSON page read as its bytes arrive, the one fast path for every page (a body already in hand is
 * one chunk of it): its envelope member by member (table-json-envelope.ts) and its rows into a sink, the
 * page's columns or its row objects (table-json-fast.ts). The contract is the reference's: the same result,
 * or nothing (`finish()` returns `undefined` and the reference decides).
 *
 * A page is a sequence of units: a member's name, a member's value, a row. Each is read as soon as it is
 * in hand; one cut by the end of the bytes in hand is left in the window (the bytes not yet read) and
 * framed (json-scan.ts: `Framer`) as more bytes come, without reading it again, then read once whole.
 * So every byte is scanned a bounded number of times whatever the page holds (a run of white space, a
 * 200 MB string, deep nesting, a row cut anywhere): the time is linear in the bytes. White space between
 * units is dropped as it comes. A unit that fails once whole was wrong, not cut: the page is declined.
 *
 * Why as they arrive: a body read whole first was copied, byte by byte, into a page-sized buffer, and on a
 * WAN (16-32 pages in flight, each holding one) most of those were fresh memory: a page fault per 4 kB.
 */

import { isUtf8 } from 'node:buffer';
import {
  BAIL,
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COMMA,
  Decline,
  Framer,
  isDecline,
  isWs,
  OPEN_ARRAY,
  OPEN_OBJECT,
  Scan,
  skipWs,
} from './json-scan.js';
import type { StepBytes } from './slices.js';
import { Envelope } from './table-json-envelope.js';

/** What the row loop writes a page's rows into (table-json-fast.ts: its columns, or its row objects). */
export interface Sink {
  /** Rows read; the loop sets it after each whole row. */
  length: number;
  /** Rows the sink holds before it must `grow`. */
  readonly cap: number;
  /** Per column, what reads its cell (a column kind's page column or row cell). */
  readonly cells: readonly { cell(s: Scan, r: number): unknown }[];
  /** The values of the row being read, as the cells returned them. */
  readonly values: unknown[];
  grow(rows: number): void;
  /** Row `length` has been read: its values are in `values`. */
  row(values: unknown[]): void;
  /** Drops the rows from `rows` on. */
  rollBack(rows: number): void;
}

/**
 * Reads rows from `s.i` (a row's `[`) until the array's `]` (true, `s.i` after it) or until the first row
 * to end at or past `stop` (false, `s.i` at the next row's `[`). A row counts once its separator (`,` or
 * the array's `]`) is read; `s.mark` is where the row being read began.
 */
export function readRows(s: Scan, sink: Sink, stop: number): boolean {
  const b = s.b;
  const { cells, values } = sink;
  const last = cells.length - 1;
  let r = sink.length;
  let i = s.i;
  for (;;) {
    s.mark = i;
    if (b[i] !== OPEN_ARRAY) throw BAIL;
    if (r === sink.cap) sink.grow(r);
    s.i = i + 1;
    for (let j = 0; j <= last; j++) {
      if (b[s.i]! <= 0x20) s.ws();
      values[j] = cells[j]!.cell(s, r);
      let c = b[s.i];
      if (c! <= 0x20) c = s.ws();
      if (c !== (j === last ? CLOSE_ARRAY : COMMA)) throw BAIL;
      s.i++;
    }
    i = skipWs(b, s.i);
    // Both tests and both stores on every row: the loop is often compiled in the middle of a page, and
    // an operation first made at its last row would throw that code away there.
    const c = b[i];
    const more = c === COMMA;
    const end = c === CLOSE_ARRAY;
    if (!more && !end) throw BAIL;
    sink.row(values);
    sink.length = ++r;
    i = skipWs(b, i + 1);
    s.i = i;
    if (end) return true;
    if (i >= stop) return false;
  }
}

/** The bytes in hand not yet read: a chunk read in place while it is the only one, else copies. */
class Window {
  #own: Buffer;
  #len = 0;
  #borrowed: Buffer | undefined;
  /** Bytes of the body not appended yet, when its length is known (a bound for growing). */
  #rest: number;

  constructor(own: Buffer, bodyLength: number) {
    this.#own = own;
    this.#rest = bodyLength;
  }

  get buffer(): Buffer {
    return this.#own;
  }

  append(chunk: Uint8Array): void {
    const bytes = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.#rest -= bytes.length;
    if (this.#len === 0 && this.#borrowed === undefined) {
      this.#borrowed = bytes;
      return;
    }
    const lent = this.#borrowed;
    this.#borrowed = undefined;
    if (lent !== undefined) this.#copy(lent);
    this.#copy(bytes);
  }

  #copy(bytes: Buffer): void {
    const end = this.#len + bytes.length;
    if (end > this.#own.length) {
      // Doubled, and past 8 MB (a unit as large as a body: one 200 MB string) made as large as what the
      // body can still bring, at once: held once, not copied from buffer to buffer of twice its size.
      const double = Math.max(end, 2 * this.#own.length);
      const big = end > 8 * 1024 * 1024 && Number.isFinite(this.#rest);
      const next = Buffer.allocUnsafeSlow(big ? Math.max(end, end + this.#rest) : double);
      this.#own.copy(next, 0, 0, this.#len);
      this.#own = next;
    }
    bytes.copy(this.#own, this.#len);
    this.#len = end;
  }

  view(): Buffer {
    return this.#borrowed ?? this.#own.subarray(0, this.#len);
  }

  /** Drops the first `n` bytes. */
  consume(n: number): void {
    if (n === 0) return;
    if (this.#borrowed !== undefined) {
      this.#borrowed = n >= this.#borrowed.length ? undefined : this.#borrowed.subarray(n);
      return;
    }
    this.#own.copyWithin(0, n, this.#len);
    this.#len -= n;
  }
}

/** What a page stream needs of its decoder (`T`: the decoder's page). */
export interface PageHost<T> {
  /** The sink of the page's rows, or undefined to frame `rows` unread (an envelope alone). */
  sink(): Sink | undefined;
  /** How the rows are cut into slices (shared by the decoder's pages). */
  readonly steps: StepBytes;
  /** The page, read to its end; throws a decline when the decoder does not take it. */
  finish(envelope: Envelope, rows: Sink | undefined, scan: Scan): T;
  /** The buffers of a declined page, back to the decoder. */
  giveBack(sink: Sink): void;
  /** The window's buffer, and back. */
  takeWindow(): Buffer;
  releaseWindow(buffer: Buffer): void;
}

const OPEN = 0;
const NAME = 1;
const VALUE = 2;
const ROWS = 3;
const FIRST = 4;
const ROW = 5;
const AFTER = 6;
const END = 7;
const DECLINED = 8;

const MIN_MARGIN = 4096;

/** The index after the last byte before `i` that is not white space. */
function skipBack(b: Uint8Array, i: number): number {
  while (isWs(b[i - 1])) i--;
  return i;
}

/** Thrown for what is wrong whatever bytes come next (bytes that are not UTF-8). */
const INVALID = new Decline('not UTF-8');

export class TablePageStream<T> {
  readonly #host: PageHost<T> | undefined;
  #state: number;
  readonly #window: Window | undefined;
  readonly #scan = new Scan();
  readonly #envelope = new Envelope();
  #name = '';
  /** Whether the page has `rows` (an array). */
  #rows = false;
  #sink: Sink | undefined;
  /** The unit at the window's start, cut by the end of the bytes in hand: framed up to `#framedTo`. */
  #framer: Framer | undefined;
  #framedTo = 0;
  /** The unit at the window's start is whole (it was framed): if it fails, the page is declined. */
  #whole = false;
  /** The bytes in hand checked to be UTF-8 (the units read: a unit never ends inside a character). */
  #checked = 0;
  /** The body has ended: every byte in hand is read. */
  #final = false;
  /** Bytes left unread at the end of the rows in hand: 4 times the bytes per row so far, at least 4 kB. */
  #margin = MIN_MARGIN;

  /**
   * `host` undefined: a decoder that declines every page (no columns). `bodyLength`: the body's length,
   * when declared (Infinity if not).
   */
  constructor(host: PageHost<T> | undefined, bodyLength = Number.POSITIVE_INFINITY) {
    this.#host = host;
    this.#state = host ? OPEN : DECLINED;
    this.#window = host && new Window(host.takeWindow(), bodyLength);
  }

  /** Declined already (the rest of the body changes nothing), or done. */
  get declined(): boolean {
    return this.#state === DECLINED;
  }

  /** Makes the rows' sink now (its buffers: 1-9 ms for a big page), so that a turn can be given to it. */
  prepare(): void {
    if (this.#state !== DECLINED) this.#sink ??= this.#host!.sink();
  }

  /** The next chunk of the body: what is whole is read (a slice at most), the rest waits. */
  push(chunk: Uint8Array): void {
    if (this.#state === DECLINED) return;
    try {
      this.#window!.append(chunk);
      const slice = this.#read(false);
      slice.next();
      slice.return();
    } catch (error) {
      this.#decline(error);
    }
  }

  /** The body has ended: the rest read in slices (yielding between two), then the page or `undefined`. */
  *finish(): Generator<void, T | undefined, void> {
    if (this.#state === DECLINED) return undefined;
    try {
      yield* this.#read(true);
      if (this.#state !== END || !this.#rows) throw BAIL;
      const page = this.#host!.finish(this.#envelope, this.#sink, this.#scan);
      this.#sink = undefined;
      this.#end();
      return page;
    } catch (error) {
      this.#decline(error);
      return undefined;
    }
  }

  /** The body failed: the buffers go back. */
  abandon(): void {
    this.#decline(BAIL);
  }

  /**
   * Reads the units in hand (`final`: the body has ended, all of them), rows in slices with a yield
   * between two; what is read leaves the window.
   */
  *#read(final: boolean): Generator<void, void, void> {
    this.#final = final;
    const window = this.#window!;
    const b = window.view();
    const s = this.#scan;
    if (this.#framer !== undefined) {
      const end = this.#framer.end(b, this.#framedTo);
      this.#framedTo = b.length;
      if (end < 0 && !final) return;
      this.#framer = undefined;
      this.#whole = true;
    }
    s.at(b, 0);
    this.#checked = 0;
    let unit = 0;
    try {
      for (;;) {
        const c = s.ws();
        unit = s.i;
        if (c === undefined) return;
        yield* this.#unit(c);
        if (s.i === unit) return; // rows within the margin: they wait for more bytes
        this.#check(s.i);
        this.#whole = false;
      }
    } catch (error) {
      if (error !== BAIL || final) throw error;
      // Cut by the end of the bytes in hand, or wrong: wrong if it fails once whole.
      if (this.#state === ROW) {
        unit = s.mark;
        this.#sink!.rollBack(this.#sink!.length);
      }
      this.#check(unit); // the rows read before the one cut
      if (this.#whole && unit === 0) throw error;
      const framer = new Framer();
      if (framer.end(b, unit) >= 0) throw error;
      this.#framer = framer;
      this.#framedTo = b.length - unit;
    } finally {
      window.consume(this.#framer === undefined ? Math.min(s.i, b.length) : unit);
    }
  }

  /** Declines the page unless the bytes read up to `to` (from the last checked) are UTF-8. */
  #check(to: number): void {
    if (to <= this.#checked) return;
    if (!isUtf8(this.#scan.b.subarray(this.#checked, to))) throw INVALID;
    this.#checked = to;
  }

  /** Reads the unit that starts with byte `c` at `s.i` (rows: a slice of them). */
  *#unit(c: number): Generator<void, void, void> {
    const s = this.#scan;
    switch (this.#state) {
      case OPEN:
        if (c !== OPEN_OBJECT) throw INVALID;
        s.i++;
        this.#state = NAME;
        return;
      case NAME:
        this.#name = this.#envelope.name(s);
        this.#state = this.#name === 'rows' ? ROWS : VALUE;
        return;
      case VALUE:
        this.#envelope.value(this.#name, s);
        this.#separator();
        return;
      case ROWS: {
        if (c !== OPEN_ARRAY) throw INVALID;
        this.#rows = true;
        this.#sink ??= this.#host!.sink();
        if (this.#sink === undefined) {
          // The envelope alone: the rows framed, not read (the stream's decoder reads them later).
          const end = new Framer().end(s.b, s.i);
          if (end < 0) throw BAIL;
          if (s.b[skipBack(s.b, end) - 1] !== CLOSE_ARRAY) throw INVALID;
          this.#envelope.rowsEmpty = s.b[skipWs(s.b, s.i + 1)] === CLOSE_ARRAY;
          s.i = end;
          this.#separator();
        } else {
          s.i++;
          this.#state = FIRST;
        }
        return;
      }
      case FIRST:
        if (c === CLOSE_ARRAY) {
          s.i++;
          this.#state = AFTER;
          return;
        }
        this.#state = ROW;
        yield* this.#unit(c);
        return;
      case ROW: {
        // Rows are read up to a margin before the end of the bytes in hand (they wait for the next
        // chunk): a row cut by the end would be read in part, then framed and read again.
        const end = this.#final ? s.b.length : s.b.length - this.#margin;
        if (s.i >= end) return;
        const sink = this.#sink!;
        let done = false;
        yield* this.#host!.steps.run(s.i, end, (at, to) => {
          s.i = at;
          const rows = sink.length;
          done = readRows(s, sink, to);
          // Checked per step: a push may stop after its first slice, and what was read leaves the window.
          this.#check(s.i);
          if (sink.length > rows) {
            this.#margin = Math.max(this.#margin, 4 * Math.ceil((s.i - at) / (sink.length - rows)));
          }
          return done ? undefined : s.i;
        });
        if (done) this.#state = AFTER;
        return;
      }
      case AFTER:
        this.#separator();
        return;
      default:
        // END: white space only, after the page's closing brace.
        throw INVALID;
    }
  }

  /** After a value: `,` (another member) or `}` (the page's end). */
  #separator(): void {
    const s = this.#scan;
    const c = s.ws();
    if (c === COMMA) this.#state = NAME;
    else if (c === CLOSE_OBJECT) this.#state = END;
    else throw c === undefined ? BAIL : INVALID;
    s.i++;
  }

  #end(): void {
    this.#state = DECLINED;
    if (this.#window) this.#host!.releaseWindow(this.#window.buffer);
  }

  #decline(error: unknown): void {
    if (this.#state !== DECLINED) {
      if (this.#sink) this.#host!.giveBack(this.#sink);
      this.#sink = undefined;
      this.#end();
    }
    if (!isDecline(error)) throw error;
  }
}
