/**
 * The `string` kind, plain layout: a Utf8 column. Blocks of strings are joined and encoded with one
 * `Buffer#write`, offsets first counted in UTF-16 units: for ASCII (the common case: ids, URLs, codes)
 * units are bytes and we are done; otherwise one pass over the new bytes maps units to bytes. One write
 * per string costs more: its per-call overhead dominates short strings.
 */

import { type Data, makeData, type Utf8 } from 'apache-arrow';
import type { DecodedColumn } from '../column-data.js';
import { toText } from '../values.js';
import { adopted, bitmapOf, Column, type WireRows, wrongKind } from './column.js';
import { Utf8Writer } from './utf8-writer.js';

/**
 * Strings are joined and encoded this many at a time: enough to amortise the per-call cost of
 * `Buffer#write`, few enough that the joined temporary stays small and dies young (a page-sized join is
 * a large-object allocation, and those made the GC dominate).
 */
const UTF8_BLOCK_ROWS = 256;

export class Utf8Column extends Column {
  readonly #text = new Utf8Writer();
  #markPos = 0;

  appendColumn(rows: WireRows, col: number, invalidToNull: boolean): number {
    const n = rows.length;
    const text = this.#text;
    text.reserveRows(this.len + n);
    this.validity.reserve(this.len + n);
    const offsets = text.offsets;
    const valid = this.validity.bytes;
    const parts: string[] = [];
    let len = this.len;
    let nulls = 0;
    for (let blockStart = 0; blockStart < n; blockStart += UTF8_BLOCK_ROWS) {
      const blockEnd = Math.min(n, blockStart + UTF8_BLOCK_ROWS);
      const base = text.pos;
      const firstRow = len;
      let units = 0;
      parts.length = 0;
      for (let i = blockStart; i < blockEnd; i++, len++) {
        const v = rows[i]![col];
        let s: string | undefined;
        if (typeof v === 'string') s = v;
        else if (v === null || v === undefined) s = undefined;
        else {
          s = toText(v);
          if (s === undefined && !invalidToNull) return this.stop(len, nulls, i);
        }
        if (s === undefined) nulls++;
        else {
          parts.push(s);
          units += s.length;
          valid[len >> 3]! |= 1 << (len & 7);
        }
        offsets[len + 1] = base + units;
      }
      if (units === 0) continue;
      text.reserveBytes(units * 3);
      const written = text.bytes.write(parts.length === 1 ? parts[0]! : parts.join(''), base);
      text.pos = base + written;
      if (written !== units && !text.unitsToBytes(firstRow, len, base))
        this.#writeEach(parts, firstRow, len, base);
    }
    this.len = len;
    this.nulls += nulls;
    return -1;
  }

  appendDecoded(column: DecodedColumn, from: number, to: number): void {
    if (column.kind !== 'utf8') throw wrongKind(column, 'string');
    const text = this.#text;
    const n = to - from;
    text.reserveRows(this.len + n);
    const first = column.offsets[from]!;
    const size = column.offsets[to]! - first;
    text.reserveBytes(size);
    const base = text.pos;
    text.bytes.set(column.bytes.subarray(first, first + size), base);
    const offsets = text.offsets;
    const source = column.offsets;
    const shift = base - first;
    let len = this.len;
    for (let i = from; i < to; i++, len++) offsets[len + 1] = source[i + 1]! + shift;
    text.pos = base + size;
    this.appendValidity(column.valid, from, to);
    this.len = len;
  }

  /** The decoded offsets and bytes are already Arrow's: taken over (the bytes trimmed if mostly unused). */
  override adoptDecoded(column: DecodedColumn, length: number): Data {
    if (column.kind !== 'utf8') throw wrongKind(column, 'string');
    this.checkAdoptable();
    const { offsets, bytes, valid } = column;
    // The decoder starts every page at offset 0; anything else goes the copying way.
    if (offsets[0] !== 0) return super.adoptDecoded(column, length);
    return makeData({
      type: this.type as Utf8,
      length,
      ...bitmapOf(valid, length),
      valueOffsets: adopted(offsets, length + 1),
      data: adopted(bytes, offsets[length]!),
    });
  }

  /** The exact fallback: one write per string. */
  #writeEach(parts: readonly string[], first: number, end: number, base: number): void {
    const text = this.#text;
    const valid = this.validity.bytes;
    text.pos = base;
    let k = 0;
    for (let r = first; r < end; r++) {
      if ((valid[r >> 3]! & (1 << (r & 7))) !== 0) text.write(r, parts[k++]!);
      else text.offsets[r + 1] = text.pos;
    }
  }

  override mark(): void {
    super.mark();
    this.#markPos = this.#text.pos;
  }

  override rollback(): void {
    super.rollback();
    this.#text.pos = this.#markPos;
  }

  flush(): Data {
    const { nullCount, nullBitmap } = this.takeValidity();
    const { valueOffsets, data } = this.#text.take(this.len);
    const out = makeData({
      type: this.type as Utf8,
      length: this.len,
      nullCount,
      nullBitmap,
      valueOffsets,
      data,
    });
    this.reset();
    return out;
  }
}
