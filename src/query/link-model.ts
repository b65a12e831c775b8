/**
 * The link model: one estimator of what lies between the client and the service, fed by every page
 * request, and the choices that follow from it. A page request's life has three measurable parts:
 *
 *   wait  the time to its response headers: a round trip and the service's work, a fixed part and a part
 *         per row (`ServiceCost`, fitted through the quickest wait of each page size: queueing, a busy
 *         event loop or a new connection only ever add to a wait, as BBR keeps its minimum round trip);
 *   body  its bytes at one connection's rate (the best recent body: `connectionRate`);
 *   link  all bodies together, at the link's rate: the bytes every body delivered while the request was
 *         out, over the time it was out (the best recent: `linkRate`, BBR's bottleneck bandwidth).
 *
 * From them: the page size (rows whose service time is ROW_SHARE × the fixed part, within the byte
 * bounds), and the bandwidth-delay product in pages (the link's rate × a page's latency unloaded ÷ its
 * bytes), which the adaptive concurrency keeps in flight. Nothing here reads a clock or the network: the
 * caller passes `now`, so tests drive it with a simulated one.
 */
import {
  BUSY_SHARE,
  ESTIMATE_WINDOW_MS,
  PAGE_BYTES_MAX,
  PAGE_BYTES_MIN,
  PAGE_ROWS_UNIT,
  RATE_GAIN,
  ROW_SHARE,
  SHARED_BODIES,
} from './link-constants.js';

/** The service's time to first byte: `fixedMs + rows × perRowMs`. */
export interface CostFit {
  readonly fixedMs: number;
  readonly perRowMs: number;
}

/** A maximum over the last ESTIMATE_WINDOW_MS: an old best is forgotten, not averaged. */
class WindowedMax {
  #value = 0;
  #at = Number.NEGATIVE_INFINITY;

  add(value: number, now: number): void {
    if (value >= this.#value || now - this.#at > ESTIMATE_WINDOW_MS) {
      this.#value = value;
      this.#at = now;
    }
  }

  get(now: number): number {
    return now - this.#at > ESTIMATE_WINDOW_MS ? 0 : this.#value;
  }
}

/**
 * The service's cost from the quickest recent wait of each page size. A size's quickest counts once it
 * has answered twice (the quickest of one is no quickest); two sizes at least twice apart fit a line.
 */
export class ServiceCost {
  readonly #sizes = new Map<number, { ms: number; at: number; n: number }>();

  add(rows: number, waitMs: number, now: number): void {
    if (!(waitMs >= 0) || !(rows >= 1)) return;
    const size = this.#sizes.get(rows);
    if (size === undefined) this.#sizes.set(rows, { ms: waitMs, at: now, n: 1 });
    else {
      size.n++;
      if (waitMs <= size.ms || now - size.at > ESTIMATE_WINDOW_MS) {
        size.ms = waitMs;
        size.at = now;
      }
    }
  }

  /** The quickest recent wait of `rows` rows, if that size was asked for. */
  quickest(rows: number, now: number): number | undefined {
    const size = this.#sizes.get(rows);
    return size && now - size.at <= ESTIMATE_WINDOW_MS ? size.ms : undefined;
  }

  /** The least-squares line through every size's quickest wait; undefined until two sizes tell it. */
  fit(now: number): CostFit | undefined {
    const points: { rows: number; ms: number }[] = [];
    for (const [rows, size] of this.#sizes) {
      if (now - size.at > ESTIMATE_WINDOW_MS) this.#sizes.delete(rows);
      else if (size.n >= 2) points.push({ rows, ms: size.ms });
    }
    if (points.length < 2) return undefined;
    const rows = points.map((p) => p.rows);
    if (Math.max(...rows) < 2 * Math.min(...rows)) return undefined;
    const meanRows = rows.reduce((a, b) => a + b, 0) / points.length;
    const meanMs = points.reduce((a, p) => a + p.ms, 0) / points.length;
    let num = 0;
    let den = 0;
    for (const p of points) {
      num += (p.rows - meanRows) * (p.ms - meanMs);
      den += (p.rows - meanRows) ** 2;
    }
    const perRowMs = Math.max(0, num / den);
    const fixedMs = Math.max(
      0,
      perRowMs === 0 ? Math.min(...points.map((p) => p.ms)) : meanMs - perRowMs * meanRows,
    );
    return { fixedMs, perRowMs };
  }
}

