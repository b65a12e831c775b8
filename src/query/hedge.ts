/**
 * Hedged page requests: a page whose request has taken much longer than this stream's pages usually
 * take is asked for once more, on another connection, and whichever answer comes first is used (the
 * other is aborted and dropped). One slow connection (a sick proxy or load-balancer path, a server
 * worker stuck behind a slow query) otherwise holds its page, and so the in-order stream, for as long as
 * it is slow: with one connection in three answering 3 s late, a 0.6 s read took 30.9 s.
 *
 * "Much longer" is judged two ways, both required: against time (4x the stream's median page time, and
 * at least 250 ms) and against the other requests (at least two sent after it have already answered).
 * The second keeps a busy CPU or a slow service from looking like a slow connection: then every request
 * is late, none overtakes another, and a hedge would only add load.
 *
 * Bounded so that it cannot double the load: at most one hedge per page request, and at most
 * `MAX_HEDGES_IN_FLIGHT` at once per stream.
 */

/**
 * Pages a stream must have read before it judges one slow. A request sent before then is judged once
 * they have come in: the pages of the first round, sent together, show at once which connection lags.
 */
const MIN_SAMPLES = 2;
/** The latest page times kept for the median. */
const SAMPLES = 16;
/** A request is slow past this many times the median page time... */
const SLOW_FACTOR = 4;
/** ...and past this many ms (loopback pages take a few ms: jitter, GC and CPU turns are not slowness). */
const MIN_SLOW_MS = 250;
const MAX_HEDGES_IN_FLIGHT = 2;
/** Requests sent after a request that must have answered before it counts as overtaken. */
const OVERTAKEN_BY = 2;
/** Answered requests remembered for that count. */
const ANSWERED = 64;

export class HedgePolicy {
  readonly #times: number[] = [];
  #inFlight = 0;
  /** Requests sent (their sequence numbers), and the numbers of the latest that answered. */
  #sentCount = 0;
  readonly #answered: number[] = [];
  /** Hedges sent, and those whose answer was used: for tests and diagnostics. */
  sent = 0;
  won = 0;

  /** A page request took `ms` from being sent to its body being read. */
  record(ms: number): void {
    this.#times.push(ms);
    if (this.#times.length > SAMPLES) this.#times.shift();
  }

  /** How many requests sent after request `seq` have answered. */
  #overtaken(seq: number): number {
    let n = 0;
    for (const s of this.#answered) if (s > seq) n++;
    return n;
  }

  /** How long a request may run before it is hedged, or undefined while too little is known. */
  delayMs(): number | undefined {
    if (this.#times.length < MIN_SAMPLES) return undefined;
    const sorted = [...this.#times].sort((a, b) => a - b);
    const median = sorted[sorted.length >> 1]!;
    return Math.max(MIN_SLOW_MS, SLOW_FACTOR * median);
  }

  /**
   * Runs `send` (a request, given the signal that aborts it) and, if it has not answered within
   * `delayMs()`, runs it a second time: the first to succeed wins and the other is aborted; `drop` gets
   * a result that lost the race (to give back what it holds). A failure counts only once both failed
   * (the hedge's own failure is dropped when the first request then succeeds).
   */
  run<T>(
    send: (signal: AbortSignal) => Promise<T>,
    signal: AbortSignal,
    drop: (result: T) => void,
  ): Promise<T> {
    const sentAt = performance.now();
    const seq = ++this.#sentCount;
    return new Promise<T>((resolve, reject) => {
      const controllers: AbortController[] = [];
      let settled = false;
      let running = 0;
      let failed: { error: unknown } | undefined; // the first request's failure is the one reported
      let timer: NodeJS.Timeout | undefined;
      const onAbort = () => {
        for (const c of controllers) c.abort(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const settle = () => {
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      };
      const start = (hedge: boolean) => {
        const controller = new AbortController();
        controllers.push(controller);
        running++;
        if (hedge) {
          this.sent++;
          this.#inFlight++;
        }
        const ended = () => {
          running--;
          if (hedge) this.#inFlight--;
        };
        send(controller.signal).then(
          (result) => {
            ended();
            if (settled) {
              drop(result);
              return;
            }
            settle();
            if (hedge) this.won++;
            this.#answered.push(seq);
            if (this.#answered.length > ANSWERED) this.#answered.shift();
            for (const c of controllers) if (c !== controller) c.abort(new Error('a faster answer was used'));
            resolve(result);
          },
          (error: unknown) => {
            ended();
            if (settled) return;
            if (!hedge || failed === undefined) failed = { error };
            // The other request may still answer: fail once none is left.
            if (running === 0) {
              settle();
              reject(failed.error);
            }
          },
        );
      };
      start(false);
      // Checked at the slow bound, and again until the stream knows its usual page time.
      const check = () => {
        timer = undefined;
        if (settled) return;
        const wait = this.delayMs();
        const elapsed = performance.now() - sentAt;
        if (wait === undefined || elapsed < wait) {
          timer = setTimeout(check, wait === undefined ? MIN_SLOW_MS : wait - elapsed);
          return;
        }
        if (this.#overtaken(seq) < OVERTAKEN_BY) {
          timer = setTimeout(check, MIN_SLOW_MS / 5);
          return;
        }
        // Other hedges are out: this one waits for room (it is still slow when there is).
        if (this.#inFlight >= MAX_HEDGES_IN_FLIGHT) timer = setTimeout(check, MIN_SLOW_MS);
        else start(true);
      };
      timer = setTimeout(check, this.delayMs() ?? MIN_SLOW_MS);
    });
  }
}
