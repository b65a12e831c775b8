/**
 * A table-JSON page decoded as its bytes arrive, into the same columns as `FastTableDecoder.decode()`
 * and under the same contract: the same as the reference, or nothing (`finish()` returns `undefined`, and
 * the reference decides: page-decoder.ts keeps the chunks of a stream's first pages for it, and has the
 * others asked for again).
 *
 * Why: a body read whole before its decode was copied, byte by byte, into a page-sized buffer, and on a
 * WAN (16-32 pages in flight, each holding one) most of those were fresh memory: a page fault per 4 kB,
 * ~10 us each on our 2-core VM, 39 % of a 500k-row `toTable()`'s faults and ~0.4 s of its main thread.
 * The decode also started only once the last byte was in.
 *
 * A body has three parts: the envelope before `rows` (kept to the end; small), the rows, and the
 * envelope after them (kept; small). The rows are decoded from a window: the bytes of the row in
 * progress and the chunk that came, copied into a buffer the decoder reuses (warm memory: the copy costs
 * ~1 % of what a fresh one did). The row loop is the whole-body one (`decodeRows`), given the bytes in
 * hand: it reads `undefined` past their end, which no cell accepts, so a row cut by the end fails, and
 * the stream goes back to the last row boundary the loop passed (`PageBuffers.resumeRow`/`resumeAt`)
 * and waits for more bytes. Rows are decoded only up to `margin` bytes before the end of what is in
 * hand (a few of the longest rows seen), so that rarely happens. A row that is wrong fails the same way
 * every time: the margin doubles each time, and the page is declined at its end, or at once when the
 * margin passes `MAX_MARGIN` (the rows would wait in the window for nothing).
 */

import { isUtf8 } from 'node:buffer';
import { BAIL, Bail, isDecline, loneSurrogate, setLoneSurrogate, skipWs } from './json-scan.js';
import { UTF8 } from './page-columns.js';
import type { StepBytes } from './slices.js';
import type { PageBuffers } from './table-json-cells.js';
import { PageMembersWalk } from './table-json-envelope.js';

/** Envelope bytes before `rows` past which a page is not ordinary (real ones have ~1-3 kB). */
const HEAD_MAX = 1024 * 1024;
const MIN_MARGIN = 4096;
const MAX_MARGIN = 4 * 1024 * 1024;
/** `rows` as an empty array: what stands for the rows in the envelope kept for the end. */
const EMPTY_ROWS = Buffer.from('[]');

/** Bytes appended at the end and dropped from the start: a window, or an envelope part. */
export class ByteRun {
  buf: Buffer;
  len = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafeSlow(size);
  }

  append(chunk: Uint8Array): void {
    const end = this.len + chunk.length;
    if (end > this.buf.length) {
      const next = Buffer.allocUnsafeSlow(Math.max(2 * this.buf.length, end));
      this.buf.copy(next, 0, 0, this.len);
      this.buf = next;
    }
    this.buf.set(chunk, this.len);
    this.len = end;
  }

  /** Drops the first `n` bytes. */
  shift(n: number): void {
    if (n === 0) return;
    this.buf.copyWithin(0, n, this.len);
    this.len -= n;
  }

  /** The bytes in hand, as a view (valid until the next `append`). */
  view(): Buffer {
    return this.buf.subarray(0, this.len);
  }
}

/** What a stream needs of its decoder (`T`: the decoder's page). */
export interface TablePageHost<T> {
  /** The page's column buffers (its `body` is set before each use). */
  page(): PageBuffers;
  /** The row loop: rows from `b[i]` until `stop` (see `decodeRows`). */
  rows(b: Buffer, i: number, page: PageBuffers, stop: number): number;
  /** How the decoder's slices are cut (shared with its whole-body decode). */
  readonly steps: StepBytes;
  /** The page once its rows are decoded: `envelope`'s rows end at `rowsEnd`. Throws when declined. */
  finish(page: PageBuffers, envelope: Buffer, walk: PageMembersWalk, rowsEnd: number, lone: boolean): T;
  /** Takes back the buffers of a declined page. */
  giveBack(page: PageBuffers): void;
  takeWindow(): ByteRun;
  releaseWindow(window: ByteRun): void;
}

