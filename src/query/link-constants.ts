/**
 * Every constant of the link model (`link-model.ts`) and the adaptive concurrency (`concurrency.ts`), in
 * one place: what each means and why it has this value. What measured them is in docs/performance.md
 * (*The link model: its constants*), whose table `test/option-defaults.test.ts` holds to these values.
 */

/**
 * Pages of at most this many bytes. A page is held whole in the window until the consumer takes it, so
 * larger pages make the window hold fewer of them and the first batch come later; a page much larger than
 * V8's young generation also outlives it and is copied by the GC (shared/PERF-NOTES.md).
 */
export const PAGE_BYTES_MAX = 4.5e6;

/**
 * Pages of at least this many bytes: a request costs the client a round of its own work (headers, a
 * connection's bookkeeping, a decoder's page) and the service one of its fixed cost, which a body much
 * smaller than this does not repay.
 */
export const PAGE_BYTES_MIN = 256 * 1024;

/**
 * Rows are asked for in page sizes of 1,000 × a power of two: page boundaries then stay the same from
 * run to run whatever the measured waits, so a cache of pages keyed by start and limit (the service's,
 * a proxy's) keeps hitting, and one size is asked often enough for its quickest wait to be known.
 */
export const PAGE_ROWS_UNIT = 1000;

/**
 * Page rows are chosen so that the service's time on a page's rows is about this many times its fixed
 * cost (the round trip and its per-request work): where rows cost nothing, the byte bounds decide alone;
 * where they cost, a bigger page makes every page wait longer before its first byte (the link sits idle
 * while the first wave waits, and bytes in flight must cover that wait), a smaller one pays the fixed
 * cost for fewer rows.
 */
export const ROW_SHARE = 1;

/**
 * While the service's cost per row is unknown, pages alternate between the first page's rows and this
 * many times as many: two sizes in the first wave tell the fixed and the per-row cost after one wait.
 */
export const STARTUP_SIZE_RATIO = 2;

/**
 * Requests in the first wave, at most, before anything but the first page is known. Each refused request
 * of a service that caps requests in flight costs its page a `Retry-After`; the ceiling a refusal sets
 * bounds the waves after it, not this one. (TCP's initial window plays the same part.)
 */
export const INITIAL_WAVE = 16;

/**
 * In startup every answered request (its headers, not a refusal) lets this many more go, as every ACK
 * grows TCP's slow start: the limit triples per time to first byte, about BBR's startup gain (2/ln 2).
 * Answers come back a wait after their request, refusals a round trip: a cap or a rate limit is seen
 * before the growth it would refuse.
 */
export const STARTUP_GROWTH = 2;

/**
 * A delivery rate this many times the best before it is a gain: startup goes on while each round brings
 * one (BBR's full-pipe test; a round without one ends it, as bodies that share a bottleneck end it
 * sooner), and a steady-state probe raises in-flight requests by this factor for a round and lowers them
 * by it the round after (BBR's bandwidth probing: a link that became faster shows it in the probe, and
 * the round after drains the queue the probe built).
 */
export const RATE_GAIN = 1.25;

/**
 * The last this many bodies tell whether bodies share a bottleneck (their median rate a RATE_GAIN below
 * one connection's best): the link, or a client that reads slower than the bodies come. Startup then
 * stops growing, sooner than a round of rates would tell (one slow body is no sign).
 */
export const SHARED_BODIES = 5;

/**
 * In steady state, requests in flight = this × the bandwidth-delay product over a page's latency: room
 * for pages that do not end evenly, a decode or a collection that holds the reader back, as BBR keeps
 * twice its estimate in flight.
 */
export const STEADY_GAIN = 2;

/** Rounds of steady state from one probe to the next (and from an overload's cut to its first probe). */
export const PROBE_EVERY = 8;

/**
 * A sample was limited by the client, not the link, when the event loop was busy at least this share of
 * its time: the reader, not the network, held the bytes back (BBR's "application limited"). Its answers
 * do not grow startup.
 */
export const BUSY_SHARE = 0.85;

/**
 * Estimates older than this are forgotten (the quickest waits, the best rates): a client lives longer
 * than a network's state, and one idle for a while starts again from startup.
 */
export const ESTIMATE_WINDOW_MS = 10_000;

/**
 * A 503 or a timeout (the service is overloaded) cuts the limit to this share, once per round.
 */
export const OVERLOAD_CUT = 0.7;

/**
 * Rounds before the limit probes one above a ceiling a 429 set, doubled after each refused probe: a cap
 * on requests in flight is a rule of the service, and a refused probe costs its page a `Retry-After`.
 */
export const CEILING_PROBE_ROUNDS = 32;
