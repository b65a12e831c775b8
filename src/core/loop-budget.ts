/**
 * What the page streams of a client take of each turn of the event loop, as one object the client owns
 * (or is handed: clients given one budget share it). Two parts:
 *
 * - Body bytes: page bodies are taken from their sockets at most `TURN_BYTES` a turn, all streams
 *   together. Read as fast as it came, a body was read in bursts: each socket readiness makes libuv read
 *   up to 32 times 64 KiB, and every read runs through undici and the body's reader synchronously, so one
 *   turn took ~2 MB per busy socket (~10 ms of the main thread on loopback, where the kernel's TCP work for
 *   both ends runs in the reader's read calls): the most common stall over 15 ms of a 500k-row
 *   `toTable()`. A reader that stops taking chunks for the rest of the turn lets backpressure do the rest:
 *   undici pauses its parser, the socket's buffer fills, and the bytes wait in the kernel.
 * - Decodes: a decode's steps run one per turn (a macrotask: timers, sockets and other streams' callbacks
 *   run between two), and one decode at a time. A 4 MB page is ~20 ms of CPU: in one go it delayed
 *   everything else by as much (event-loop delay p99 of a 500k-row `toTable()` ~60 ms). One at a time,
 *   because many bodies ending together (a link shared fairly ends them all at once) would otherwise
 *   decode back to back, and the requests their slots start would wait for all of them (0.55-0.87 s of a
 *   3.7-4.2 s read on the WAN bench at concurrency 32). In turn, a stream's pages also finish in the order
 *   they arrived, the order it needs them.
 */

import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';

/**
 * Bytes the page bodies take per turn: ~2-3 ms of the main thread on loopback (more turns cost nothing
 * measurable; the bytes read per turn set the delay of everything else).
 */
export const TURN_BYTES = 256 * 1024;

/**
 * What the page streams of one or more clients take of each turn of the event loop. A client makes its
 * own; to have clients share one, hand it on: `new DatasetClient({ loopBudget: other.loopBudget })`.
 */
export class LoopBudget {
  /** Bytes taken in this turn. */
  #taken = 0;
  /** Settles at the end of this turn (once a body has taken bytes in it), when `#taken` starts again at 0. */
  #turnEnd: Promise<void> | undefined;
  /** Settles when the latest decode started has ended; the next one starts after it. */
  #lane: Promise<void> = Promise.resolve();

  /**
   * @internal
   * Counts `bytes` a body reader has just taken: `undefined` while this turn has room for more, else a
   * promise for the next turn, which the reader must await before it takes another chunk.
   */
  tookBytes(bytes: number): Promise<void> | undefined {
    this.#taken += bytes;
    this.#turnEnd ??= new Promise<void>((resolve) => {
      // A macrotask, run after this turn's I/O: the sockets' own reads of the turn are done by then.
      setImmediate(() => {
        this.#taken = 0;
        this.#turnEnd = undefined;
        resolve();
      });
    });
    return this.#taken >= TURN_BYTES ? this.#turnEnd : undefined;
  }

  /**
   * @internal
   * Hands `body`'s chunks to `take` as they come, at most `TURN_BYTES` a turn (with every other body of
   * the budget); settles when the body has ended, or fails with its error (an error `take` throws
   * destroys the body). In flowing mode, paused and resumed: a reader that waits a turn and then calls
   * `read()` (what `for await` does) gets the chunks buffered meanwhile joined into one new buffer, a copy
   * and an allocation per turn that cost more CPU than the turns themselves.
   */
  async takeInTurns(body: Readable, take: (chunk: Buffer) => void): Promise<void> {
    const ended = finished(body);
    // What `take` threw: the error to report. Destroying an inflating body (a pipeline) ends it with an
    // error of its own (a premature close), which a 2 GiB gzip bomb's ResponseTooLargeError must not
    // become: that would read as a network failure, and be retried.
    let failure: { error: unknown } | undefined;
    body.on('data', (chunk: Buffer) => {
      if (failure) return;
      try {
        take(chunk);
      } catch (error) {
        failure = { error };
        body.destroy(error as Error);
        return;
      }
      const later = this.tookBytes(chunk.length);
      if (later === undefined) return;
      body.pause();
      void later.then(() => {
        if (!body.destroyed) body.resume();
      });
    });
    try {
      await ended;
    } catch (error) {
      throw failure ? failure.error : error;
    }
    if (failure) throw failure.error;
  }

  /** @internal Runs a decode's steps one per turn of the event loop, one decode of the budget at a time. */
  async inTurns<T>(steps: Generator<void, T, void>): Promise<T> {
    const before = this.#lane;
    let ended!: () => void;
    this.#lane = new Promise<void>((resolve) => {
      ended = resolve;
    });
    try {
      await before;
      for (;;) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        const step = steps.next();
        if (step.done) return step.value;
      }
    } finally {
      ended();
    }
  }
}
