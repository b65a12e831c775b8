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
 *     1. startup: from 4 (8 when the service's answers so far took 20 ms or more), double the limit
 *        while the round's delivery rate grows by >= 15 %, a consumer waited for a page in it and the process
 *        was not busy (event loop < 85 %): as TCP grows only a window that limits the sender (RFC 7661),
 *        since when pages wait for the consumer or the CPU, a faster round is the client warming up, not the
 *        link, and on loopback growing on it put 16-32 pages in flight that then waited to be decoded; after
 *        one round without that gain (near: or with it, if the process was busy), settle on the
 *        bandwidth-delay product measured so far. On a far
 *        service each answered request also lets one more go (`answered`, TCP's per-ACK growth), up to
 *        the stream's byte budget: the limit doubles per time to first byte, not only per whole page;
 *        and a result the byte budget holds whole (as `PagePlan.spread` plans it) has all its pages in
 *        flight once the first ones had time to be refused (`planned`);
 *     2. steady: keep the bandwidth-delay product in flight (1.2 x the best recent round's rate x the
 *        lowest request latency, over the mean page), at least 2; every 8 rounds probe a quarter higher,
 *        which stays only if it raised the best rate (latency that climbs without throughput gain does
 *        not raise the target, so the probe is undone);
 *     3. a 429/503 or a timeout: the service is full; after a 429 the limit becomes one less than the
 *        requests on the wire when the refused one was sent (the lowest such count among the refusals
 *        of one overshoot), after a 503 or a timeout 0.7 times the limit; that becomes a ceiling. A
 *        probe above it comes after 32 rounds for a 429 (a refused probe costs a page its
 *        `Retry-After`, and a cap on requests in flight rarely lifts within a query), after 8 for an
 *        overload; each refused probe doubles the wait, up to 64 rounds.
 * The clock is injected so tests drive it deterministically.
 */

import { eventLoopActiveMs, eventLoopBusy } from '../core/event-loop.js';

export type Congestion = 'throttled' | 'unavailable' | 'timeout';

export interface ConcurrencyController {
  /** Requests allowed in flight now (>= 1). */
  readonly limit: number;
  /** A request was given a slot; returns its sequence number for `succeeded`. */
  started(now: number): number;
  /** A request finished with `bytes` of page data after `latencyMs`. */
  succeeded(seq: number, bytes: number, now: number): void;
  /**
   * The service pushed back. `inFlight`: the requests on the wire when the refused one was sent, itself
   * included (what the service saw when it refused).
   */
  congested(kind: Congestion, inFlight: number, now: number): void;
  /** A consumer waited for a page still on its way: the link, not the consumer, holds delivery back. */
  starved?(now: number): void;
  /**
   * Before any request: the quickest answer the client has had from the service, in ms, if any, and the
   * most requests the stream's byte budget holds at its page size (startup grows no further on its own).
   */
  prime?(fastestAnswerMs: number | undefined, budget?: number): void;
  /**
   * The rest of the result is planned as `pages` pages, and the byte budget holds them all at once (told
   * by the scheduler after the first wave had time to be refused).
   */
  planned?(pages: number): void;
  /** Request `seq` was answered (its response headers, not a refusal, have arrived). */
  answered?(seq: number, now: number): void;
  /**
   * Over how many ms a jump of the limit is spread (0 or unset: at once). A doubling sent in one burst
   * reaches the service before any refusal can come back, so a per-minute limit crossed in it refuses the
   * whole burst; spread over a page's latency, the first refusal stops the rest.
   */
  readonly paceMs?: number;
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

/**
 * The limit before anything is measured, on a near service: low, since there the limit only grows while
 * the consumer waits, and pages beyond what the CPU decodes only wait (docs/performance.md, *Adaptive
 * concurrency: its constants*).
 */
export const INITIAL_LIMIT = 4;
/**
 * The limit to start from on a far service: one whose quickest answer so far (the query's own requests)
 * took FAR_ANSWER_MS or more. There each doubling round costs a page latency, so starting higher saves
 * rounds; higher than this gained little on the WAN bench (docs/performance.md).
 */
export const FAR_INITIAL_LIMIT = 8;
/**
 * An answer this slow says the service is far (or slow to answer) enough that startup rounds are dear
 * (a loopback emulator answers in a few ms, a service across a WAN in tens to hundreds).
 */
export const FAR_ANSWER_MS = 20;
/**
 * The limit to start from when requests are metered (a rate limit, set or learned): the pages started
 * before the first one shows the bytes per row keep the first guess of their size, and under a rate
 * limit each of them is a request the result need not have cost.
 */
export const METERED_INITIAL_LIMIT = 2;

export interface AdaptiveOptions {
  /** Limit before anything is measured. @default INITIAL_LIMIT (4) */
  readonly initial?: number;
  /** @default 64 */
  readonly max?: number;
  /** @default 1 */
  readonly min?: number;
  /**
   * The share of time the process was busy since the previous call, 0 to 1 (`eventLoopBusy()`: the
   * event loop's utilization). Startup grows only while it is below BUSY_CEILING. Unset: not measured.
   */
  readonly busy?: () => number;
  /**
   * The event loop's busy ms so far, a running total (`eventLoopActiveMs`); `now` is the controller's
   * clock. A far service's answer grows startup only if the loop had room while it was awaited (see
   * `answered`). Unset: not measured.
   */
  readonly loopActive?: (now: number) => number;
  /** The limit to start from when `prime()` is told of a far service. Unset: `prime()` changes nothing. */
  readonly far?: number | undefined;
}

/**
 * The controller of a client's or a stream's `'auto'` concurrency: up to `max`, growing only while the
 * event loop has room, from METERED_INITIAL_LIMIT when requests are metered, else INITIAL_LIMIT.
 */
export function adaptiveConcurrency(max: number, metered: boolean): AdaptiveConcurrency {
  return new AdaptiveConcurrency({
    max,
    busy: eventLoopBusy(),
    loopActive: eventLoopActiveMs(),
    initial: metered ? METERED_INITIAL_LIMIT : INITIAL_LIMIT,
    far: metered ? undefined : FAR_INITIAL_LIMIT,
  });
}

/** Startup goes on while a round delivers this much more than the best before it. */
const STARTUP_GAIN = 1.15;
/**
 * Startup multiplies the limit by this each round: doubling, not quadrupling, since an overshoot (pages
 * waiting to be decoded, or sharing the link) cost more than the round it saved, on loopback and WAN alike.
 */
const STARTUP_GROWTH = 2;
/**
 * Startup does not grow while the process was busier than this in the round: the client's own CPU
 * (decoding, the consumer), not the link, then holds delivery back, and more requests only queue pages
 * for it (the client warming up looks like a rising rate).
 */
const BUSY_CEILING = 0.85;
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
  readonly #busy: (() => number) | undefined;
  readonly #far: number | undefined;
  #limit: number;
  /** Startup grows per answer up to this (set by `prime` for a far service; 0: per round only). */
  #paced = 0;
  #phase: 'startup' | 'steady' = 'startup';
  #seq = 0;
  readonly #startedAt = new Map<number, number>();
  /** The event loop's busy ms when each request in flight started (only with `loopActive`). */
  readonly #activeAt = new Map<number, number>();
  readonly #loopActive: ((now: number) => number) | undefined;
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
    this.#busy = options.busy;
    this.#loopActive = options.loopActive;
    this.#far = options.far;
    this.#busy?.(); // the first round's share is measured from here
    this.#ceiling = this.#max;
    this.#limit = this.#clamp(options.initial ?? INITIAL_LIMIT);
  }

  get limit(): number {
    return this.#limit;
  }

  /**
   * Before any request: the quickest answer the client has had from the service (ms), if any. A far
   * service starts from the `far` option (when that is above the initial limit and within the range).
   */
  prime(fastestAnswerMs: number | undefined, budget?: number): void {
    if (this.#far === undefined || this.#seq > 0) return;
    if (fastestAnswerMs === undefined || fastestAnswerMs < FAR_ANSWER_MS) return;
    this.#limit = Math.max(this.#limit, this.#clamp(this.#far));
    this.#paced = Math.max(this.#limit, budget ?? this.#limit);
  }

  /**
   * A far service's result that the byte budget holds whole goes out whole: grown to its pages per
   * answer, each step waited for the service's answer to a page (~0.35 s for the WAN bench's narrow
   * rows, whose 193,000 rows went out as 8 pages and then 8 more; 1.4 s for 100,000 rows at 0.2 ms a
   * row). The cost per row those answers tell could have planned the later pages smaller, but all at
   * once was faster (2.55 s against 3.61 s for the latter). `PagePlan.spread` made them no more than two
   * rounds of the start, so a per-minute limit sees the same requests, only sooner. Only in startup:
   * after pushback (a 429, a 503, a timeout) the limit is the service's to set.
   */
  planned(pages: number): void {
    if (this.#paced === 0 || this.#phase !== 'startup') return;
    this.#limit = this.#clamp(Math.max(this.#limit, pages));
    this.#paced = Math.max(this.#paced, this.#limit);
  }

  /**
   * A far service's answers pace startup, as ACKs pace TCP's slow start: each request answered (its
   * headers, not a refusal) lets one more go, so the limit doubles every time to first byte rather than
   * every whole page (a round lasts until a page's body has arrived, and on a link shared by many pages
   * that is several times the wait: the link sat idle between rounds). Growth stops at the byte budget
   * (`prime`), at a ceiling a 429 set, and when startup ends (a round without a gain in delivery rate).
   */
  answered(seq: number, now: number): void {
    if (this.#phase !== 'startup' || this.#limit >= this.#paced) return;
    // Only an answer that took a far service's time: on a near one (a warm loopback emulator answers in
    // a few ms) the first answers can be slow only from the cold start of both ends, and pages beyond
    // what the CPU decodes would only wait.
    const at = this.#startedAt.get(seq);
    if (at === undefined || now - at < FAR_ANSWER_MS) return;
    // Nor an answer awaited while the event loop was busy: it may be late only because the loop could
    // not take it (a loopback emulator on a loaded machine: its first answers made it look far, and
    // startup grew to 31 pages in flight, 283-328 MB for the 500k-row IPC export, issue #33).
    const active = this.#activeAt.get(seq);
    if (active !== undefined && this.#loopActive!(now) - active >= BUSY_CEILING * (now - at)) return;
    this.#limit = this.#clamp(this.#limit + 1);
  }

  /**
   * A far service's startup spreads each doubling over the quickest page seen (TCP paces a window over
   * its round trip the same way); steady changes are small steps, and a near service's requests are
   * answered before a burst could matter.
   */
  get paceMs(): number {
    if (this.#paced === 0 || this.#phase !== 'startup' || !Number.isFinite(this.#minLatency)) return 0;
    return this.#minLatency;
  }

  /** `'startup'` while growing fast, then `'steady'` (for tests and the docs). */
  get phase(): 'startup' | 'steady' {
    return this.#phase;
  }

  started(now: number): number {
    if (this.#roundAt === undefined) this.#newRound(now);
    this.#startedAt.set(this.#seq, now);
    if (this.#loopActive && this.#phase === 'startup' && this.#paced > 0) {
      this.#activeAt.set(this.#seq, this.#loopActive(now));
    }
    return this.#seq++;
  }

  succeeded(seq: number, bytes: number, now: number): void {
    const at = this.#startedAt.get(seq);
    this.#startedAt.delete(seq);
    this.#activeAt.delete(seq);
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
    const latency = Number.isFinite(this.#minLatency) ? this.#minLatency : 1;
    const recent = now - this.#lastCutAt < latency;
    if (kind === 'throttled') {
      // A 429 says how many the service accepts: fewer than were on the wire when the refused request
      // was sent (`inFlight` counts them, itself included). The requests of one overshoot come back
      // refused one after another, sent at different counts: the lowest one tells the cap, and later
      // ones, sent before the cut, change nothing.
      const cut = this.#clampToRange(inFlight - 1);
      if (recent) {
        if (cut < this.#ceiling) {
          this.#ceiling = cut;
          this.#limit = this.#clamp(this.#limit);
        }
        return;
      }
    } else if (recent) {
      // One cut per round for an overload: the requests it slowed all come back failed, and are one signal.
      return;
    }
    this.#lastCutAt = now;
    // A 503 or a timeout says only that the service is overloaded: cut by 30 %.
    const cut = kind === 'throttled' ? inFlight - 1 : Math.floor(this.#limit * 0.7);
    if (this.#probeFrom !== undefined && this.#ceiling < this.#max) {
      this.#probeEvery = Math.min(PROBE_MAX, this.#probeEvery * 2);
    } else if (this.#ceiling >= this.#max) {
      // The first ceiling: a cap answered 429 is a rule of the service, an overload a passing state.
      this.#probeEvery = kind === 'throttled' ? PROBE_THROTTLED : PROBE_EVERY;
    }
    this.#ceilingStep = 1;
    // A 429 never raises a ceiling: the requests of one overshoot may come back refused further apart
    // than `recent` allows (before any page has succeeded it is 1 ms), and a later one, sent at a higher
    // count, would otherwise lift the ceiling above what an earlier one showed (8 -> 6 -> 7: a refusal
    // more every few rounds under a cap of 6). Only an accepted probe raises it.
    this.#ceiling =
      kind === 'throttled' ? Math.min(this.#ceiling, this.#clampToRange(cut)) : this.#clampToRange(cut);
    this.#phase = 'steady';
    this.#probeFrom = undefined;
    this.#sinceProbe = 0;
    this.#limit = this.#clamp(Math.min(this.#limit, this.#ceiling));
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
    const busy = this.#busy?.() ?? 0;
    this.#rates.push(rate);
    if (this.#rates.length > RATE_WINDOW) this.#rates.shift();
    if (this.#phase === 'startup') {
      const gain = rate >= this.#startupBest * STARTUP_GAIN;
      if (gain) {
        this.#startupBest = rate;
        this.#stalls = 0;
      }
      if (gain && this.#roundStarved && busy < BUSY_CEILING) {
        // Paced by answers, startup grows to the byte budget and no further (the steady target may).
        const grown = this.#limit * STARTUP_GROWTH;
        this.#limit = this.#clamp(
          this.#paced > 0 ? Math.min(grown, Math.max(this.#limit, this.#paced)) : grown,
        );
        return;
      }
      // A gain that does not grow the limit goes on, but not on a near service in a busy process: its
      // CPU limits, and will while it decodes; startup would only hold its initial limit while the code
      // warms up (rounds faster by themselves): 4 pages decoded at once, each alive 4 times as long, for
      // the first ~1 s of a loopback IPC export (issue #33). A far service's startup goes on (answers
      // pace it).
      if (gain && (busy < BUSY_CEILING || this.#paced > 0)) return;
      // One round without a gain ends it: the limit just doubled, so a real gain (>= 15 %) would show.
      if (!gain && ++this.#stalls < 1) return;
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
