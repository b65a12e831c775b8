/**
 * Page body buffers kept between pages by a byte decoder: a body is read into one, decoded, and the buffer
 * handed back, so pages do not each leave a body-sized allocation behind for the allocator to hold.
 */

/** Spare buffers kept (pages in the window are read into fresh ones beyond this). */
const MAX_SPARE = 4;

export class BodyBuffers {
  readonly #spare: Buffer[] = [];

  /** A buffer for a page body of `size` bytes, from the spare ones when possible; see `release()`. */
  take(size: number): Buffer {
    const k = this.#spare.findIndex((b) => b.length >= size && b.length <= 2 * size);
    if (k >= 0) return this.#spare.splice(k, 1)[0]!;
    return Buffer.allocUnsafeSlow(Math.ceil(size * 1.125));
  }

  /** Gives back a buffer from `take()` once nothing reads it any more. */
  release(buffer: Buffer): void {
    if (this.#spare.length < MAX_SPARE) this.#spare.push(buffer);
  }
}
