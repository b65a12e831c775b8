/**
 * How the byte decoders cut a page's decode into slices, so that their driver (page-decoder.ts) lets the
 * event loop turn between two: steps of ~`STEP_MS`, the clock read between steps (never per row), until
 * the slice's time or bytes are spent. A slow stretch of rows (code not yet compiled, a GC inside) ends
 * its slice on time instead of running ~2x over it, as slices sized from the last one's speed did.
 */

/** What a slice takes at most (give or take one step): it ends at this time or at its most bytes. */
const SLICE_MS = 5;
/** What a step of a slice should take. */
const STEP_MS = 1;
const MIN_STEP_BYTES = 16 * 1024;

/**
 * The bytes of a decoder's next step, learned from how long the last one took. One per decoder kind, as
 * module state of its file: what it tracks (whether that decoder's loop is compiled yet) is the process's.
 * It starts small: the first pages of a process run the loop before it is compiled.
 */
export class StepBytes {
  #bytes = 32 * 1024;

  /** `sliceBytes`: the most body bytes of a slice (and of a step). */
  constructor(readonly sliceBytes: number) {}

  /**
   * Runs `step(from, to)` over a body from `at` until it says the page is done (by returning
   * `undefined`) or the body is spent, yielding between slices. `step` decodes from `from` and may
   * stop short of or run past `to` (at a row's end); it returns where it stopped.
   */
  *run(
    at: number,
    end: number,
    step: (from: number, to: number) => number | undefined,
  ): Generator<void, void, void> {
    for (;;) {
      const first = at;
      const t0 = performance.now();
      let now = t0;
      do {
        const from = at;
        const next = step(from, Math.min(end, from + this.#bytes));
        const t = performance.now();
        if (next === undefined) return;
        this.#bytes = Math.max(
          MIN_STEP_BYTES,
          Math.min(this.sliceBytes, Math.floor(((next - from) * STEP_MS) / Math.max(t - now, 0.05))),
        );
        at = next;
        now = t;
      } while (at < end && now - t0 < SLICE_MS && at - first < this.sliceBytes);
      if (at >= end) return;
      yield;
    }
  }
}

/** Runs a decode's slices to their end at once (a decoder's `decode()`, for callers that need no turns). */
export function allSlices<T>(steps: Generator<void, T, void>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}
