/**
 * The `datetime` kind: Timestamp(ms). Arrow 21 stores Int64 as BigInt64Array. We write the two 32-bit
 * halves through an Int32Array view instead of creating a BigInt per value (measured: the BigInt path
 * dominates otherwise).
 */

import { type Data, makeData, type TimestampMillisecond } from 'apache-arrow';
import type { DecodedColumn } from '../column-data.js';
import { grow } from '../grow.js';
import { toTimestampMs } from '../values.js';
import { Column, INITIAL_CAPACITY, type WireRows, wrongKind } from './column.js';

/** Word order of an Int64 seen as two Int32s. Node runs little-endian everywhere today; be exact anyway. */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const LO = LITTLE_ENDIAN ? 0 : 1;
const HI = LITTLE_ENDIAN ? 1 : 0;
const TWO_POW_32 = 4_294_967_296;

export class TimestampColumn extends Column {
  #values = new BigInt64Array(INITIAL_CAPACITY);
  #words = new Int32Array(this.#values.buffer);

  appendColumn(rows: WireRows, col: number, invalidToNull: boolean): number {
    const n = rows.length;
    const end = this.len + n;
    if (end > this.#values.length) this.#reserve(end);
    this.validity.reserve(end);
    const words = this.#words;
    const valid = this.validity.bytes;
    let len = this.len;
    let nulls = 0;
    for (let i = 0; i < n; i++, len++) {
      const v = rows[i]![col];
      let ms: number;
      if (v === null || v === undefined) {
        ms = 0;
        nulls++;
      } else {
        ms = toTimestampMs(v);
        if (!Number.isNaN(ms)) valid[len >> 3]! |= 1 << (len & 7);
        else if (invalidToNull) {
          ms = 0;
          nulls++;
        } else return this.stop(len, nulls, i);
      }
      // ms is an integer well inside ±2^53: split into a signed high word and an unsigned low word.
      const hi = Math.floor(ms / TWO_POW_32);
      words[2 * len + LO] = (ms - hi * TWO_POW_32) | 0;
      words[2 * len + HI] = hi;
    }
    this.len = len;
    this.nulls += nulls;
    return -1;
  }

  appendDecoded(column: DecodedColumn, from: number, to: number): void {
    if (column.kind !== 'datetime') throw wrongKind(column, 'datetime');
    const end = this.len + (to - from);
    if (end > this.#values.length) this.#reserve(end);
    const words = this.#words;
    const values = column.values;
    let len = this.len;
    for (let i = from; i < to; i++, len++) {
      const ms = values[i]!;
      const hi = Math.floor(ms / TWO_POW_32);
      words[2 * len + LO] = (ms - hi * TWO_POW_32) | 0;
      words[2 * len + HI] = hi;
    }
    this.appendValidity(column.valid, from, to);
    this.len = end;
  }

  /** Grows the values and renews the word view over them (the two must share one buffer). */
  #reserve(end: number): void {
    this.#values = grow(this.#values, end);
    this.#words = new Int32Array(this.#values.buffer);
  }

  flush(): Data {
    const { nullCount, nullBitmap } = this.takeValidity();
    const data = makeData({
      type: this.type as TimestampMillisecond,
      length: this.len,
      nullCount,
      nullBitmap,
      data: this.#values.slice(0, this.len),
    });
    this.reset();
    return data;
  }
}
