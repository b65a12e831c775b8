/**
 * How many page requests to keep in flight. Both controllers follow each request's life (sent, answered,
 * body read, ended) and feed the link model (`link-model.ts`) with it, so page sizes follow what was
 * measured whichever decides the limit:
 *
 * - `FixedConcurrency(n)`: what the caller asked for; halved by the service's pushback (a 429, a 503, a
 *   timeout) and earned back one step per four pages read.
 * - `AdaptiveConcurrency` (`concurrency: 'auto'`): the link model's bandwidth-delay product, kept in flight
 *   the way BBR keeps it (docs/performance.md, *The link model*):
 *     startup  from a first wave sized by the query's own first page, every answer that came while every
 *              slot was taken and the event loop had room lets STARTUP_GROWTH more go, until bodies
 *              share a bottleneck or a round brings no RATE_GAIN of the link's delivery rate;
 *     steady   STEADY_GAIN × the bandwidth-delay product, probed up by RATE_GAIN for a round every
 *              PROBE_EVERY rounds and drained back the round after;
 *     pushback a 429 makes a ceiling one below the requests out when the refused one was sent; a 503 or
 *              a timeout cuts to OVERLOAD_CUT of the limit; above a ceiling the limit probes one step
 *              after a while, longer after each refused probe.
 * A round ends when a request sent after it began has been read: one page latency.
 */

import { KEEP_ALIVE_MS } from '../transport/dispatcher.js';
import {
  BUSY_SHARE,
  CEILING_PROBE_ROUNDS,
  ESTIMATE_WINDOW_MS,
  INITIAL_WAVE,
  OVERLOAD_CUT,
  PROBE_EVERY,
  RATE_GAIN,
  STARTUP_GROWTH,
  STEADY_GAIN,
} from './link-constants.js';
import { LinkModel } from './link-model.js';

export type Congestion = 'throttled' | 'unavailable' | 'timeout';

/** The query's own first page, read before the stream's first request: what sizes the first wave. */
export interface FirstPage {
  readonly waitMs: number;
  readonly bodyMs: number;
}

/** A request out, as far as it has come. */
interface Out {
  readonly sentAt: number;
  /** The link's delivery count and the event loop's busy ms when it was sent. */
  readonly deliveredAt: number;
  readonly busyAt: number;
  /** It went out on a connection opened for it (more were out than ever before). */
  readonly fresh: boolean;
  rows: number;
  waitMs: number;
}

/**
 * A request's life, the same for both controllers: what it tells the link model. `busyMs` is the event
 * loop's busy time so far (a running total, `eventLoopActiveMs`), for telling a late answer that the
 * loop could not take from one the service sent late.
 */
export abstract class ConcurrencyController {
  readonly link: LinkModel;
  #seq = 0;
  readonly #out = new Map<number, Out>();
  /**
   * The most requests out at once since connections were last idle long enough to close: a request
   * beyond it opened a connection (undici opens one per request in flight, and keeps idle ones
   * KEEP_ALIVE_MS). One to begin with: the query's own.
   */
  #peak = 1;
  #idleSince = Number.NEGATIVE_INFINITY;

  constructor(link = new LinkModel()) {
    this.link = link;
  }

  /** Requests allowed in flight now (>= 1). */
  abstract get limit(): number;

  /** Whether the service capped requests in flight (a 429's ceiling): each request must carry more. */
  get capped(): boolean {
    return false;
  }

  /** Requests sent so far (the next one's sequence number). */
  protected get seq(): number {
    return this.#seq;
  }

  /** How long no request has been out (0 while one is; infinite before the first). */
  protected idleFor(now: number): number {
    if (this.#seq === 0) return Number.POSITIVE_INFINITY;
    return this.#out.size > 0 ? 0 : now - this.#idleSince;
  }

  /** A request is sent; returns its sequence number. */
  sent(now: number, busyMs = 0): number {
    this.onSend(now);
    if (this.#out.size === 0 && now - this.#idleSince > KEEP_ALIVE_MS) this.#peak = 1;
    const fresh = this.#out.size + 1 > this.#peak;
    this.#peak = Math.max(this.#peak, this.#out.size + 1);
    this.#out.set(this.#seq, {
      sentAt: now,
      deliveredAt: this.link.delivered,
      busyAt: busyMs,
      fresh,
      rows: 0,
      waitMs: 0,
    });
    return this.#seq++;
  }

  /**
   * Request `seq`'s headers came, for `rows` rows. `binding`: every slot the limit allows was taken then
   * (a limit that binds is one worth growing, RFC 7661).
   */
  answered(seq: number, rows: number, now: number, busyMs = 0, binding = true): void {
    const out = this.#out.get(seq);
    if (out === undefined) return;
    out.rows = rows;
    out.waitMs = now - out.sentAt;
    // An answer awaited while the loop was busy may be late only because the loop could not take it:
    // it says nothing of the service's cost, and grows nothing.
    const roomy = busyMs - out.busyAt < BUSY_SHARE * out.waitMs;
    if (roomy) this.link.answered(rows, out.waitMs, now, out.fresh);
    this.onAnswer(binding && roomy, now);
  }

