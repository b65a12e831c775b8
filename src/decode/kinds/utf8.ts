/**
 * The `string` kind, plain layout (Utf8): a string's UTF-8 bytes copied from the body into the column (its
 * escapes decoded), without a JS string; numbers and booleans kept as their text (`toText`).
 */

import type { DecodedColumn } from '../../convert/column-data.js';
import { toText } from '../../convert/values.js';
import type { WireValue } from '../../core/wire.js';
import { BAIL, type Into, QUOTE, type Scan } from '../json-scan.js';
import { ensure, type Kind, type PageColumn, reuse, type Sizing } from './column.js';
import { stringRow } from './dictionary.js';

/**
 * String bytes reserved per page, over the last page's bytes per row: pages of one result are alike, and
 * a page that becomes a batch as it is keeps this slack (more than 1/8 unused and the batch copies).
 */
const STRING_HEADROOM = 1.0625;
/** Strings shorter than this are copied by a loop: `Buffer#copy`'s call costs more than the bytes. */
const SHORT_COPY = 24;
/** Strings up to this many bytes are shared when they repeat on a page (see `UTF8.row`). */
const SHORT = 32;

/**
 * A string column's byte buffer, left as the allocator hands it over (not zeroed): zeroing a page's
 * ~5 MB of string bytes in one go (calloc touching fresh memory, a page fault per 4 kB, ~10 us each on our
 * 2-core VM) was one of the stalls over 15 ms of a 500k-row `toTable()`. Unzeroed, the memory is first
 * touched by the decode's own writes; `decoded()` zeroes what lies past the strings (a batch keeps the
 * whole ArrayBuffer, and stale process memory must never be reachable through it).
 */
function unzeroedBytes(size: number): Uint8Array {
  const bytes = Buffer.allocUnsafeSlow(size);
  // A plain Uint8Array (a batch's values must not be a Buffer, whose methods and `toJSON` differ).
  return new Uint8Array(bytes.buffer, bytes.byteOffset, size);
}

class Utf8Column implements PageColumn, Into {
  pos = 0;
  view: DataView;
  /** The row being written (the room a column needs is judged by the bytes per row so far). */
  #row = 0;

  constructor(
    public offsets: Int32Array,
    public bytes: Uint8Array,
    public valid: Uint8Array,
    readonly sizing: Sizing,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    offsets[0] = 0;
  }

  cell(s: Scan, r: number): void {
    if (s.b[s.i] === QUOTE) {
      this.#row = r;
      s.stringInto(this);
      this.offsets[r + 1] = this.pos;
      this.valid[r] = 1;
    } else this.#put(r, s.wire(s.value()));
  }

  field(field: Buffer, len: number, quoted: boolean, r: number): void {
    if (len === 0 && !quoted) this.#put(r, null);
    else this.#copy(field, len, r);
  }

  #put(r: number, v: WireValue): void {
    if (v === null) {
      this.offsets[r + 1] = this.pos;
      this.valid[r] = 0;
      return;
    }
    const text = toText(v);
    if (text === undefined) throw BAIL;
    const bytes = Buffer.from(text);
    this.#copy(bytes, bytes.length, r);
  }

  /** `from[0, len)` as row `r`'s value. */
  #copy(from: Uint8Array, len: number, r: number): void {
    const o = this.pos;
    this.#row = r;
    if (o + len > this.bytes.length) this.room(o + len, 0);
    if (len < SHORT_COPY) {
      const out = this.bytes;
      for (let k = 0; k < len; k++) out[o + k] = from[k]!;
    } else this.bytes.set(from.subarray(0, len), o);
    this.pos = o + len;
    this.offsets[r + 1] = o + len;
    this.valid[r] = 1;
  }

  /**
   * Room for `need` bytes: at least a quarter more (a copy each time), and as many as the page's rows
   * need at the bytes per row so far (never past the body's length): a page whose first guess was far
   * off grew by a quarter at a time, 7-10 copies of a column on small pages. A string of more than 1 MB
   * whole in hand (`rest`) gets its room at once rather than a copy per quarter.
   */
  room(need: number, rest: number): void {
    const { limit, bodyLength } = this.sizing;
    const r = this.#row;
    const expected = r === 0 ? 0 : Math.min(bodyLength, Math.ceil((this.pos / r) * limit * STRING_HEADROOM));
    const big = rest > 1024 * 1024 ? this.pos + rest : 0;
    const next = unzeroedBytes(Math.max(need, expected, big, Math.ceil(this.bytes.length * 1.25)));
    next.set(this.bytes.subarray(0, this.pos));
    this.bytes = next;
    this.view = new DataView(next.buffer, next.byteOffset, next.byteLength);
  }

  grow(rows: number, used: number): void {
    this.offsets = ensure(this.offsets, rows + 1, used + 1);
    this.valid = ensure(this.valid, rows, used);
  }

  rollBack(r: number): void {
    this.pos = this.offsets[r]!;
  }

  decoded(): DecodedColumn {
    if (this.pos < this.bytes.length) this.bytes.fill(0, this.pos);
    return { kind: 'utf8', offsets: this.offsets, bytes: this.bytes, valid: this.valid };
  }
}

export const UTF8: Kind = {
  column(sizing, spare) {
    const old = spare?.kind === 'utf8' ? spare : undefined;
    // The last page's bytes per row, but never more than the body: one huge page must not make every
    // later page ask for gigabytes.
    const size = Math.max(
      1024,
      Math.min(sizing.bodyLength, Math.ceil(sizing.bytesPerRow * sizing.rows * STRING_HEADROOM)),
    );
    return new Utf8Column(
      reuse(old?.offsets, sizing.rows + 1, Int32Array),
      old !== undefined && old.bytes.length >= size ? old.bytes : unzeroedBytes(size),
      reuse(old?.valid, sizing.rows, Uint8Array),
      sizing,
    );
  },
  /**
   * Row objects: a short value that repeats on the page (a category, a city) is one string shared by its
   * rows (`toArray()` keeps every row, and a value kept once is memory the GC neither copies nor marks
   * again); a column whose short values mostly differ (ids) stops being looked up for the rest of the page.
   */
  row: (column, dates) =>
    stringRow(
      column,
      dates,
      (s, cache) => s.end - s.start <= SHORT && !(cache.misses > 256 && cache.misses > 2 * cache.hits),
    ),
};
