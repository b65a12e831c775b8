/**
 * Table JSON straight from bytes, without `JSON.parse` and without a JS value per cell: the fast decoder of
 * a stream's pages. Each page is read by the one page reader (table-json-stream.ts) into one of two sinks
 * of the same row loop: the page's columns (a column kind's page column per column: kinds/), for Arrow
 * output, or its row objects (a kind's row cell per column, one object literal per row), for `toArray()`.
 *
 * The contract is "the same as the reference, or nothing": a page is declined whenever it is anything but
 * ordinary (not valid UTF-8, any JSON syntax error, a member twice, a row of the wrong width, a value its
 * column would reject or read otherwise, a lone surrogate where a JS string must keep it, ...). The caller
 * then takes the reference path (`parseTablePage` + the converters), which gives the same result or the
 * same error. So rare cases cost a second parse, never a different answer.
 */

import type { DecodedColumns } from '../convert/column-data.js';
import type { MadeRows } from '../convert/page-parts.js';
import type { ColumnPlan } from '../convert/plan.js';
import type { DatesAs } from '../convert/row-factory.js';
import type { PageRef } from '../core/errors.js';
import type { FieldDescriptor } from '../core/wire.js';
import { BodyBuffers } from './body-buffers.js';
import { BAIL, type Scan, utf8 } from './json-scan.js';
import { type Kind, kindOf, type PageColumn, pageRowCapacity, type RowCell } from './kinds/index.js';
import { allSlices, StepBytes } from './slices.js';
import { type Envelope, fieldsProblem, PageFields, type TableEnvelope } from './table-json-envelope.js';
import { type PageHost, type Sink, TablePageStream } from './table-json-stream.js';

/** The envelope members the page fetcher checks. */
interface Members {
  readonly total: number;
  readonly count: number;
  readonly start: number;
}

/** A page decoded to columns, with its envelope members. */
export interface FastTablePage extends DecodedColumns, Members {}

/** A page decoded to row objects, with its envelope members. */
export interface FastRowPage extends MadeRows, Members {}

/**
 * Most body bytes per slice of rows: ~4-5 ms of decoding once the row loop is compiled. Each slice's end
 * costs a turn of the event loop; at 256 kB (~1-2 ms) a 500k-row `toTable()` on loopback ran 6-12 %
 * slower (CPU +8-11 %) with an event-loop delay p99 of 24-30 ms, at 1 MB as fast as in one go.
 */
const SLICE_BYTES = 1024 * 1024;
/** A page's window starts at this size (the unit in progress and the chunk that came). */
const WINDOW_BYTES = 256 * 1024;
/** Windows kept per decoder: one per page in flight on a WAN (8 MB while none has grown). */
const MAX_WINDOWS = 32;
/** Spare page buffers kept per decoder (pages in the window are decoded into fresh ones beyond this). */
const MAX_SPARE = 4;

/** A page's columns: each column kind's page column. */
class ColumnsSink implements Sink {
  length = 0;
  readonly values: unknown[] = [];

  constructor(
    readonly cells: PageColumn[],
    public cap: number,
  ) {}

  grow(r: number): void {
    const next = this.cap * 2;
    for (const c of this.cells) c.grow(next, r);
    this.cap = next;
  }

  row(): void {}

  rollBack(rows: number): void {
    for (const c of this.cells) c.rollBack(rows);
  }
}

/** A page's row objects: each kind's row cell, then one object literal per row (`make`). */
class RowsSink implements Sink {
  length = 0;
  readonly cap = Number.POSITIVE_INFINITY;
  readonly values: unknown[] = [];
  readonly objects: Record<string, unknown>[] = [];

  constructor(
    readonly cells: RowCell[],
    readonly make: (values: unknown[]) => Record<string, unknown>,
  ) {}

  grow(): void {}

  row(values: unknown[]): void {
    this.objects.push(this.make(values));
  }

  rollBack(rows: number): void {
    this.objects.length = rows;
  }
}

/**
 * The object of a row's values, generated per plan (`new Function`, as `makeRowFactory` is): one object
 * literal with the column ids as fixed keys, so every row gets the same hidden class. Ids reach the source
 * only as `JSON.stringify` output; `__proto__` is a computed key (an own property, not the prototype).
 */
