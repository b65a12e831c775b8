/**
 * How many page requests to keep in flight. Two controllers behind one small interface:
 *
 * - `FixedConcurrency(n)`: what the caller asked for; halved on a 429/503 and earned back one step per
 *   four pages that succeed (the service asked us to slow down; we do not second-guess a fixed number).
 * - `AdaptiveConcurrency`: the default (`concurrency: 'auto'`). It climbs the delivery rate the way TCP's
 *   slow start and BBR's probing do, rather than following latency alone (Vegas, Netflix's gradient): on
 *   a paced link latency rises *with* throughput as more requests share the bandwidth, so a latency
 *   gradient stops growing too early. The rule, per round (a round ends when a request started after
 *   it began completes, so it lasts one request latency at the current limit):
 *     1. startup: double the limit while the round's delivery rate grows by >= 15 % and a consumer
 *        waited for a page in it (as TCP grows only a window that limits the sender, RFC 7661: when pages
 *        wait for the consumer, a faster round is the client warming up, not the link, and on loopback
 *        growing on it put 16-32 pages in flight that then waited to be decoded); after one round
 *        without that gain, settle on the bandwidth-delay product measured so far;
 *     2. steady: probe one step (an eighth of the limit, at least 1) up or down each round; keep a step up
 *        only if the rate rose >= 5 %, keep a step down unless the rate fell >= 5 % (latency that climbs
 *        without throughput gain is undone this way), otherwise turn back;
 *     3. a 429/503 or a timeout: the service is full; the limit becomes what was in flight minus the
 *        requests of that overshoot it refused (for a 503 or a timeout, 0.7 times the limit), and that
 *        becomes a ceiling. A probe above it comes after 32 rounds for a 429 (a refused probe costs a
 *        page its `Retry-After`, and a cap on requests in flight rarely lifts within a query), after 8
 *        for an overload; each refused probe doubles the wait, up to 64 rounds.
 * The clock is injected so tests drive it deterministically.
 */

export type Congestion = 'throttled' | 'unavailable' | 'timeout';

export interface ConcurrencyController {
  /** Requests allowed in flight now (>= 1). */
  readonly limit: number;
  /** A request was given a slot; returns its sequence number for `succeeded`. */
  started(now: number): number;
  /** A request finished with `bytes` of page data after `latencyMs`. */
  succeeded(seq: number, bytes: number, now: number): void;
  /** The service pushed back; `inFlight` requests held a slot when it did. */
  congested(kind: Congestion, inFlight: number, now: number): void;
  /** A consumer waited for a page still on its way: the link, not the consumer, holds delivery back. */
  starved?(now: number): void;
}

/** A fixed limit, stepped down by the service's pushback and earned back as pages succeed. */
export class FixedConcurrency implements ConcurrencyController {
  readonly #max: number;
  #limit: number;
  #calm = 0;
  #seq = 0;

  constructor(limit: number) {
    this.#max = limit;
    this.#limit = limit;
  }

  get limit(): number {
    return this.#limit;
  }

  started(): number {
    return this.#seq++;
  }

