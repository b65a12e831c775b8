/**
 * Small, fast integer hashing and a reseedable generator. Every synthetic value is a pure function of
 * its key, so a row can be produced from its coordinates alone: no stored rows, no `Math.random`.
 */

/** A 32-bit finaliser (lowbias32 by Chris Wellons): good avalanche for 2 multiplies. */
export function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Hashes any number of 32-bit words into one. Each word is mixed in with its own multiply so that
 * (a, b) and (b, a) give different keys.
 */
export function hashWords(...words: number[]): number {
  let h = 0x811c9dc5;
  for (const w of words) h = mix32(Math.imul(h ^ (w >>> 0), 0x9e3779b1) + 0x632be5ab);
  return h;
}

/** splitmix32 over a 32-bit state: reset with a key, then draw as many values as a row needs. */
export class Rng {
  #state = 0;

  constructor(key = 0) {
    this.#state = key >>> 0;
  }

  reset(key: number): this {
    this.#state = key >>> 0;
    return this;
  }

  /** A uniform 32-bit unsigned integer. */
  next(): number {
    this.#state = (this.#state + 0x9e3779b9) | 0;
    let z = this.#state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  }

  /** Uniform in [0, 1). */
  float(): number {
    return this.next() / 4294967296;
  }

  /** Uniform integer in [lo, hi], both inclusive. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.float() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.float() * items.length)] as T;
  }
}

/** `hashWords(a, b)` without the rest-array: used once per generated row. */
export function hash2(a: number, b: number): number {
  return mix32(
    Math.imul(mix32(Math.imul(0x811c9dc5 ^ (a >>> 0), 0x9e3779b1) + 0x632be5ab) ^ (b >>> 0), 0x9e3779b1) +
      0x632be5ab,
  );
}
