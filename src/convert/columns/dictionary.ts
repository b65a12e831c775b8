/**
 * The `string` kind, dictionary layout (ticker-like columns, see schema.ts): Dictionary<Utf8, Int32> with
 * one dictionary that only grows over the builder's life. Each flush contributes one chunk (the entries
 * first seen since the previous flush), and every batch's dictionary is the Vector of all chunks so far.
 * The IPC writers rely on exactly that shape: the stream writer sees the same first chunk and writes the
 * new chunks as delta dictionary batches; the file writer, which forbids replacement dictionaries, sees
 * only deltas too.
 */

import { type Data, type Dictionary, makeData, Utf8, Vector } from 'apache-arrow';
import type { DecodedColumn } from '../column-data.js';
import { grow } from '../grow.js';
import { toText } from '../values.js';
import { Column, INITIAL_CAPACITY, type WireRows, wrongKind } from './column.js';
import { Utf8Writer } from './utf8-writer.js';

export class DictionaryColumn extends Column {
  #indices = new Int32Array(INITIAL_CAPACITY);
  readonly #ids = new Map<string, number>();
  /** Entries added since the last flush, in index order (the next dictionary chunk). */
  readonly #entries = new Utf8Writer();
  #entryCount = 0;
  #pendingKeys: string[] = [];
  #markEntries = 0;
  #markPos = 0;
  readonly #chunks: Data<Utf8>[] = [];
  #dictionary: Vector<Utf8> | undefined;
  readonly #utf8 = new Utf8();

  constructor(type: Dictionary) {
    super(type);
  }

  appendColumn(rows: WireRows, col: number, invalidToNull: boolean): number {
    const n = rows.length;
    const end = this.len + n;
    if (end > this.#indices.length) this.#indices = grow(this.#indices, end);
    this.validity.reserve(end);
    const indices = this.#indices;
    const ids = this.#ids;
    const valid = this.validity.bytes;
    let len = this.len;
    let nulls = 0;
    for (let i = 0; i < n; i++, len++) {
      const v = rows[i]![col];
      let s: string | undefined;
      if (typeof v === 'string') s = v;
      else if (v === null || v === undefined) s = undefined;
      else {
        s = toText(v);
        if (s === undefined && !invalidToNull) return this.stop(len, nulls, i);
      }
      if (s === undefined) {
        indices[len] = 0;
        nulls++;
        continue;
      }
      let id = ids.get(s);
      if (id === undefined) {
        id = ids.size;
        ids.set(s, id);
        this.#entries.reserveRows(this.#entryCount + 1);
        this.#entries.write(this.#entryCount++, s);
        this.#pendingKeys.push(s);
      }
      indices[len] = id;
      valid[len >> 3]! |= 1 << (len & 7);
    }
    this.len = len;
    this.nulls += nulls;
    return -1;
  }

  /** Per decoded page: its entries' ids in this dictionary, -1 until first used (first-seen order). */
  #decodedIds = new WeakMap<readonly string[], Int32Array>();

  appendDecoded(column: DecodedColumn, from: number, to: number): void {
    if (column.kind !== 'dictionary') throw wrongKind(column, 'dictionary');
    const end = this.len + (to - from);
    if (end > this.#indices.length) this.#indices = grow(this.#indices, end);
    this.validity.reserve(end);
    const { entries, ids: local } = column;
    let map = this.#decodedIds.get(entries);
    if (map === undefined) {
      map = new Int32Array(entries.length).fill(-1);
      this.#decodedIds.set(entries, map);
    }
    const indices = this.#indices;
    const ids = this.#ids;
    const valid = this.validity.bytes;
    let len = this.len;
    let nulls = 0;
    for (let i = from; i < to; i++, len++) {
      const k = local[i]!;
      if (k < 0) {
        indices[len] = 0;
        nulls++;
        continue;
      }
      let id = map[k]!;
      if (id < 0) {
        // Entries join the dictionary in the order rows first use them, as on the wire-row path.
        const s = entries[k]!;
        const known = ids.get(s);
        if (known === undefined) {
          id = ids.size;
          ids.set(s, id);
          this.#entries.reserveRows(this.#entryCount + 1);
          this.#entries.write(this.#entryCount++, s);
          this.#pendingKeys.push(s);
        } else id = known;
        map[k] = id;
      }
      indices[len] = id;
      valid[len >> 3]! |= 1 << (len & 7);
    }
    this.len = len;
    this.nulls += nulls;
  }

  override mark(): void {
    super.mark();
    this.#markEntries = this.#entryCount;
    this.#markPos = this.#entries.pos;
  }

  override rollback(): void {
    super.rollback();
    const undone = this.#pendingKeys.splice(this.#markEntries);
    for (const key of undone) this.#ids.delete(key);
    this.#entryCount = this.#markEntries;
    this.#entries.pos = this.#markPos;
  }

  flush(): Data {
    // The first batch always contributes a chunk (possibly empty): the writers compare first chunks.
    if (this.#dictionary === undefined || this.#entryCount > 0) {
      const { valueOffsets, data } = this.#entries.take(this.#entryCount);
      this.#chunks.push(
        makeData({ type: this.#utf8, length: this.#entryCount, nullCount: 0, valueOffsets, data }),
      );
      this.#dictionary = new Vector(this.#chunks.slice());
      this.#entryCount = 0;
      this.#pendingKeys = [];
    }
    const { nullCount, nullBitmap } = this.takeValidity();
    const out = makeData({
      type: this.type as Dictionary,
      length: this.len,
      nullCount,
      nullBitmap,
      data: this.#indices.slice(0, this.len),
      dictionary: this.#dictionary,
    });
    this.reset();
    return out;
  }

  override reset(): void {
    super.reset();
    this.#markEntries = 0;
    this.#markPos = 0;
  }
}
