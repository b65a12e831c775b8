/**
 * The `string` kind, plain layout (Utf8): a string's UTF-8 bytes copied from the body into the column (its
 * escapes decoded), without a JS string; numbers and booleans kept as their text (`toText`).
 */

import type { DecodedColumn } from '../../convert/column-data.js';
import { rowValueOf } from '../../convert/row-factory.js';
import { toText } from '../../convert/values.js';
import type { WireValue } from '../../core/wire.js';
import { BAIL, QUOTE, type Scan } from '../json-scan.js';
import { ensure, type Kind, otherValue, type PageColumn, reuse, type Sizing } from './column.js';
import { StringCache } from './dictionary.js';

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

class Utf8Column implements PageColumn {
  pos = 0;
  /** The bytes as a Buffer, for `Buffer#copy` into them and `Buffer#write` of a JS string. */
  #out: Buffer;

  constructor(
    public offsets: Int32Array,
    public bytes: Uint8Array,
    public valid: Uint8Array,
    readonly sizing: Sizing,
  ) {
    this.#out = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    offsets[0] = 0;
  }

  cell(s: Scan, r: number): void {
    if (s.b[s.i] === QUOTE) {
      s.string();
      this.#copy(s.text, s.start, s.end, r);
    } else this.#put(r, s.wire(s.value()));
  }

  field(field: Buffer, len: number, quoted: boolean, r: number): void {
    if (len === 0 && !quoted) this.#put(r, null);
    else this.#copy(field, 0, len, r);
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
    this.#copy(bytes, 0, bytes.length, r);
  }

  #copy(from: Buffer, s: number, e: number, r: number): void {
    const o = this.pos;
    const len = e - s;
    if (o + len > this.bytes.length) this.#room(o + len, r);
    if (len < SHORT_COPY) {
      const out = this.bytes;
      for (let k = 0; k < len; k++) out[o + k] = from[s + k]!;
    } else from.copy(this.#out, o, s, e);
    this.pos = o + len;
    this.offsets[r + 1] = o + len;
    this.valid[r] = 1;
  }

  /**
   * Room for `need` bytes, with `r` rows written: at least a quarter more (a copy each time), and as many
   * as the page's rows need at the bytes per row so far (never past the body's length): a page whose
   * first guess was far off grew by a quarter at a time, 7-10 copies of a column on small pages.
   */
  #room(need: number, r: number): void {
    const { limit, bodyLength } = this.sizing;
    const expected = r === 0 ? 0 : Math.min(bodyLength, Math.ceil((this.pos / r) * limit * STRING_HEADROOM));
    const next = unzeroedBytes(Math.max(need, expected, Math.ceil(this.bytes.length * 1.25)));
    next.set(this.bytes.subarray(0, this.pos));
    this.bytes = next;
    this.#out = Buffer.from(next.buffer, next.byteOffset, next.byteLength);
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
  row(column, dates) {
    const read = rowValueOf(column, dates);
    const cache = new StringCache();
    return {
      cell(s) {
        if (s.b[s.i] !== QUOTE) return otherValue(s, read);
        s.string();
        if (s.end - s.start > SHORT || s.lone || (cache.misses > 256 && cache.misses > 2 * cache.hits)) {
          return s.str();
        }
        return cache.string(s);
      },
      reset: () => cache.reset(),
    };
  },
};