  /** Body bytes of any request arrived. */
  delivered(bytes: number): void {
    this.link.deliver(bytes);
  }

  /** Request `seq`'s body has been read whole: `bytes` of it. */
  read(seq: number, bytes: number, now: number, busyMs = 0): void {
    const out = this.#out.get(seq);
    if (out === undefined) return;
    this.#remove(seq, now);
    const flightMs = now - out.sentAt;
    this.link.completed(
      {
        rows: out.rows,
        bytes,
        waitMs: out.waitMs,
        bodyMs: flightMs - out.waitMs,
        flightBytes: this.link.delivered - out.deliveredAt,
        flightMs,
        busyShare: flightMs > 0 ? (busyMs - out.busyAt) / flightMs : 0,
      },
      now,
    );
    this.onRead(seq, now);
  }

  /** Request `seq` is over without a body read (it failed, or was refused): nothing to learn. */
  ended(seq: number, now: number): void {
    this.#remove(seq, now);
  }

  #remove(seq: number, now: number): void {
    if (this.#out.delete(seq) && this.#out.size === 0) this.#idleSince = now;
  }

  /**
   * The service pushed back. `level`: the requests out when the refused one was sent, itself included
   * (what the service saw when it refused).
   */
  abstract congested(kind: Congestion, level: number, now: number): void;

  /** Before a stream's first request: the query's own first page, if there was one. */
  firstPage(_page: FirstPage, _now: number): void {}

  protected onSend(_now: number): void {}
  protected onAnswer(_grow: boolean, _now: number): void {}
  protected onRead(_seq: number, _now: number): void {}
}

/** A fixed limit, stepped down by the service's pushback and earned back as pages are read. */
export class FixedConcurrency extends ConcurrencyController {
  readonly #max: number;
  #limit: number;
  #calm = 0;

  constructor(limit: number, link?: LinkModel) {
    super(link);
    this.#max = limit;
    this.#limit = limit;
  }

  get limit(): number {
    return this.#limit;
  }

  protected override onRead(): void {
    if (this.#limit < this.#max && ++this.#calm >= 4) {
      this.#limit += 1;
      this.#calm = 0;
    }
  }

  congested(): void {
    this.#limit = Math.max(1, Math.floor(this.#limit / 2));
    this.#calm = 0;
  }
}

/**
 * The adaptive limit before anything is measured (no first page sized the first wave): the requests that
 * tell the service's cost at once, two answers of each of the two page sizes the plan starts with.
 */
export const UNMEASURED_LIMIT = 2 * 2;

export interface AdaptiveOptions {
  /** @default 64 */
  readonly max?: number;
  /** @default 1 */
  readonly min?: number;
  /**
   * Whether requests are metered now (a rate limit, set or learned): then the service's pace, not the
   * link's, bounds a result, the first wave is two requests and startup does not grow.
   */
  readonly metered?: () => boolean;
  readonly link?: LinkModel;
}

export class AdaptiveConcurrency extends ConcurrencyController {
  readonly #min: number;
  readonly #max: number;
  readonly #metered: () => boolean;
  #limit: number;
  #phase: 'startup' | 'steady' = 'startup';
  /** The first request of the current round (it ends when a request sent at or after it is read). */
  #roundSeq = 0;
  /** Steady rounds so far: where the probe cycle is. */
  #rounds = 0;
  // Startup: the best link rate at a gain.
  #pipeRate = 0;
  // Pushback: the ceiling, the probe above it (rounds until, step, and whether one is being judged),
  // and whether this round's overload has been cut for already.
  #ceiling: number;
  #ceilingEvery = 0;
  #ceilingWait = 0;
  #ceilingStep = 1;
  #probing = false;
  #cutThisRound = false;

  constructor(options: AdaptiveOptions = {}) {
    super(options.link);
    this.#min = options.min ?? 1;
    this.#max = options.max ?? 64;
    this.#metered = options.metered ?? (() => false);
    this.#ceiling = this.#max;
    this.#limit = this.#clamp(this.#metered() ? 2 : UNMEASURED_LIMIT);
  }

  get limit(): number {
    return this.#limit;
  }

  override get capped(): boolean {
    return this.#ceiling < this.#max;
  }

  /** `'startup'` while growing per answer, then `'steady'` (for tests and the docs). */
  get phase(): 'startup' | 'steady' {
    return this.#phase;
  }

