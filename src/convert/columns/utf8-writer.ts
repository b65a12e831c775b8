/**
 * Utf8 bytes and Int32 offsets, written with `Buffer#write` (UTF-8, returns the byte count without
 * allocating a result object). Room for the worst case (3 bytes per UTF-16 unit) is reserved before a
 * write, so a write is never cut short. Shared by the two layouts of the `string` kind: a plain Utf8
 * column's values, and a dictionary column's entries.
 */

import { DecodeError } from '../../core/errors.js';
import { grow, grownCapacity } from '../grow.js';
import { INITIAL_CAPACITY } from './column.js';

/** Utf8 value offsets are Int32: one batch's string bytes must stay below 2 GiB. */
const MAX_UTF8_BYTES = 0x7fff_ffff;

export class Utf8Writer {
  bytes: Buffer = Buffer.allocUnsafe(INITIAL_CAPACITY * 16);
  offsets = new Int32Array(INITIAL_CAPACITY + 1);
  /** Bytes used. */
  pos = 0;

  reserveRows(rows: number): void {
    if (rows + 1 > this.offsets.length) this.offsets = grow(this.offsets, rows + 1);
  }

  reserveBytes(extra: number): void {
    const need = this.pos + extra;
    if (need <= this.bytes.length) return;
    if (need > MAX_UTF8_BYTES) {
      throw new DecodeError('A string column holds more than 2 GiB in one batch; flush batches more often');
    }
    // A Buffer, not a typed array `grow()` could construct; the same growth rule all the same.
    const next = Buffer.allocUnsafe(
      Math.min(grownCapacity(this.bytes.length, need, INITIAL_CAPACITY), MAX_UTF8_BYTES),
    );
    this.bytes.copy(next, 0, 0, this.pos);
    this.bytes = next;
  }

  /** Appends `s` as entry `index` (offsets[index + 1] marks its end). */
  write(index: number, s: string): void {
    if (this.pos + s.length * 3 > this.bytes.length) this.reserveBytes(s.length * 3);
    this.pos += this.bytes.write(s, this.pos);
    this.offsets[index + 1] = this.pos;
  }

  /**
   * Turns offsets of entries [from, to), written as `base + UTF-16 units`, into byte offsets by walking
   * the UTF-8 just written from `base`. False when an entry boundary falls inside a 4-byte sequence (a
   * surrogate pair split over two entries, which joined encode differently than apart).
   */
  unitsToBytes(from: number, to: number, base: number): boolean {
    const bytes = this.bytes;
    const offsets = this.offsets;
    let b = base;
    let units = 0;
    for (let r = from; r < to; r++) {
      const target = offsets[r + 1]! - base;
      while (units < target) {
        const c = bytes[b]!;
        if (c < 0x80) b += 1;
        else if (c < 0xe0) b += 2;
        else if (c < 0xf0) b += 3;
        else {
          b += 4;
          units++;
        }
        units++;
      }
      if (units !== target) return false;
      offsets[r + 1] = b;
    }
    return true;
  }

  /** Trimmed copies of the first `count` entries' offsets and bytes; then empty. */
  take(count: number): { valueOffsets: Int32Array; data: Uint8Array } {
    const valueOffsets = this.offsets.slice(0, count + 1);
    const data = new Uint8Array(this.pos);
    data.set(this.bytes.subarray(0, this.pos));
    this.pos = 0;
    return { valueOffsets, data };
  }
}