  succeeded(): void {
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

export interface AdaptiveOptions {
  /** Limit before anything is measured. @default 2 */
  readonly initial?: number;
  /** @default 64 */
  readonly max?: number;
  /** @default 1 */
  readonly min?: number;
}

/** Startup goes on while a round delivers this much more than the best before it. */
const STARTUP_GAIN = 1.15;
/**
 * Startup multiplies the limit by this each round. Doubling, not quadrupling: on loopback, where one or
 * two requests already fill the pipe, x4 overshot to 8-32 requests whose pages then waited to be decoded
 * (+9 % on a 500k-row toTable against a fixed 2, +2 % with x2), and on the shaped WAN link x2 also ended
 * nearer the physical limit (0.55 against 0.50 of it), the overshoot costing more than the round saved.
 */
const STARTUP_GROWTH = 2;
/** In flight = this many times the bandwidth-delay product: room for jitter, not a queue. */
const BDP_GAIN = 1.2;
/** Rounds between probes above the target (and above a ceiling an overload set). */
const PROBE_EVERY = 8;
/** Rounds before the first probe above a ceiling a 429 set. */
const PROBE_THROTTLED = 32;
/** Rounds between probes above a ceiling, at most. */
const PROBE_MAX = 64;
/** Rounds whose rates make the recent best. */
const RATE_WINDOW = 10;

export class AdaptiveConcurrency implements ConcurrencyController {
  readonly #min: number;
  readonly #max: number;
  #limit: number;
  #phase: 'startup' | 'steady' = 'startup';
  #seq = 0;
  readonly #startedAt = new Map<number, number>();
  // The current round: when it began, the first request started in it, the bytes it delivered.
  #roundAt: number | undefined;
  #roundSeq = 0;
  #roundBytes = 0;
  /** Whether a consumer waited for a page during the current round. */
  #roundStarved = false;
  // What was measured: the lowest request latency, the recent round rates, the mean page size.
  #minLatency = Number.POSITIVE_INFINITY;
  readonly #rates: number[] = [];
  #meanBytes = 0;
  // Startup: the best rate so far and rounds without a gain on it.
  #startupBest = 0;
  #stalls = 0 as number;
  // Steady: rounds since the last probe, and the rate before a probe still being judged.
  #sinceProbe = 0;
  #probeFrom: number | undefined;
  // Set by pushback: the limit stays at or below it, except for a one-step probe every PROBE_EVERY rounds.
  #ceiling: number;
  #lastCutAt = Number.NEGATIVE_INFINITY;
  // Probes above a ceiling: every `#probeEvery` rounds (doubled by each refused one, up to 64) by
  // `#ceilingStep` (doubled by each accepted one), so a hard cap costs few refusals and a lifted one is
  // found again quickly.
  #probeEvery = PROBE_EVERY;
  #ceilingStep = 1;

  constructor(options: AdaptiveOptions = {}) {
    this.#min = options.min ?? 1;
    this.#max = options.max ?? 64;
    this.#ceiling = this.#max;
    this.#limit = this.#clamp(options.initial ?? 2);
  }

  get limit(): number {
    return this.#limit;
  }

  /** `'startup'` while growing fast, then `'steady'` (for tests and the docs). */
  get phase(): 'startup' | 'steady' {
    return this.#phase;
  }

  started(now: number): number {
    if (this.#roundAt === undefined) this.#newRound(now);
    this.#startedAt.set(this.#seq, now);
    return this.#seq++;
  }

  succeeded(seq: number, bytes: number, now: number): void {
    const at = this.#startedAt.get(seq);
    this.#startedAt.delete(seq);
    if (at !== undefined) this.#minLatency = Math.min(this.#minLatency, Math.max(1, now - at));
    this.#meanBytes = this.#meanBytes === 0 ? bytes : 0.9 * this.#meanBytes + 0.1 * bytes;
    this.#roundBytes += bytes;
    if (seq < this.#roundSeq || this.#roundAt === undefined) return;
    const elapsed = now - this.#roundAt;
    if (elapsed <= 0) return;
    this.#endRound(this.#roundBytes / elapsed);
    this.#newRound(now);
  }

  congested(kind: Congestion, inFlight: number, now: number): void {
    // One cut per round: the requests of one overshoot all come back refused, and are one signal. (Not
    // one request fewer per refusal: requests that ended and started while the refusals were on their
    // way make that count over-cut, 8 in flight and 4 refused under a cap of 6 in simulation.)
    const latency = Number.isFinite(this.#minLatency) ? this.#minLatency : 1;
    if (now - this.#lastCutAt < latency) return;
    this.#lastCutAt = now;
    // A 429 says how many the service accepts: one fewer than were in flight. A 503 or a timeout says
    // only that it is overloaded: cut by 30 %.
    const cut = kind === 'throttled' ? Math.min(this.#limit, inFlight) - 1 : Math.floor(this.#limit * 0.7);
    if (this.#probeFrom !== undefined && this.#ceiling < this.#max) {
      this.#probeEvery = Math.min(PROBE_MAX, this.#probeEvery * 2);
    } else if (this.#ceiling >= this.#max) {
      // The first ceiling: a cap answered 429 is a rule of the service, an overload a passing state.
      this.#probeEvery = kind === 'throttled' ? PROBE_THROTTLED : PROBE_EVERY;
    }
    this.#ceilingStep = 1;
    this.#ceiling = this.#clampToRange(cut);
    this.#phase = 'steady';
    this.#probeFrom = undefined;
    this.#sinceProbe = 0;
    this.#limit = this.#clamp(this.#ceiling);
    this.#newRound(now);
  }

  starved(): void {
    this.#roundStarved = true;
  }

  #newRound(now: number): void {
    this.#roundAt = now;
    this.#roundSeq = this.#seq;
    this.#roundBytes = 0;
    this.#roundStarved = false;
  }

  /** Requests in flight to keep the measured bandwidth busy: rate x latency / page, with some room. */
  #target(): number {
    const rate = Math.max(...this.#rates);
    if (!Number.isFinite(this.#minLatency) || this.#meanBytes === 0 || !(rate > 0)) return this.#limit;
    // Never below 2: one request in flight leaves the link idle while a page is decoded.
    return Math.max(2, Math.round((BDP_GAIN * rate * this.#minLatency) / this.#meanBytes));
  }

  #endRound(rate: number): void {
    this.#rates.push(rate);
    if (this.#rates.length > RATE_WINDOW) this.#rates.shift();
    if (this.#phase === 'startup') {
      if (rate >= this.#startupBest * STARTUP_GAIN) {
        this.#startupBest = rate;
        this.#stalls = 0;
        if (this.#roundStarved) this.#limit = this.#clamp(this.#limit * STARTUP_GROWTH);
        return;
      }
      // One round without a gain ends it: the limit just doubled, so a real gain (>= 15 %) would show.
      if (++this.#stalls < 1) return;
      this.#phase = 'steady';
      this.#limit = this.#clamp(this.#target());
      return;
    }
    if (this.#probeFrom !== undefined) {
      const capped = this.#ceiling < this.#max;
      if (capped) {
        // Not refused: the service accepts this many now, and may accept more soon: probe again soon.
        this.#ceiling = this.#limit;
        this.#ceilingStep *= 2;
        this.#probeEvery = PROBE_EVERY;
      }
      // A probe that brought more throughput raises the recent best, hence the target; one that did not
      // is undone by the target.
      this.#probeFrom = undefined;
      this.#limit = this.#clamp(capped ? this.#ceiling : this.#target());
      return;
    }
    const capped = this.#ceiling < this.#max;
    if (++this.#sinceProbe >= (capped ? this.#probeEvery : PROBE_EVERY)) {
      this.#sinceProbe = 0;
      this.#probeFrom = rate;
      const up = capped
        ? this.#limit + this.#ceilingStep
        : Math.max(this.#limit + 1, Math.ceil(this.#limit * 1.25));
      this.#limit = this.#clampToRange(up);
      return;
    }
    this.#limit = this.#clamp(capped ? Math.max(this.#target(), this.#ceiling) : this.#target());
  }

  #clampToRange(value: number): number {
    return Math.max(this.#min, Math.min(this.#max, Math.round(value)));
  }

  #clamp(value: number): number {
    return Math.max(this.#min, Math.min(this.#max, this.#ceiling, Math.round(value)));
  }
}
