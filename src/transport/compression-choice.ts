/**
 * Whether a result page is asked for compressed, decided by what the connection measures, never by the
 * host's name (the project's rule for link-dependent choices). Compression pays where bytes on the wire
 * are what we wait for and costs where they are not (loopback), so in `'auto'` both ways are timed on
 * real pages. The figures behind each rule below are in docs/performance.md ("Compression: the
 * measurements behind the choice").
 *
 * - A page's cost is the time from its response's headers to its last byte (transfer, with inflating
 *   overlapped) per decoded MB, divided by the mean number of page bodies read beside it, itself included
 *   (bodies read at once share the link and the CPU). The wait for the headers is the server's queue and
 *   work and is not counted; a server that compresses a page whole before answering hides its cost
 *   there, so near a tie this errs towards compressing.
 * - The first page asks plain and the second compressed, both in flight at once: plain first, because
 *   the result stream is ordered and a compressed first page holds the first batch back where bytes are
 *   cheap. Until both ways are measured, see `next()`.
 * - Then the way with the lower running average is used, and the other is tried again after a gap that
 *   grows, faster the more clearly it lost. How clearly is judged on each way's best page, not on the
 *   averages: whatever else the event loop did meanwhile only ever adds to a body's time.
 */

/** Bodies smaller than this say more about round trips than about bytes: not counted. */
const MIN_SAMPLE_BYTES = 64 * 1024;
/** Weight of a new sample in the running average. */
const ALPHA = 0.3;
/**
 * Pages between two tries of the losing choice, at first; doubled (quadrupled when it lost by more than
 * 2x) after each try, up to `MAX_RETRY_GAP`. Four times this when the first two measurements already
 * differ by more than `CLEAR_LOSS` (a retry that soon would cost more than it could tell).
 */
const FIRST_RETRY_GAP = 16;
const CLEAR_LOSS = 4;
const MAX_RETRY_GAP = 1024;
/** Requests between two plain ones while no plain page has been measured yet. */
const PLAIN_PROBE_GAP = 32;
/**
 * Requests between two compressed ones while only plain pages have been measured: a plain page came back
 * before the compressed one sent with it, so compressing lost that race, and a second compressed page
 * would lose it the same way and tell nothing new. Only for a compressed page that failed (its retry may
 * ask plain) is it asked again, as seldom as a plain one is.
 */
const COMPRESSED_PROBE_GAP = PLAIN_PROBE_GAP;

interface Arm {
  samples: number;
  /** Running average of ms per decoded MB: what the choice follows. */
  msPerMB: number;
  /** The best page's ms per decoded MB: how clearly a way lost (see the header). */
  bestMsPerMB: number;
}

export class CompressionChoice {
  readonly #arms = {
    on: { samples: 0, msPerMB: 0, bestMsPerMB: 0 } as Arm,
    off: { samples: 0, msPerMB: 0, bestMsPerMB: 0 } as Arm,
  };
  readonly #asked = { on: 0, off: 0 };
  #sincePlain = 0;
  #sinceCompressed = 0;
  #gap = FIRST_RETRY_GAP;
  #untilRetry = FIRST_RETRY_GAP;
  // Page bodies being read now, and the integral of that count over time (ms): a body's mean company.
  #reading = 0;
  #area = 0;
  #areaAt = 0;

  /**
   * A page body starts to be read (its headers came). Returns what `record()` takes as `sharing` once the
   * body is read, and `end()`, to call once whatever became of the body (idempotent).
   */
  bodyStarted(now: number): { sharing: (now: number) => number; end: (now: number) => void } {
    this.#advance(now);
    this.#reading++;
    const at = now;
    const area = this.#area;
    let ended = false;
    return {
      sharing: (t) => {
        this.#advance(t);
        return t > at ? (this.#area - area) / (t - at) : 1;
      },
      end: (t) => {
        if (ended) return;
        ended = true;
        this.#advance(t);
        this.#reading--;
      },
    };
  }

  #advance(now: number): void {
    if (now > this.#areaAt) {
      this.#area += this.#reading * (now - this.#areaAt);
      this.#areaAt = now;
    }
  }

  /** Whether the next result page asks for compression. */
  next(): boolean {
    const { on, off } = this.#arms;
    // The first two pages: one each way, both in flight at once, so the first to come back says which
    // kind of link this is; plain first, as it holds the ordered stream back least where bytes are cheap.
    if (this.#asked.off === 0 && on.samples === 0 && off.samples === 0) return this.#count(false);
    if (this.#asked.on === 0) return this.#count(true);
    // Until both are measured: compressed until a page has come back (a slow link must not fill a wide
    // window with plain pages while the first compressed one is on its way), then one plain page, asked
    // again every 32 requests until one has come back.
    if (on.samples === 0) {
      // A plain page came back first: a fast link (on a slow one the compressed page, a fraction of the
      // bytes, comes first). Compressing there is likely a loss, and a startup burst of compressed pages
      // costs the server's compression and our inflating for each: one compressed page at a time until
      // one is measured (asked again after 32 requests, should it have failed).
      if (off.samples > 0 && this.#asked.on > 0 && ++this.#sinceCompressed < COMPRESSED_PROBE_GAP) {
        return this.#count(false);
      }
      this.#sinceCompressed = 0;
      return this.#count(true);
    }
    if (off.samples === 0) {
      if (this.#asked.off > 0 && ++this.#sincePlain < PLAIN_PROBE_GAP) return this.#count(true);
      this.#sincePlain = 0;
      return this.#count(false);
    }
    const better = on.msPerMB <= off.msPerMB;
    if (--this.#untilRetry > 0) return this.#count(better);
    // Try the loser again; the more clearly it lost, the longer until the next try.
    this.#gap = Math.min(MAX_RETRY_GAP, this.#gap * (this.#lossRatio(better) > 2 ? 4 : 2));
    this.#untilRetry = this.#gap;
    return this.#count(!better);
  }

  #count(compressed: boolean): boolean {
    if (compressed) this.#asked.on++;
    else this.#asked.off++;
    return compressed;
  }

  /**
   * A page read to its end: `ms` from its headers to its last byte, `bytes` decoded, `sharing` the mean
   * number of page bodies read meanwhile, itself included (see the header).
   */
  record(compressed: boolean, bytes: number, ms: number, sharing = 1): void {
    if (bytes < MIN_SAMPLE_BYTES || !(ms >= 0)) return;
    const arm = compressed ? this.#arms.on : this.#arms.off;
    const cost = ms / (bytes / 1e6) / Math.max(1, sharing);
    arm.msPerMB = arm.samples === 0 ? cost : arm.msPerMB + ALPHA * (cost - arm.msPerMB);
    arm.bestMsPerMB = arm.samples === 0 ? cost : Math.min(arm.bestMsPerMB, cost);
    arm.samples++;
    const other = compressed ? this.#arms.off : this.#arms.on;
    if (arm.samples === 1 && other.samples > 0) {
      // Both just measured for the first time: a clear loser is retried later.
      if (this.#lossRatio(this.#arms.on.msPerMB <= this.#arms.off.msPerMB) > CLEAR_LOSS) {
        this.#gap = this.#untilRetry = FIRST_RETRY_GAP * 4;
      }
    }
  }

  /**
   * How many times dearer the losing way is than the better one (`better`: compressed), on each way's best
   * page. At least 1: when the best pages disagree with the averages, there is no clear loss.
   */
  #lossRatio(better: boolean): number {
    const { on, off } = this.#arms;
    const [loser, winner] = better ? [off, on] : [on, off];
    return Math.max(1, loser.bestMsPerMB / Math.max(1e-9, winner.bestMsPerMB));
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