/** A finished page request, as the model learns from it. */
export interface RequestSample {
  readonly rows: number;
  /** Body bytes (as decoded: what the window holds). */
  readonly bytes: number;
  readonly waitMs: number;
  /** From the headers to the body's last byte. */
  readonly bodyMs: number;
  /** Bytes every body delivered from this request's send to its last byte, and that time. */
  readonly flightBytes: number;
  readonly flightMs: number;
  /** The event loop's busy share over that time (0 to 1): the client, not the link, held it back. */
  readonly busyShare?: number;
}

/** How many recent pages the bandwidth-delay product is averaged over. */
const RECENT = 32;

export class LinkModel {
  /**
   * The service's cost, from requests on connections already open (`cost`) and from those that opened
   * one (`costFresh`: their waits hold a handshake more). Quickest waits of the two are never mixed in
   * one fit: a size asked on a new connection and another on an open one would read the handshake as
   * a cost per row.
   */
  readonly cost = new ServiceCost();
  readonly costFresh = new ServiceCost();
  readonly #connection = new WindowedMax();
  readonly #link = new WindowedMax();
  /** Bytes of page bodies delivered so far, all requests together (a running count). */
  #delivered = 0;
  /** Recent pages: when each ended, its latency unloaded, its bytes, and whether the client held it back. */
  readonly #recent: {
    at: number;
    latencyMs: number;
    bytes: number;
    clientBound: boolean;
    bodyRate: number;
  }[] = [];

  /** Bytes of page bodies delivered so far: a request's flight is measured between two readings. */
  get delivered(): number {
    return this.#delivered;
  }

  /** Body bytes arrived (any request): the link's delivery count. */
  deliver(bytes: number): void {
    this.#delivered += bytes;
  }

  /** A request's headers came `waitMs` after it was sent, for `rows` rows; `fresh`: on a new connection. */
  answered(rows: number, waitMs: number, now: number, fresh = false): void {
    (fresh ? this.costFresh : this.cost).add(rows, waitMs, now);
  }

  /** The cost fit from open connections' waits if they tell it, else from new ones'. */
  fit(now: number): CostFit | undefined {
    return this.cost.fit(now) ?? this.costFresh.fit(now);
  }

  /** A request's body has been read whole. */
  completed(sample: RequestSample, now: number): void {
    if (sample.bytes <= 0) return;
    // A body that came in one read has no measurable time: at least a millisecond.
    const bodyRate = sample.bytes / Math.max(1, sample.bodyMs);
    this.#connection.add(bodyRate, now);
    if (sample.flightMs > 0) this.#link.add(sample.flightBytes / sample.flightMs, now);
    const wait = this.expectedWaitMs(sample.rows, now) ?? sample.waitMs;
    this.#recent.push({
      at: now,
      latencyMs: wait + sample.bytes / this.connectionRate(now),
      bytes: sample.bytes,
      clientBound: (sample.busyShare ?? 0) >= BUSY_SHARE,
      bodyRate,
    });
    if (this.#recent.length > RECENT) this.#recent.shift();
  }

  /** One body's best recent rate, bytes per ms (0: none measured). */
  connectionRate(now: number): number {
    return this.#connection.get(now);
  }

  /** Every body's best recent rate together, bytes per ms (0: none measured). */
  linkRate(now: number): number {
    return Math.max(this.#link.get(now), this.connectionRate(now));
  }

  /** The service's wait for `rows` rows, from the fit or that size's quickest, if known. */
  expectedWaitMs(rows: number, now: number): number | undefined {
    const fit = this.fit(now);
    return fit
      ? fit.fixedMs + rows * fit.perRowMs
      : (this.cost.quickest(rows, now) ?? this.costFresh.quickest(rows, now));
  }

  /**
   * Whether bodies share a bottleneck now: the median rate of the last SHARED_BODIES is a RATE_GAIN below
   * one connection's best. The link is then carrying all it can (or the client reads no faster): more
   * requests in flight would only share it.
   */
  shared(now: number): boolean {
    const rates: number[] = [];
    for (let i = this.#recent.length - 1; i >= 0 && rates.length < SHARED_BODIES; i--) {
      const page = this.#recent[i]!;
      if (now - page.at <= ESTIMATE_WINDOW_MS) rates.push(page.bodyRate);
    }
    if (rates.length < SHARED_BODIES) return false;
    rates.sort((a, b) => a - b);
    return rates[rates.length >> 1]! * RATE_GAIN < this.connectionRate(now);
  }

  /**
   * Whether most recent pages were held back by the client (its event loop busy through them): the
   * reader, not the network, is then what a read waits for (BBR's "application limited").
   */
  clientBound(now: number): boolean {
    let bound = 0;
    let all = 0;
    for (const page of this.#recent) {
      if (now - page.at > ESTIMATE_WINDOW_MS) continue;
      all++;
      if (page.clientBound) bound++;
    }
    return all > 0 && bound * 2 > all;
  }

  /**
   * Pages the link holds at its rate: its rate × the recent pages' latency unloaded ÷ their bytes
   * (Little's law). Undefined until a page has been read.
   */
  bdpPages(now: number): number | undefined {
    let latency = 0;
    let bytes = 0;
    let first: number | undefined;
    for (const page of this.#recent) {
      if (now - page.at > ESTIMATE_WINDOW_MS) continue;
      first ??= page.at;
      latency += page.latencyMs;
      bytes += page.bytes;
    }
    // Held back by the client, the link's best rate is not what pages are read at: the rate they were
    // read at is (more in flight would only wait for the reader, in memory).
    const rate = this.clientBound(now)
      ? first !== undefined && now > first
        ? bytes / (now - first)
        : 0
      : this.linkRate(now);
    if (!(rate > 0) || bytes === 0) return undefined;
    return (rate * latency) / bytes;
  }

  /**
   * Rows for the next page of rows `bytesPerRow` wide, on the ladder of PAGE_ROWS_UNIT × a power of two,
   * within the byte bounds: ROW_SHARE × the fixed cost ÷ the cost per row (the service's time on a
   * page's rows a small multiple of its fixed time: a bigger page makes every page wait longer before
   * its first byte, a smaller one pays the fixed time for fewer rows). `scarce`: the service caps
   * requests in flight below what the link could use, so each request must carry more: at least the
   * rows whose body takes as long as their wait. Undefined while the cost is not known (the plan then
   * asks for two sizes in turn, which tells it).
   */
  pageRows(bytesPerRow: number, now: number, scarce = false): number | undefined {
    const most = PAGE_BYTES_MAX / bytesPerRow;
    const least = Math.min(most, Math.max(PAGE_ROWS_UNIT, PAGE_BYTES_MIN / bytesPerRow));
    // The byte bound itself, in whole units (it follows the rows' width alone, so it is the same from run
    // to run): a client that holds its reads back gains nothing from pages that wait less, and pays for
    // each request with the CPU its reads need; and rows that cost the service nothing need no less.
    const bound =
      most < PAGE_ROWS_UNIT
        ? Math.max(1, Math.floor(most))
        : Math.floor(most / PAGE_ROWS_UNIT) * PAGE_ROWS_UNIT;
    if (this.clientBound(now)) return bound;
    const fit = this.fit(now);
    if (fit === undefined) return undefined;
    let rows = fit.perRowMs > 0 ? (ROW_SHARE * fit.fixedMs) / fit.perRowMs : most;
    if (scarce) {
      // Rows whose body (bytesPerRow ÷ a connection's rate each) lasts as long as their wait.
      const perRowBody = bytesPerRow / Math.max(1e-9, this.connectionRate(now));
      const worth = perRowBody > fit.perRowMs ? fit.fixedMs / (perRowBody - fit.perRowMs) : most;
      rows = Math.max(rows, worth);
    }
    return rows >= most ? bound : onLadder(rows, least, most);
  }
}

/**
 * `rows` to the nearest PAGE_ROWS_UNIT × 2^k (in ratio), within `least` and `most` (a step up when the
 * nearest is under `least`, down when over `most`); below one unit, the bound itself.
 */
export function onLadder(rows: number, least = 1, most = Number.POSITIVE_INFINITY): number {
  const wanted = Math.min(most, Math.max(least, rows));
  if (wanted < PAGE_ROWS_UNIT) return Math.max(1, Math.floor(wanted));
  let step = PAGE_ROWS_UNIT * 2 ** Math.round(Math.log2(wanted / PAGE_ROWS_UNIT));
  if (step < least && step * 2 <= most) step *= 2;
  while (step > most && step > PAGE_ROWS_UNIT) step /= 2;
  return step > most ? Math.max(1, Math.floor(most)) : step;
}
