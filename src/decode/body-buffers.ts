/**
 * Page body buffers kept between pages by a byte decoder: a body is read into one, decoded, and the buffer
 * handed back, so pages do not each leave a body-sized allocation behind for the allocator to hold.
 */

/**
 * Spare buffers kept (pages in the window are read into fresh ones beyond this). Two: what loopback keeps
 * in flight; each spare is a page body kept alive for the whole stream, and four were ~11 MB of the 500k-row
 * IPC export's live memory (its peak RSS follows the live ArrayBuffers). A stream with more requests out
 * (a WAN) waits on the network, where a fresh allocation per page costs nothing that shows.
 */
const MAX_SPARE = 2;

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