function rowMaker(plan: readonly ColumnPlan[]): (values: unknown[]) => Record<string, unknown> {
  const props = plan.map((c, j) => {
    const key = JSON.stringify(c.id);
    return `${c.id === '__proto__' ? `[${key}]` : key}: v[${j}]`;
  });
  return new Function('v', `"use strict"; return {${props.join(', ')}};`) as (
    values: unknown[],
  ) => Record<string, unknown>;
}

/**
 * Decodes the table-JSON pages of one result: one decoder per stream. It keeps the buffers of pages
 * already appended (`recycle`), the last page's `fields` bytes (to check the next pages' at once) and the
 * string bytes per row (to size buffers). `P`: its pages, `FastRowPage` when made with `rows`.
 */
export class FastTableDecoder<P extends FastTablePage | FastRowPage = FastTablePage> {
  readonly #plan: readonly ColumnPlan[];
  readonly #kinds: Kind[];
  readonly #exactStrings: boolean;
  readonly #fields: PageFields;
  readonly #rows: { readonly cells: RowCell[]; readonly make: RowsSink['make'] } | undefined;
  readonly #spare: DecodedColumns[] = [];
  readonly #bodies = new BodyBuffers();
  readonly #windows: Buffer[] = [];
  readonly #steps = new StepBytes(SLICE_BYTES);
  /** Per column: string bytes per row seen on the last page (a sizing hint). */
  readonly #bytesPerRow: Float64Array;

  /**
   * @param options.strings `'utf8'` (Arrow output): a lone surrogate escape is stored as U+FFFD, as
   * `Buffer#write` stores the JS string. `'exact'` (row objects made from the columns): pages with one are
   * declined, since U+FFFD would not give back the string `JSON.parse` makes.
   * @param options.rows row objects straight from the bytes (`toArray()`), with dates as `dates` says.
   */
  constructor(
    plan: readonly ColumnPlan[],
    options: {
      readonly strings?: 'utf8' | 'exact' | undefined;
      readonly rows?: { readonly dates: DatesAs } | undefined;
    } = {},
  ) {
    this.#plan = plan;
    this.#kinds = plan.map(kindOf);
    this.#exactStrings = options.strings === 'exact';
    this.#fields = new PageFields(plan);
    this.#bytesPerRow = new Float64Array(plan.length).fill(32);
    const dates = options.rows?.dates;
    this.#rows = dates && {
      cells: plan.map((c, j) => this.#kinds[j]!.row(c, dates)),
      make: rowMaker(plan),
    };
  }

  /** The page of a whole body, or `undefined` when it is declined. All at once: see `slices()`. */
  decode(body: Buffer, where: PageRef): P | undefined {
    return allSlices(this.slices(body, where));
  }

  /**
   * `decode()` a slice at a time (a body in hand is one chunk of a page read as it arrives): its buffers
   * in a step of their own, then rows in slices of ~5 ms, so its driver lets the event loop turn between.
   */
  *slices(body: Buffer, where: PageRef): Generator<void, P | undefined, void> {
    const stream = this.stream(where, body.length);
    stream.prepare();
    yield;
    stream.push(body);
    return yield* stream.finish();
  }