const HEAD = 0;
const ROWS = 1;
const TAIL = 2;
const DECLINED = 3;

export class TablePageStream<T> {
  readonly #host: TablePageHost<T> | undefined;
  #state: number;
  readonly #head = new ByteRun(4096);
  /** Where `rows`'s value starts in the envelope's first part (`#head`). */
  #rowsAt = -1;
  #window: ByteRun | undefined;
  #tail: ByteRun | undefined;
  #page: PageBuffers | undefined;
  /** Whether the first row (or the array's end) has been seen. */
  #started = false;
  #lone = false;
  #margin = MIN_MARGIN;

  /**
   * `host` undefined: a decoder that declines every page (no columns). `margin`: the first margin (tests
   * start it at 1, so that rows are cut by the end of the bytes in hand everywhere).
   */
  constructor(host: TablePageHost<T> | undefined, margin = MIN_MARGIN) {
    this.#host = host;
    this.#state = host ? HEAD : DECLINED;
    this.#margin = margin;
  }

  /** Declined already (the rest of the body changes nothing), or done. */
  get declined(): boolean {
    return this.#state === DECLINED;
  }

  /**
   * Makes the page's buffers now (~5-8 MB for a 20,000-row page of long strings: 1-9 ms when fresh), so
   * that their driver can give that a turn of its own; else the first rows' chunk does.
   */
  prepare(): void {
    if (this.#state !== DECLINED) this.#page ??= this.#host!.page();
  }

  /** The next chunk of the body. */
  push(chunk: Uint8Array): void {
    try {
      switch (this.#state) {
        case HEAD:
          this.#head.append(chunk);
          this.#findRows();
          break;
        case ROWS:
          this.#window!.append(chunk);
          this.#slice();
          break;
        case TAIL:
          this.#tail!.append(chunk);
          break;
      }
    } catch (error) {
      this.#decline(error);
    }
  }

  /**
   * The body has ended: the rows left decoded in slices (yielding between two), then the page, or
   * `undefined` when it is not ordinary (the reference decides).
   */
  *finish(): Generator<void, T | undefined, void> {
    try {
      if (this.#state === ROWS) yield* this.#decodeRows(true);
      if (this.#state !== TAIL) throw BAIL;
      // The envelope with its rows as `[]`: the members' check of a whole body, on a few hundred bytes.
      const envelope = Buffer.concat([
        this.#head.view().subarray(0, this.#rowsAt),
        EMPTY_ROWS,
        this.#tail!.view(),
      ]);
      if (!isUtf8(envelope)) throw BAIL;
      const walk = new PageMembersWalk(envelope);
      if (walk.toRows() !== this.#rowsAt) throw BAIL;
      const page = this.#host!.finish(this.#page!, envelope, walk, this.#rowsAt + 2, this.#lone);
      this.#page = undefined;
      this.#state = DECLINED; // done: nothing more may be pushed
      return page;
    } catch (error) {
      this.#decline(error);
      return undefined;
    }
  }

  /** The body failed: gives the buffers back. */
  abandon(): void {
    this.#decline(BAIL);
  }

  #findRows(): void {
    const head = this.#head.view();
    let at: number;
    try {
      at = new PageMembersWalk(head).toRows();
    } catch (error) {
      // Not all the members before `rows` are in hand yet (or they are wrong: then `finish()` declines).
      if (!(error instanceof Bail) || head.length > HEAD_MAX) throw error;
      return;
    }
    if (at >= head.length) return; // `"rows":` and nothing after it yet
    if (head[at] !== 0x5b) throw BAIL;
    const host = this.#host!;
    this.#rowsAt = at;
    this.#page ??= host.page();
    this.#window = host.takeWindow();
    this.#window.append(head.subarray(at + 1));
    this.#state = ROWS;
    this.#slice();
  }

  /** A push decodes one slice of the rows in hand; what it leaves waits for the next push, or the end. */
  #slice(): void {
    const slice = this.#decodeRows(false);
    slice.next();
    slice.return();
  }

  /**
   * Decodes the rows in hand (`final`: all of them, the body has ended) in slices of ~5 ms (slices.ts),
   * yielding between two. Slices, because a chunk is not a bounded amount of work: the row loop not yet
   * compiled (a process's first pages) took 5-11 ms for a 64 kB chunk.
   */
  *#decodeRows(final: boolean): Generator<void, void, void> {
    const window = this.#window!;
    const page = this.#page!;
    const host = this.#host!;
    const b = window.view();
    const n = b.length;
    let i = skipWs(b, 0);
    if (!this.#started) {
      if (i >= n) {
        if (final) throw BAIL;
        return;
      }
      this.#started = true;
      if (b[i] === 0x5d) {
        page.done = true;
        this.#toTail(b, i + 1);
        return;
      }
    }
    const end = final ? n : n - this.#margin;
    if (i >= end) {
      if (final) throw BAIL; // whitespace, and no `]`
      return;
    }
    page.body = new DataView(b.buffer, b.byteOffset, n);
    let cut = false;
    try {
      yield* host.steps.run(i, end, (from, to) => {
        page.resumeRow = page.length;
        page.resumeAt = from;
        setLoneSurrogate(false);
        let next: number;
        try {
          next = host.rows(b, from, page, to);
        } catch (error) {
          if (!(error instanceof Bail) || final) throw error;
          // The bytes in hand end inside a row (or the row is wrong): back to the last boundary passed.
          this.#rollBack(page);
          next = page.resumeAt;
          cut = true;
        }
        // Lone surrogates of a row that was cut too: a false alarm declines a page in 'exact' mode only.
        this.#lone ||= loneSurrogate;
        if (next > from) {
          if (!isUtf8(b.subarray(from, next))) throw BAIL;
          const rows = page.length - page.resumeRow;
          if (rows > 0) this.#margin = Math.max(this.#margin, 4 * Math.ceil((next - from) / rows));
        }
        i = next;
        return page.done || cut ? undefined : next;
      });
      if (cut) {
        this.#margin *= 2;
        if (this.#margin > MAX_MARGIN) throw BAIL;
      }
      if (page.done) this.#toTail(b, i);
    } finally {
      // What was decoded leaves the window, also when a push stops after its first slice.
      if (this.#window === window) window.shift(i);
    }
  }

  /** Undoes a row cut short: its cells are rewritten when it is decoded again, its string bytes dropped. */
  #rollBack(page: PageBuffers): void {
    const r = page.resumeRow;
    page.length = r;
    page.done = false;
    for (let j = 0; j < page.kinds.length; j++) {
      if (page.kinds[j] === UTF8) page.strPos[j] = page.i32[j]![r]!;
    }
  }

  /** The rows have ended at `b[at]`: what follows is the envelope's end. */
  #toTail(b: Buffer, at: number): void {
    const tail = new ByteRun(Math.max(256, b.length - at));
    tail.append(b.subarray(at));
    this.#tail = tail;
    this.#state = TAIL;
    this.#host!.releaseWindow(this.#window!);
    this.#window = undefined;
  }

  #decline(error: unknown): void {
    const host = this.#host;
    this.#state = DECLINED;
    if (host && this.#page) host.giveBack(this.#page);
    if (host && this.#window) host.releaseWindow(this.#window);
    this.#page = undefined;
    this.#window = undefined;
    this.#tail = undefined;
    if (!isDecline(error)) throw error;
  }
}
