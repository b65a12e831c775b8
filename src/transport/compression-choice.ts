/**
 * Whether a result page is asked for compressed, decided by what the connection measures, never by the
 * host's name (the project's rule for link-dependent choices).
 *
 * Compression pays when bytes on the wire are what we wait for (a 100 Mbit/s link: a 10k-row page is
 * 4.2 MB plain, 0.6 MB gzipped) and costs when they are not (on loopback the server's gzip runs at a
 * fraction of the socket's speed). So in `'auto'` both are tried and timed on real pages: the time from
 * sending the request to the page's last byte, per decoded byte. The first page asks for compression, the
 * second does not; after that the cheaper one is used, and the other is tried again now and then (the link
 * or the server's load can change), less often the more clearly it lost, so a slow link pays for few
 * uncompressed pages.
 */

/** Bodies smaller than this say more about round trips than about bytes: not counted. */
const MIN_SAMPLE_BYTES = 64 * 1024;
/** Weight of a new sample in the running average. */
const ALPHA = 0.3;
/** Pages between two tries of the losing choice, at first; doubled (or quadrupled) after each try. */
const FIRST_RETRY_GAP = 16;
const MAX_RETRY_GAP = 1024;

interface Arm {
  samples: number;
  /** Running average of ms per decoded MB. */
  msPerMB: number;
}

export class CompressionChoice {
  readonly #arms = { on: { samples: 0, msPerMB: 0 } as Arm, off: { samples: 0, msPerMB: 0 } as Arm };
  readonly #asked = { on: 0, off: 0 };
  #gap = FIRST_RETRY_GAP;
  #untilRetry = FIRST_RETRY_GAP;

  /** Whether the next result page asks for compression. */
  next(): boolean {
    const { on, off } = this.#arms;
    // Until both are measured: one page of each (compressed first), then compressed unless only the plain
    // one has come back. A wide window does not start with many plain pages on a slow link.
    if (on.samples === 0 || off.samples === 0) {
      if (this.#asked.on === 0) return this.#count(true);
      if (this.#asked.off === 0) return this.#count(false);
      return this.#count(!(off.samples > 0 && on.samples === 0));
    }
    const better = on.msPerMB <= off.msPerMB;
    if (--this.#untilRetry > 0) return this.#count(better);
    // Try the loser again; the more clearly it lost, the longer until the next try.
    const ratio = better ? off.msPerMB / on.msPerMB : on.msPerMB / off.msPerMB;
    this.#gap = Math.min(MAX_RETRY_GAP, this.#gap * (ratio > 2 ? 4 : 2));
    this.#untilRetry = this.#gap;
    return this.#count(!better);
  }

  #count(compressed: boolean): boolean {
    if (compressed) this.#asked.on++;
    else this.#asked.off++;
    return compressed;
  }

  /** A page read to its end: `ms` from sending the request to its last byte, `bytes` decoded. */
  record(compressed: boolean, bytes: number, ms: number): void {
    if (bytes < MIN_SAMPLE_BYTES || !(ms >= 0)) return;
    const arm = compressed ? this.#arms.on : this.#arms.off;
    const cost = ms / (bytes / 1e6);
    arm.msPerMB = arm.samples === 0 ? cost : arm.msPerMB + ALPHA * (cost - arm.msPerMB);
    arm.samples++;
  }

  /** What was measured so far (for diagnostics and tests). */
  get measured(): { readonly compressed?: number; readonly plain?: number } {
    const { on, off } = this.#arms;
    return {
      ...(on.samples ? { compressed: on.msPerMB } : {}),
      ...(off.samples ? { plain: off.msPerMB } : {}),
    };
  }
}