  /** A page read as its body arrives: `push()` its chunks, then `finish()` returns what `decode()` would. */
  stream(where: PageRef, bodyLength?: number): TablePageStream<P> {
    if (this.#plan.length === 0) return new TablePageStream<P>(undefined);
    const length = bodyLength ?? Number.POSITIVE_INFINITY;
    const host: PageHost<P> = {
      sink: () => this.#sink(where, length),
      steps: this.#steps,
      finish: (envelope, sink, scan) => this.#finish(envelope, sink!, scan),
      giveBack: (sink) => {
        if (sink instanceof ColumnsSink)
          this.#keep(
            sink.cells.map((c) => c.decoded(0)),
            0,
          );
      },
      takeWindow: () => this.#windows.pop() ?? Buffer.allocUnsafeSlow(WINDOW_BYTES),
      releaseWindow: (buffer) => {
        if (this.#windows.length < MAX_WINDOWS) this.#windows.push(buffer);
      },
    };
    return new TablePageStream(host, length);
  }

  #sink(where: PageRef, bodyLength: number): Sink {
    const rows = this.#rows;
    if (rows !== undefined) {
      for (const cell of rows.cells) cell.reset?.();
      return new RowsSink(rows.cells, rows.make);
    }
    // A row of `width` values is at least `[` + a byte a value + commas + `],`: 2 x width + 1 bytes.
    const cap = pageRowCapacity(where.limit, bodyLength, 2 * this.#plan.length + 1);
    // Buffers of a page already appended to the builder are reused (see `recycle()`): a page's worth of
    // fresh allocations per page is what keeps the allocator's footprint (RSS) high.
    const spare = this.#spare.pop();
    const cells = this.#kinds.map((kind, j) =>
      kind.column(
        { rows: cap, limit: where.limit, bodyLength, bytesPerRow: this.#bytesPerRow[j]! },
        spare?.columns[j],
      ),
    );
    return new ColumnsSink(cells, cap);
  }

  /** The page once read to its end; declines what this stream's plan does not take. */
  #finish(envelope: Envelope, sink: Sink, scan: Scan): P {
    if (!envelope.whole) throw BAIL;
    this.#fields.check(envelope.fields!);
    const members = { total: envelope.total, count: envelope.count, start: envelope.start };
    if (sink instanceof RowsSink) return { length: sink.length, objects: sink.objects, ...members } as P;
    if (this.#exactStrings && scan.lones > 0) throw BAIL;
    const length = sink.length;
    const columns = (sink as ColumnsSink).cells.map((c) => c.decoded(length));
    columns.forEach((c, j) => {
      if (c.kind === 'utf8' && length > 0) this.#bytesPerRow[j] = c.offsets[length]! / length;
    });
    return { length, columns, ...members } as FastTablePage as unknown as P;
  }

  /**
   * Hands back the buffers of a page returned by `decode()` once its rows have been appended (copied)
   * to a builder: the next page decodes into them. The page must not be read afterwards.
   */
  recycle(page: DecodedColumns): void {
    if (page.columns.length === this.#kinds.length) this.#keep(page.columns, page.length);
  }

  #keep(columns: DecodedColumns['columns'], length: number): void {
    if (this.#spare.length < MAX_SPARE) this.#spare.push({ length, columns });
  }

  /** A buffer for a page body of `size` bytes, from the spare ones when possible; see `releaseBody()`. */
  bodyBuffer(size: number): Buffer {
    return this.#bodies.take(size);
  }

  /** Gives back a buffer from `bodyBuffer()` once nothing reads it any more. */
  releaseBody(buffer: Buffer): void {
    this.#bodies.release(buffer);
  }
}

/** The stream of an envelope alone (`readTableEnvelope`): its rows framed, not read. */
const ENVELOPE_ONLY: Omit<PageHost<TableEnvelope>, 'steps'> = {
  sink: () => undefined,
  finish(envelope) {
    const fields: unknown = envelope.fields && JSON.parse(utf8(envelope.fields, 0, envelope.fields.length));
    const { total, count, start, lastDateUpdated } = envelope;
    if (!envelope.whole || fieldsProblem(fields) !== undefined || typeof lastDateUpdated !== 'string')
      throw BAIL;
    // An empty page's rows are checked here: no decoder reads them when the result is empty.
    if (count < 0 || (count === 0 && !envelope.rowsEmpty)) throw BAIL;
    return { fields: fields as FieldDescriptor[], total, count, start, lastDateUpdated, rowCount: count };
  },
  giveBack() {},
  takeWindow: () => Buffer.alloc(0),
  releaseWindow() {},
};

/**
 * A page's envelope read from its bytes, its rows framed but not read: the query's first page (up to
 * 10,000 rows, read for its descriptors) is then decoded once, by the stream's decoder, which checks its
 * rows against its `count` (a `ProtocolError` naming the page) and reads every value. `undefined` whenever
 * the rest is anything but ordinary: the caller then takes `parseTablePage`, which gives the same
 * envelope or the right `DecodeError`.
 */
export function readTableEnvelope(body: Buffer): TableEnvelope | undefined {
  const stream = new TablePageStream({ ...ENVELOPE_ONLY, steps: new StepBytes(SLICE_BYTES) });
  stream.push(body);
  return allSlices(stream.finish());
}
