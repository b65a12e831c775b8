/**
 * LRU of serialized result pages, bounded by count and bytes. It holds promises, so concurrent reads of
 * one page (benchmarks, retries) share one serialization.
 */
export class PageCache {
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  readonly #entries = new Map<string, { readonly body: Promise<Buffer>; bytes: number }>();
  #bytes = 0;

  constructor(maxEntries: number, maxBytes: number) {
    this.#maxEntries = maxEntries;
    this.#maxBytes = maxBytes;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The cached body of `key`, or `produce()`'s, remembered for next time. */
  get(key: string, produce: () => Buffer | Promise<Buffer>): Promise<Buffer> {
    const hit = this.#entries.get(key);
    if (hit) {
      // Re-insert: Map iteration order is the recency order.
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      return hit.body;
    }
    const body = Promise.resolve().then(produce);
    if (this.#maxEntries === 0 || this.#maxBytes === 0) return body;
    const entry = { body, bytes: 0 };
    this.#entries.set(key, entry);
    body.then(
      (buffer) => {
        if (this.#entries.get(key) !== entry) return;
        entry.bytes = buffer.length;
        this.#bytes += buffer.length;
        this.#evict();
      },
      () => {
        if (this.#entries.get(key) === entry) this.#entries.delete(key);
      },
    );
    this.#evict();
    return body;
  }

  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }

  #evict(): void {
    for (const [key, entry] of this.#entries) {
      if (this.#entries.size <= this.#maxEntries && this.#bytes <= this.#maxBytes) return;
      this.#entries.delete(key);
      this.#bytes -= entry.bytes;
    }
  }
}
