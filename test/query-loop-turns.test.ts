/**
 * Page bodies are taken from their sockets a bounded number of bytes per turn of the event loop. Before,
 * a body was read as fast as it came: libuv reads a ready socket up to 32 times 64 KiB in one go and the
 * body's reader took every chunk at once, so a turn read ~2 MB per busy socket (~10 ms of the main thread
 * on loopback), the most common stall over 15 ms of a 500k-row `toTable()` (bench/run.js's event-loop
 * delay). And pages waiting in the window are converted a turn apart, not back to back. Nothing here is
 * timed: the tests count turns of the loop.
 */

import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import { TURN_BYTES, tookBytes } from '../src/query/read-turns.js';
import { loopTurns, setup } from './helpers.js';

const ROWS = 10_000;

interface PageTiming {
  readonly bytes: number;
  readonly waitMs: number;
  readonly bodyMs: number;
  readonly decodeMs: number;
}

describe('page bodies read in turns', () => {
  it.each([
    { format: 'json', decoder: 'fast' },
    { format: 'csv', decoder: 'fast' },
    // `decoder: 'json'`: the reference, which reads the body as it arrives (as XLSX's does).
    { format: 'json', decoder: 'json' },
  ] as const)(
    'lets the event loop turn while a big body is read ($format, $decoder)',
    async ({ format, decoder }) => {
      const { client } = await setup({ seed: 3, rowCap: 3 * ROWS }, { compression: false });
      const result = await client.query('job_listings', {});
      // Each page's body: from its response headers to its last byte (the page channel tells when, after
      // the page's decode, which comes after the body has been read).
      const bodies: { from: number; to: number; bytes: number; bodyMs: number }[] = [];
      const onPage = (message: unknown) => {
        const p = message as PageTiming;
        const to = performance.now() - p.decodeMs;
        bodies.push({ from: to - p.bodyMs, to, bytes: p.bytes, bodyMs: p.bodyMs });
      };
      subscribe('dqs-client:page', onPage);
      const turns = loopTurns();
      try {
        // One request at a time, pages of ~4 MB: the bodies are read one after another.
        const table = await result.toTable({ pageSize: ROWS, concurrency: 1, format, decoder });
        expect(table.numRows).toBe(3 * ROWS);
      } finally {
        turns.stop();
        unsubscribe('dqs-client:page', onPage);
      }
      // The query's first page came with the query (no body read here): the other two were read. (CSV
      // bodies are smaller than table JSON's: ~2.4 MB for 10,000 rows.)
      const read = bodies.filter((b) => b.bodyMs !== 0 && b.bytes > 1_500_000);
      expect(read.length).toBeGreaterThanOrEqual(1);
      for (const body of read) {
        const during = turns.times.filter((t) => t > body.from && t < body.to).length;
        // ~4 MB at most 256 kB a turn: at least ~15 turns while it is read; at once it was 1-3.
        expect(during).toBeGreaterThanOrEqual(Math.floor(body.bytes / TURN_BYTES / 2));
      }
    },
  );

  it('counts the bytes taken in a turn, for every body of the process together', async () => {
    // A macrotask queued before the turn's first bytes: it runs before the turn is over.
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    expect(tookBytes(TURN_BYTES / 2)).toBeUndefined();
    // The budget is the process's: another body's chunk in the same turn fills it.
    const later = tookBytes(TURN_BYTES / 2);
    expect(later).toBeInstanceOf(Promise);
    expect(tookBytes(1)).toBe(later);
    await later;
    // Settled in a later macrotask, with the count started again.
    expect(turned).toBe(true);
    expect(tookBytes(1)).toBeUndefined();
  });
});

describe('pages converted in turns', () => {
  it('lets the event loop turn between two pages, even when many are waiting', async () => {
    const { client } = await setup({ seed: 4, rowCap: 20 * 1000 }, { compression: false });
    const result = await client.query('job_listings', {});
    const loop = loopTurns();
    // The turn in which each batch (a page) reached the consumer. A slow consumer lets pages pile up in
    // the window, so several are ready at once when it reads again.
    const turns: number[] = [];
    try {
      const stream = result.stream({ pageSize: 1000, concurrency: 4, window: 8 });
      for await (const _ of stream) {
        turns.push(loop.count);
        if (turns.length === 2) await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      loop.stop();
    }
    expect(turns.length).toBe(20);
    // At most the stream's buffer (2 batches, read at once after the pause) in one turn; beyond it, one
    // page a turn. Before, the pages waiting were converted and handed over back to back: 5 in one turn.
    const perTurn = new Map<number, number>();
    for (const t of turns) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
    expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(2);
  });
});
