/**
 * The table-JSON page reader is linear in its bytes, whatever they are. Regression: the decoder that
 * reads a page as it arrives consumed a run of white space after `"rows":[` at 0.5-1 MB/s and slowing
 * (76 MB in 100 s: its window and margin logic rescanned what it had passed), and a 200 MB string cell
 * was held and rescanned the same way. Each hostile page here is fed in 64 kB chunks, as a socket gives
 * them, and its bytes per second must stay within a generous factor of an ordinary page's (a quadratic
 * rescan is hundreds of times slower at these sizes). Only a ratio of two throughputs is asserted.
 */

import { describe, expect, it } from 'vitest';
import { planColumns } from '../src/convert/index.js';
import { allSlices } from '../src/decode/slices.js';
import { FastTableDecoder } from '../src/decode/table-json-fast.js';
import { field } from './convert-fixtures.js';
import { setup } from './helpers.js';

const CHUNK = 64 * 1024;
/** How much slower per byte than an ordinary page a hostile one may be read. */
const FACTOR = 10;
const MB = 1024 * 1024;

const fields = [field('ticker', 'string', 'ticker'), field('n', 'number'), field('s')];
const plan = planColumns(fields);
const where = { start: 1, limit: 1000 };

/** A page whose rows are `rows` (JSON text) and whose envelope has `extra` members before them. */
function page(rows: string, count: number, extra = ''): Buffer {
  return Buffer.from(
    `{"id":"x","total":1000,"count":${count},"start":1,${extra}"rows":${rows},"fields":${JSON.stringify(fields)}}`,
  );
}

/** Feeds `bytes` in 64 kB chunks; the best of three runs, in bytes per ms, and what the page came to. */
function feed(bytes: Buffer, p = plan): { rate: number; rows: number | undefined } {
  let best = Number.POSITIVE_INFINITY;
  let rows: number | undefined;
  for (let run = 0; run < 3; run++) {
    const t0 = performance.now();
    const stream = new FastTableDecoder(p).stream(where, bytes.length);
    for (let at = 0; at < bytes.length; at += CHUNK) stream.push(bytes.subarray(at, at + CHUNK));
    rows = allSlices(stream.finish())?.length;
    best = Math.min(best, performance.now() - t0);
  }
  return { rate: bytes.length / Math.max(best, 0.01), rows };
}

describe('the table-JSON page reader is linear in its bytes', () => {
  it('reads hostile pages in 64 kB chunks within a small factor of an ordinary page’s bytes per second', async () => {
    // The ordinary page: 5,000 rows of job_listings from the emulator, over HTTP.
    const { client } = await setup({ seed: 9, rowCap: 5000 });
    const result = await client.query('job_listings', {});
    const parts: Buffer[] = [];
    for await (const chunk of await result.download({ start: 1, limit: 5000 })) parts.push(chunk as Buffer);
    const ordinary = feed(Buffer.concat(parts), planColumns(result.fields));
    expect(ordinary.rows).toBe(5000);

    const row = (i: number, s: string) => `["nasdaq:t${i % 7}",${i},${JSON.stringify(s)}]`;
    const rows = (n: number, s: (i: number) => string) =>
      `[${Array.from({ length: n }, (_, i) => row(i, s(i))).join(',')}]`;
    const hostile: Record<string, { bytes: Buffer; rows: number | undefined }> = {
      'white space after "rows":[': { bytes: page(`[${' '.repeat(16 * MB)}]`, 0), rows: 0 },
      'white space inside a row': {
        bytes: page(`[["nasdaq:a",${'\n'.repeat(16 * MB)}1,"s"]]`, 1),
        rows: 1,
      },
      'white space between members': { bytes: page('[]', 0, `"limit":5,${' \t'.repeat(8 * MB)}`), rows: 0 },
      'a 16 MB string': {
        bytes: page(
          rows(1, () => 'x'.repeat(16 * MB)),
          1,
        ),
        rows: 1,
      },
      'a 16 MB string of escapes': {
        bytes: page(
          rows(1, () => 'a\n"'.repeat(4 * MB)),
          1,
        ),
        rows: 1,
      },
      'a 16 MB member name': { bytes: page('[]', 0, `${JSON.stringify('k'.repeat(16 * MB))}:1,`), rows: 0 },
      // Skipped envelope members are checked as strictly as JSON.parse, up to 512 deep, then declined.
      'deep nesting in a member': {
        bytes: page('[]', 0, `"x":${'['.repeat(4 * MB)}${']'.repeat(4 * MB)},`),
        rows: undefined,
      },
      'deep nesting in a cell': {
        bytes: page(`[["a",1,${'['.repeat(8 * MB)}${']'.repeat(8 * MB)}]]`, 1),
        rows: undefined,
      },
      // Every chunk ends inside a row: each cut row is framed once, then read once.
      'rows of 100 kB, cut by every chunk': {
        bytes: page(
          rows(160, (i) => `${i}`.padEnd(100_000, 'y')),
          160,
        ),
        rows: 160,
      },
    };
    for (const [what, { bytes, rows: expected }] of Object.entries(hostile)) {
      const got = feed(bytes);
      expect(got.rows, what).toBe(expected);
      expect(
        got.rate,
        `${what}: ${got.rate.toFixed(0)} bytes/ms against ${ordinary.rate.toFixed(0)}`,
      ).toBeGreaterThan(ordinary.rate / FACTOR);
    }
  }, 120_000);
});
