/**
 * A slow service on a fast machine: round-trip latency, per-page execution time, bandwidth paced on the
 * bytes on the wire (after compression), and the admission limits a gateway enforces (requests in flight,
 * requests per minute), so users and our benchmarks can measure code against a WAN without one.
 */
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A rate limit on a byte stream, as a virtual clock: `next` is when the line finishes what was reserved.
 * While a transfer is under way, a writer that wakes late (a busy event loop, a loaded machine) may catch
 * up on its schedule, by at most `catchUpMs`, so timer lateness does not lower the rate; an idle line banks
 * nothing, so a transfer starting after a pause does not burst.
 */
export class Pacer {
  readonly bytesPerMs: number;
  #next = 0;
  /** Transfers currently going through the line. */
  #active = 0;
  readonly #catchUpMs: number;

  constructor(bytesPerSecond: number, catchUpMs = 100) {
    this.bytesPerMs = bytesPerSecond / 1000;
    this.#catchUpMs = catchUpMs;
  }

  begin(): void {
    this.#active++;
  }

  end(): void {
    this.#active--;
  }

  /** Reserves `bytes` starting no earlier than `at`; returns when they have gone through the line. */
  reserve(bytes: number, at: number): number {
    // `#active > 1`: another transfer keeps the line busy; `1` is the caller's own, which counts only
    // once it has reserved (`#next` after `at` minus the catch-up, i.e. recently in use).
    const floor = this.#active > 0 && this.#next > at - this.#catchUpMs ? at - this.#catchUpMs : at;
    this.#next = Math.max(this.#next, floor) + bytes / this.bytesPerMs;
    return this.#next;
  }

  /** The line is busy until at least `until` (another line held the bytes back). */
  holdUntil(until: number): void {
    if (until > this.#next) this.#next = until;
  }
}

/**
 * Bytes per write while pacing: about 4 ms of the slowest line, between 16 KiB and 256 KiB, so timers stay
 * coarse enough to be accurate and fine enough for a smooth stream.
 */
function chunkBytes(pacers: readonly Pacer[]): number {
  const slowest = Math.min(...pacers.map((p) => p.bytesPerMs));
  return Math.max(16_384, Math.min(262_144, Math.floor(slowest * 4)));
}

function drained(res: ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Writes `body` through the pacers: each chunk leaves when the connection's line and the shared line have
 * both carried it; socket backpressure (`write()` returning false) waits for `drain`. Then `end()`.
 * `perConnection` is this connection's pacer, `total` the emulator's, either may be absent.
 */
export async function pacedWrite(
  res: ServerResponse,
  body: Buffer,
  perConnection: Pacer | undefined,
  total: Pacer | undefined,
  signal: AbortSignal,
): Promise<void> {
  const pacers = [perConnection, total].filter((p): p is Pacer => p !== undefined);
  const size = chunkBytes(pacers);
  for (const pacer of pacers) pacer.begin();
  try {
    await paced(res, body, pacers, size, signal);
  } finally {
    for (const pacer of pacers) pacer.end();
  }
}

async function paced(
  res: ServerResponse,
  body: Buffer,
  pacers: readonly Pacer[],
  size: number,
  signal: AbortSignal,
): Promise<void> {
  for (let at = 0; at < body.length; at += size) {
    if (res.destroyed || signal.aborted) return;
    const chunk = body.subarray(at, at + size);
    const now = performance.now();
    let done = now;
    for (const pacer of pacers) done = Math.max(done, pacer.reserve(chunk.length, now));
    for (const pacer of pacers) pacer.holdUntil(done);
    const wait = done - performance.now();
    if (wait >= 1) {
      try {
        await sleep(wait, undefined, { signal });
      } catch {
        res.destroy();
        return;
      }
    }
    if (res.destroyed) return;
    if (at + size >= body.length) {
      res.end(chunk);
      return;
    }
    if (!res.write(chunk)) await drained(res, signal);
  }
  res.end();
}

/** Requests admitted in the last 60 s, as a sliding log: `Retry-After` says when the oldest leaves it. */
export class MinuteWindow {
  readonly #limit: number;
  readonly #times: number[] = [];
  #head = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Admits one request now (returns 0), or returns the seconds until one would be admitted. */
  admit(now: number): number {
    while (this.#head < this.#times.length && this.#times[this.#head]! <= now - 60_000) this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#times.length) {
      this.#times.splice(0, this.#head);
      this.#head = 0;
    }
    if (this.#times.length - this.#head < this.#limit) {
      this.#times.push(now);
      return 0;
    }
    // The oldest admitted request leaves the window at +60 s; whole seconds, rounded up, at least 1.
    return Math.max(1, Math.ceil((this.#times[this.#head]! + 60_000 - now) / 1000));
  }
}
