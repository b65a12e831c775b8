/**
 * A page-local dictionary of strings keyed by their UTF-8 bytes: a decoder gives it the bytes of each
 * value of a dictionary column straight from the body and gets an id, with no JS string per value; the
 * page's distinct strings are made once, by `entries()`. Shared by the table-JSON and CSV byte decoders.
 */
import { grow } from '../convert/grow.js';

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** A page-local dictionary keyed by UTF-8 bytes: open addressing over FNV-1a hashes. */
export class ByteDictionary {
  slots = new Int32Array(256).fill(-1);
  hashes = new Int32Array(128);
  bytes = new Uint8Array(4096);
  offsets = new Int32Array(129);
  count = 0;

  /** The id of `b[s, e)`, added when new. */
  id(b: Uint8Array, s: number, e: number): number {
    // `| 0`: the offset basis is above 2^31, and `hashes` stores int32s; an empty key (no `imul` to make it
    // one) never matched its stored hash, and each empty string got an id of its own.
    let h = FNV_OFFSET | 0;
    for (let k = s; k < e; k++) h = Math.imul(h ^ b[k]!, FNV_PRIME);
    const mask = this.slots.length - 1;
    const len = e - s;
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const id = this.slots[slot]!;
      if (id < 0) return this.#add(b, s, e, h, slot);
      if (this.hashes[id] !== h) continue;
      const at = this.offsets[id]!;
      if (this.offsets[id + 1]! - at !== len) continue;
      let k = 0;
      while (k < len && this.bytes[at + k] === b[s + k]) k++;
      if (k === len) return id;
    }
  }

  #add(b: Uint8Array, s: number, e: number, h: number, slot: number): number {
    const id = this.count++;
    if (id + 1 >= this.hashes.length) {
      this.hashes = grow(this.hashes, id + 2, id);
      this.offsets = grow(this.offsets, id + 2, id + 1);
    }
    const at = this.offsets[id]!;
    if (at + (e - s) > this.bytes.length) this.bytes = grow(this.bytes, at + (e - s), at);
    this.bytes.set(b.subarray(s, e), at);
    this.offsets[id + 1] = at + (e - s);
    this.hashes[id] = h;
    this.slots[slot] = id;
    if (this.count * 2 > this.slots.length) this.#rehash();
    return id;
  }

  #rehash(): void {
    const slots = new Int32Array(this.slots.length * 2).fill(-1);
    const mask = slots.length - 1;
    for (let id = 0; id < this.count; id++) {
      let slot = this.hashes[id]! & mask;
      while (slots[slot]! >= 0) slot = (slot + 1) & mask;
      slots[slot] = id;
    }
    this.slots = slots;
  }

  entries(): string[] {
    const buf = Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
    const out = new Array<string>(this.count);
    for (let id = 0; id < this.count; id++)
      out[id] = buf.toString('utf8', this.offsets[id], this.offsets[id + 1]);
    return out;
  }
}

/** The dictionary of a column that is not a dictionary column: a placeholder, never given a value. */
export const EMPTY_DICT = new ByteDictionary();
