/**
 * LRU of serialized (and compressed) result pages, bounded by count and bytes, whose entries also expire
 * after `idleMs` unused, so an emulator returns near its idle memory once a load has passed. Compressed
 * forms are held as promises, so concurrent reads of one share one compression; pages are set once built
 * (the page builder shares concurrent builds itself).
 */
interface Entry {
  readonly body: Promise<Buffer>;
  /** The body once known, for `peek`. */
  value: Buffer | undefined;
  bytes: number;
  used: number;
}

export class PageCache {
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  readonly #idleMs: number;
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;
  #sweeper: NodeJS.Timeout | undefined;

  /** Told the bytes of the entries its idle sweep drops (the emulator's idle collector frees them). */
  readonly #onSweep: ((bytes: number) => void) | undefined;

  constructor(maxEntries: number, maxBytes: number, idleMs = 0, onSweep?: (bytes: number) => void) {
    this.#maxEntries = maxEntries;
    this.#maxBytes = maxBytes;
    this.#idleMs = idleMs;
    this.#onSweep = onSweep;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Bytes held. */
  get bytes(): number {
    return this.#bytes;
  }

  #enabled(): boolean {
    return this.#maxEntries > 0 && this.#maxBytes > 0;
  }

  #touch(key: string, entry: Entry): void {
    // Re-insert: Map iteration order is the recency order.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    entry.used = performance.now();
  }

  /** The cached body of `key` if it is ready. */
  peek(key: string): Buffer | undefined {
    const hit = this.#entries.get(key);
    if (hit?.value === undefined) return undefined;
    this.#touch(key, hit);
    return hit.value;
  }

  /** Remembers a ready body. */
  set(key: string, body: Buffer): void {
    if (!this.#enabled() || body.length > this.#maxBytes) return;
    const old = this.#entries.get(key);
    if (old) {
      this.#entries.delete(key);
      this.#bytes -= old.bytes;
    }
    this.#entries.set(key, {
      body: Promise.resolve(body),
      value: body,
      bytes: body.length,
      used: performance.now(),
    });
    this.#bytes += body.length;
    this.#evict();
    this.#startSweeping();
  }

  /** The cached body of `key`, or `produce()`'s, remembered for next time. */
  get(key: string, produce: () => Buffer | Promise<Buffer>): Promise<Buffer> {
    const hit = this.#entries.get(key);
    if (hit) {
      this.#touch(key, hit);
      return hit.body;
    }
    const body = Promise.resolve().then(produce);
    if (!this.#enabled()) return body;
    const entry: Entry = { body, value: undefined, bytes: 0, used: performance.now() };
    this.#entries.set(key, entry);
    body.then(
      (buffer) => {
        if (this.#entries.get(key) !== entry) return;
        entry.value = buffer;
        entry.bytes = buffer.length;
        this.#bytes += buffer.length;
        this.#evict();
      },
      () => {
        if (this.#entries.get(key) === entry) this.#entries.delete(key);
      },
    );
    this.#evict();
    this.#startSweeping();
    return body;
  }

  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
    this.#stopSweeping();
  }

  #evict(): void {
    for (const [key, entry] of this.#entries) {
      if (this.#entries.size <= this.#maxEntries && this.#bytes <= this.#maxBytes) return;
      this.#entries.delete(key);
      this.#bytes -= entry.bytes;
    }
  }

  #startSweeping(): void {
    if (this.#idleMs <= 0 || this.#sweeper !== undefined) return;
    // unref: a cache must never keep a process alive.
    this.#sweeper = setInterval(() => this.#sweep(), Math.max(100, Math.min(1000, this.#idleMs / 2)));
    this.#sweeper.unref();
  }

  #stopSweeping(): void {
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }

  /** Drops entries unused for `idleMs` (oldest first, in recency order); stops when the cache is empty. */
  #sweep(): void {
    const before = performance.now() - this.#idleMs;
    let dropped = 0;
    for (const [key, entry] of this.#entries) {
      if (entry.used > before) break;
      if (entry.value === undefined) continue; // still being produced
      this.#entries.delete(key);
      this.#bytes -= entry.bytes;
      dropped += entry.bytes;
    }
    if (this.#entries.size === 0) this.#stopSweeping();
    if (dropped > 0) this.#onSweep?.(dropped);
  }
}
