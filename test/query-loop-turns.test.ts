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
import { LoopBudget, TURN_BYTES } from '../src/core/loop-budget.js';
import { DatasetClient } from '../src/index.js';
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

  it("counts the bytes taken in a turn, for every body of the budget together, not another budget's", async () => {
    // A macrotask queued before the turn's first bytes: it runs before the turn is over.
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    const budget = new LoopBudget();
    const other = new LoopBudget();
    expect(budget.tookBytes(TURN_BYTES / 2)).toBeUndefined();
    expect(other.tookBytes(TURN_BYTES / 2)).toBeUndefined();
    // Another body's chunk in the same turn fills it; the other budget's did not count.
    const later = budget.tookBytes(TURN_BYTES / 2);
    expect(later).toBeInstanceOf(Promise);
    expect(budget.tookBytes(1)).toBe(later);
    await later;
    // Settled in a later macrotask, with the count started again.
    expect(turned).toBe(true);
    expect(budget.tookBytes(1)).toBeUndefined();
  });

  it('two clients handed one budget take of each turn what one takes (module state no more)', async () => {
    const { emu, client: first } = await setup({ seed: 3, rowCap: 2 * ROWS }, { compression: false });
    const second = new DatasetClient({
      baseUrl: emu.url,
      apiKey: emu.apiKey,
      compression: false,
      loopBudget: first.loopBudget,
    });
    expect(second.loopBudget).toBe(first.loopBudget);
    // A client of its own has a budget of its own: clients share only what they are handed.
    const alone = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey });
    expect(alone.loopBudget).not.toBe(first.loopBudget);
    await alone.close();
    try {
      const [a, b] = [await first.query('job_listings', {}), await second.query('web_traffic', {})];
      // What the budget counts, turn by turn (observed on the object both clients were handed): a turn
      // of the count ends in a macrotask queued before the budget's own, so the two end together.
      const budget = first.loopBudget;
      const took = budget.tookBytes.bind(budget);
      const perTurn: number[] = [0];
      let counting = false;
      budget.tookBytes = (n: number) => {
        if (!counting) {
          counting = true;
          setImmediate(() => {
            counting = false;
            perTurn.push(0);
          });
        }
        perTurn[perTurn.length - 1]! += n;
        return took(n);
      };
      try {
        // One body at a time per client: two bodies in flight, each may take one chunk (up to 64 kB)
        // more once the turn's bytes are spent.
        const options = { pageSize: ROWS, concurrency: 1, decoder: 'fast' } as const;
        const [ta, tb] = await Promise.all([a.toTable(options), b.toTable(options)]);
        expect(ta.numRows + tb.numRows).toBe(4 * ROWS);
      } finally {
        budget.tookBytes = took;
      }
      // Both clients' bodies went through it (the pages after their first), at most TURN_BYTES a turn
      // together, give or take a chunk per body: with a budget each, two clients took twice TURN_BYTES
      // in a turn (512 kB).
      expect(perTurn.reduce((x, y) => x + y, 0)).toBeGreaterThan(4 * TURN_BYTES);
      expect(Math.max(...perTurn)).toBeLessThanOrEqual(TURN_BYTES + 2 * 64 * 1024);
    } finally {
      await second.close();
    }
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
