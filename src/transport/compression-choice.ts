/**
 * Whether a result page is asked for compressed, decided by what the connection measures, never by the
 * host's name (the project's rule for link-dependent choices).
 *
 * Compression pays when bytes on the wire are what we wait for (a 100 Mbit/s link: a 10k-row page is
 * 4.2 MB plain, 0.6 MB gzipped) and costs when they are not (on loopback the server's gzip runs at a
 * fraction of the socket's speed). So in `'auto'` both are tried and timed on real pages: the time from
 * the response's headers to the page's last byte (transfer, and inflating, which overlaps it), per decoded
 * byte. Not from the request: the wait for the headers is the server's queue and execution time, which
 * moves with load and concurrency far more than with the coding (on a loaded machine, waits of 3-11 s
 * beside bodies of 0.8-3 s for the same 4 MB pages) and would drown the difference. A server that
 * compresses a page whole before answering hides that cost in the wait: near a tie, this errs towards
 * compressing.
 *
 * The first page is asked plain and the second compressed, both in flight at once; further pages ask for
 * compression until one has come back. Plain first because the result stream is ordered: on loopback a
 * compressed first page held the first batch back (230 ms against 21 ms for a 10k-row IPC export, the
 * server's gzip and our inflating in its way), while on a slow link one plain page among the first two
 * costs one page's extra bytes. Once both are measured the cheaper way is used, and the other is tried
 * again now and then (the link or the server's load can change), less often the more clearly it lost, so
 * a slow link pays for few uncompressed pages.
 *
 * How clearly a way lost is judged on each way's best page, not on the running averages: a body's time
 * also holds whatever else the event loop did meanwhile, and that only ever adds. On loopback a 4 MB plain
 * page measures ~1 ms/MB when the loop is free and 40-50 when it is decoding other pages; averaged, such
 * pages made plain look only 2-3x cheaper than gzip (60-100 ms/MB), so gzip was retried 16 pages later,
 * where its best page against plain's best says 20x and more.
 *
 * A body's time is divided by the number of page bodies read beside it (their mean over its life,
 * itself included): bodies read at once share the link and the CPU, so a way measured while few pages
 * were in flight would otherwise look cheaper than one measured at a wide window. On a 100 Mbit/s link
 * the plain first page, read beside 3 others, measured ~110 ms/MB, and gzipped pages read 16 at a time
 * drifted above that: pages went plain again three at a time, 40 of 47 compressed instead of 45-46, and
 * the result took 5.3-5.6 s instead of ~4.
 */

/** Bodies smaller than this say more about round trips than about bytes: not counted. */
const MIN_SAMPLE_BYTES = 64 * 1024;
/** Weight of a new sample in the running average. */
const ALPHA = 0.3;
/**
 * Pages between two tries of the losing choice, at first; doubled (or quadrupled) after each try. Four
 * times this when the first two measurements already differ by more than `CLEAR_LOSS`: a 100 Mbit/s link
 * measures plain pages 5-7x dearer, and a plain retry 16 pages in cost more than the retry could tell.
 */
const FIRST_RETRY_GAP = 16;
const CLEAR_LOSS = 4;
const MAX_RETRY_GAP = 1024;
/** Requests between two plain ones while no plain page has been measured yet. */
const PLAIN_PROBE_GAP = 32;
/**
 * Requests between two compressed ones while only plain pages have been measured: a plain page came back
 * before the compressed one sent with it, so compressing lost that race, and a second compressed page
 * would lose it the same way and tell nothing new (on loopback the first takes 300-500 ms to come back
 * while the limit climbs, and 8 requests brought a second one, and a third hold of the ordered stream
 * when its retry came early). Only for a compressed page that failed (its retry may ask plain) is it
 * asked again, as seldom as a plain one is.
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
      // A plain page came back first: a fast link (on a slow one the compressed page, a seventh of the
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
