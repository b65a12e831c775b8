/**
 * Page bodies are taken from their sockets a bounded number of bytes per turn of the event loop, by all
 * streams of the process together.
 *
 * Why: a body read as fast as it comes is read in bursts. Each socket readiness makes libuv read up to 32
 * times 64 KiB, and every read runs through undici and the body's reader synchronously (the reader asks
 * for more before libuv reads again), so one turn took ~2 MB per busy socket. On loopback that is ~10 ms
 * of the main thread (the kernel's TCP work for both ends of the connection runs in the reader's read
 * calls), and with a decode slice in the same turn it was most of the stalls over 15 ms of a 500k-row
 * `toTable()`: the same bursts give reading bytes alone (bench `bytes`) an event-loop delay p99 of ~35 ms.
 * A reader that stops taking chunks for the rest of the turn lets backpressure do the rest: undici pauses
 * its parser, the socket's buffer fills, and Node stops reading the socket until the reader asks again.
 * The bytes wait in the kernel (the sender is held by TCP's window), and the loop turns.
 */

import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';

/**
 * Bytes the page bodies of the process take per turn: ~2-3 ms of the main thread on loopback (more turns
 * cost nothing measurable; the bytes read per turn set the delay of everything else).
 */
export const TURN_BYTES = 256 * 1024;

/** Bytes taken in this turn. Module state on purpose: the event loop is the process's. */
let taken = 0;
/** Settles at the end of this turn (once a body has taken bytes in it), when `taken` starts again at 0. */
let turnEnd: Promise<void> | undefined;

/**
 * Counts `bytes` a body reader has just taken: `undefined` while this turn has room for more, else a
 * promise for the next turn, which the reader must await before it takes another chunk.
 */
export function tookBytes(bytes: number): Promise<void> | undefined {
  taken += bytes;
  turnEnd ??= new Promise<void>((resolve) => {
    // A macrotask, run after this turn's I/O: the sockets' own reads of the turn are done by then.
    setImmediate(() => {
      taken = 0;
      turnEnd = undefined;
      resolve();
    });
  });
  return taken >= TURN_BYTES ? turnEnd : undefined;
}

/**
 * Hands `body`'s chunks to `take` as they come, at most `TURN_BYTES` a turn (with every other body);
 * settles when the body has ended, or fails with its error (an error `take` throws destroys the body).
 * In flowing mode, paused and resumed: a reader that waits a turn and then calls `read()` (what `for
 * await` does) gets the chunks buffered meanwhile joined into one new buffer, a copy and an allocation
 * per turn that cost more CPU than the turns themselves.
 */
export async function takeInTurns(body: Readable, take: (chunk: Buffer) => void): Promise<void> {
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
    const later = tookBytes(chunk.length);
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
