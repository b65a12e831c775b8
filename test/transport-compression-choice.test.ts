/**
 * `compression: 'auto'`'s choice, on a simulated clock: a body's time is divided by the bodies read beside
 * it, so a way measured at a narrow window is not favoured over one measured at a wide one.
 */
import { describe, expect, it } from 'vitest';
import { CompressionChoice } from '../src/transport/compression-choice.js';

const MB = 1e6;

/** Reads `n` page bodies at once from `at` to `until` (ms), each of `bytes` decoded, the given way. */
function readAtOnce(
  choice: CompressionChoice,
  compressed: boolean,
  n: number,
  at: number,
  until: number,
  bytes: number,
) {
  const bodies = Array.from({ length: n }, () => choice.bodyStarted(at));
  for (const body of bodies) {
    choice.record(compressed, bytes, until - at, body.sharing(until));
    body.end(until);
  }
}

describe('compression choice', () => {
  it('a slow link: gzipped pages read 16 at a time still beat a plain page read alone', () => {
    const choice = new CompressionChoice();
    expect(choice.next()).toBe(false); // the first page plain
    expect(choice.next()).toBe(true); // the second compressed, in flight beside it
    // The plain page alone on a 12.5 MB/s link: 4.3 MB in ~340 ms, ~80 ms/MB.
    readAtOnce(choice, false, 1, 0, 344, 4.3 * MB);
    // Gzipped pages (a seventh of the bytes) sixteen at a time: each takes ~600 ms, ~130 ms/MB of its own
    // time, but the link carried sixteen of them meanwhile.
    for (let round = 0; round < 3; round++)
      readAtOnce(choice, true, 16, 1000 + round * 600, 1600 + round * 600, 4.6 * MB);
    const measured = choice.measured;
    expect(measured.compressed!).toBeLessThan(measured.plain! / 4);
    // Until the loser's retry, every page asks compressed.
    const asked = Array.from({ length: 12 }, () => choice.next());
    expect(asked.every(Boolean)).toBe(true);
  });

  it('loopback: plain pages read two at a time still beat gzipped ones read two at a time', () => {
    const choice = new CompressionChoice();
    choice.next();
    choice.next();
    readAtOnce(choice, false, 2, 0, 10, 4.2 * MB); // ~1 ms/MB each of its own time
    readAtOnce(choice, true, 2, 10, 400, 4.2 * MB); // the server's gzip and our inflating
    const asked = Array.from({ length: 12 }, () => choice.next());
    expect(asked.some(Boolean)).toBe(false);
  });

  it('a body that ends without being measured (an error) leaves no reader behind', () => {
    const choice = new CompressionChoice();
    const failed = choice.bodyStarted(0);
    failed.end(50);
    failed.end(60); // idempotent
    const body = choice.bodyStarted(100);
    expect(body.sharing(200)).toBe(1);
  });
});