  /**
   * The first wave: the requests that keep one connection busy while a page waits, (wait + body) ÷
   * body of the query's first page, at least two (two page sizes tell the service's cost), at most
   * INITIAL_WAVE. A near service whose body took longer than its wait needs few; a far one as many as
   * the wave allows. Metered: two (each request counts against the rate limit).
   */
  override firstPage(page: FirstPage, now: number): void {
    // Only a client whose estimates are gone (none yet, or idle past them) starts a wave anew.
    if (this.idleFor(now) <= ESTIMATE_WINDOW_MS) return;
    this.#restart();
    if (this.#metered()) return;
    const body = Math.max(1, page.bodyMs);
    this.#limit = this.#clamp(Math.min(INITIAL_WAVE, Math.max(2, Math.ceil((page.waitMs + body) / body))));
  }

  /** A request after an idle spell longer than the estimates last: startup again, as BBR restarts. */
  protected override onSend(now: number): void {
    const idle = this.idleFor(now);
    if (Number.isFinite(idle) && idle > ESTIMATE_WINDOW_MS) this.#restart();
  }

  /** Startup from the first wave; a ceiling a 429 set stays (a cap on requests is the service's rule). */
  #restart(): void {
    this.#phase = 'startup';
    this.#pipeRate = 0;
    this.#rounds = 0;
    this.#roundSeq = this.seq;
    this.#limit = this.#clamp(this.#metered() ? 2 : UNMEASURED_LIMIT);
  }

  protected override onAnswer(grow: boolean, now: number): void {
    if (this.#phase !== 'startup' || !grow || this.#metered() || this.link.shared(now)) return;
    // Never past a round of growth beyond what has been measured (BBR's startup: its window a gain times
    // the bandwidth-delay product measured so far). Answers come a wait after their requests, the rates
    // a whole page later: unbounded, a client that reads slower than the link grew 4 -> 61 in a second.
    const bdp = this.link.bdpPages(now);
    const bound = bdp === undefined ? Number.POSITIVE_INFINITY : (STARTUP_GROWTH + 1) * bdp;
    this.#limit = this.#clamp(Math.max(this.#limit, Math.min(this.#limit + STARTUP_GROWTH, bound)));
  }

  protected override onRead(seq: number, now: number): void {
    if (seq < this.#roundSeq) return;
    this.#roundSeq = this.seq;
    this.#cutThisRound = false;
    if (this.#phase === 'startup') {
      const rate = this.link.linkRate(now);
      const gain = rate >= RATE_GAIN * this.#pipeRate;
      if (gain) this.#pipeRate = rate;
      // The pipe is full: bodies share a bottleneck, or a round brought no gain. Down to the target,
      // which the requests out drain to as they end.
      if (this.link.shared(now) || !gain) {
        this.#phase = 'steady';
        this.#limit = this.#clamp(this.#target(now));
      }
      return;
    }
    this.#steadyRound(now);
  }

  #steadyRound(now: number): void {
    if (this.#ceiling < this.#max) {
      if (this.#probing) {
        // Not refused for a round: the service accepts this many now, and may soon accept more.
        this.#probing = false;
        this.#ceiling = Math.min(this.#max, this.#ceiling + this.#ceilingStep);
        this.#ceilingStep *= 2;
        this.#ceilingEvery = PROBE_EVERY;
        this.#ceilingWait = PROBE_EVERY;
      } else if (--this.#ceilingWait <= 0) {
        this.#probing = true;
        this.#limit = Math.min(this.#max, this.#ceiling + this.#ceilingStep);
        return;
      }
    }
    const cycle = ++this.#rounds % PROBE_EVERY;
    const gain = cycle === 0 ? RATE_GAIN : cycle === 1 ? 1 / RATE_GAIN : 1;
    this.#limit = this.#clamp(gain * this.#target(now));
  }

  /** STEADY_GAIN × the bandwidth-delay product in pages; the limit as it is while nothing is measured. */
  #target(now: number): number {
    const bdp = this.link.bdpPages(now);
    return bdp === undefined ? this.#limit : STEADY_GAIN * bdp;
  }

  congested(kind: Congestion, level: number, _now: number): void {
    this.#phase = 'steady';
    const first = this.#ceiling >= this.#max;
    if (kind === 'throttled') {
      // A 429 says how many the service accepts: fewer than were out when the refused one was sent. The
      // refusals of one overshoot were sent at different levels; the lowest tells, and later ones
      // (sent before the cut) change nothing, so a 429 never raises the ceiling.
      this.#ceiling = Math.min(this.#ceiling, this.#range(level - 1));
    } else {
      // An overload says only that the service is full: one cut a round (its requests come back failed
      // together, one signal).
      if (this.#cutThisRound) return;
      this.#cutThisRound = true;
      this.#ceiling = this.#range(Math.floor(this.#limit * OVERLOAD_CUT));
    }
    // Refused probes are made rarer, doubling the rounds each time.
    if (first) this.#ceilingEvery = kind === 'throttled' ? CEILING_PROBE_ROUNDS : PROBE_EVERY;
    else if (this.#probing) this.#ceilingEvery *= 2;
    this.#ceilingWait = this.#ceilingEvery;
    this.#probing = false;
    this.#ceilingStep = 1;
    this.#limit = this.#clamp(this.#limit);
  }

  #range(value: number): number {
    return Math.max(this.#min, Math.min(this.#max, Math.round(value)));
  }

  #clamp(value: number): number {
    return Math.max(this.#min, Math.min(this.#max, this.#ceiling, Math.round(value)));
  }
}
