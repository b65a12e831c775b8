// OrderedWindow directly (src/query/ordered-window.ts): results in the order tasks were taken whatever the
// order they finish in, a window that stops starting tasks while nobody takes results (the stream's
// backpressure), and the first failure in order reported at its place. Pure in-process tasks: no network.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FixedConcurrency } from '../src/query/concurrency.js';
import { OrderedWindow, type WindowTask } from '../src/query/ordered-window.js';
import { RequestScheduler } from '../src/query/scheduler.js';

/** A task per number from 0 to count-1; task i finishes after `delays[i]` ms with the value i. */
function tasks(count: number, delays: (i: number) => number, fail?: number) {
  let next = 0;
  return () => {
    if (next >= count) return undefined;
    const i = next++;
    return {
      run: () =>
        new Promise<number>((resolve, reject) =>
          setTimeout(() => (i === fail ? reject(new Error(`task ${i} failed`)) : resolve(i)), delays(i)),
        ),
    } satisfies WindowTask<number>;
  };
}

function window(
  source: () => WindowTask<number> | undefined,
  concurrency: number,
  maxPages = 2 * concurrency,
) {
  return new OrderedWindow<number>(source, {
    scheduler: new RequestScheduler(new FixedConcurrency(concurrency)),
    maxPages: () => maxPages,
    maxBytes: Number.MAX_SAFE_INTEGER,
    sizeOf: () => 1,
  });
}

async function drain(w: OrderedWindow<number>): Promise<number[]> {
  const out: number[] = [];
  for (;;) {
    const next = await w.next();
    if (next.done) return out;
    out.push(next.value);
  }
}

describe('OrderedWindow', () => {
  it('hands results back in the order the tasks were taken, though later ones finish first', async () => {
    // Task 0 is the slowest, task 7 the fastest.
    const w = window(
      tasks(8, (i) => (8 - i) * 5),
      4,
    );
    expect(await drain(w)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(w.started).toBe(8);
  });

  it('starts no more than its window while nobody takes results', async () => {
    const w = window(
      tasks(50, () => 1),
      2,
      3,
    );
    expect((await w.next()).value).toBe(0);
    // Everything the window allows has finished by now; nothing beyond it may have started.
    await new Promise((r) => setTimeout(r, 50));
    expect(w.started).toBeLessThanOrEqual(4);
    expect(await drain(w)).toEqual(Array.from({ length: 49 }, (_, i) => i + 1));
  });

  it('reports the first failure in order, after the results before it', async () => {
    const w = window(
      tasks(6, (i) => (i === 3 ? 1 : 20), 3),
      6,
    );
    const got: number[] = [];
    await expect(
      (async () => {
        for (;;) {
          const next = await w.next();
          if (next.done) return;
          got.push(next.value);
        }
      })(),
    ).rejects.toThrow('task 3 failed');
    expect(got).toEqual([0, 1, 2]);
  });

  describe('retract: tasks still waiting for a slot are given back and taken anew', () => {
    /**
     * Ranges of a cursor over rows 0..total-1, `size()` rows a task (read when the task is taken), each
     * task finishing after `delay(i)` ms with its rows; ranges given back move the cursor back.
     */
    function ranges(total: number, size: () => number, delay: (i: number) => number) {
      let next = 0;
      let taken = 0;
      const source = (): WindowTask<number[]> | undefined => {
        if (next >= total) return undefined;
        const start = next;
        const rows = Array.from({ length: Math.min(size(), total - start) }, (_, k) => start + k);
        next += rows.length;
        const i = taken++;
        return {
          run: () => new Promise<number[]>((resolve) => setTimeout(() => resolve(rows), delay(i))),
          giveBack: () => {
            // Latest first: only the last range handed out can come back.
            expect(start + rows.length).toBe(next);
            next = start;
          },
        };
      };
      return { source, ran: () => taken };
    }

    it('gives back the tail still waiting, never a running task nor the one awaited, and loses no row', async () => {
      let size = 1;
      const src = ranges(
        40,
        () => size,
        () => 5,
      );
      const w = new OrderedWindow<number[]>(src.source, {
        scheduler: new RequestScheduler(new FixedConcurrency(2)),
        maxPages: () => 10,
        maxBytes: Number.MAX_SAFE_INTEGER,
        sizeOf: () => 1,
      });
      const first = await w.next();
      expect(first.value).toEqual([0]);
      // 10 tasks in the window, 2 of them running: 8 wait for a slot and are given back.
      size = 10;
      expect(w.retract()).toBe(8);
      expect(w.retract()).toBe(0);
      const rows: number[] = [...first.value!];
      for (;;) {
        const next = await w.next();
        if (next.done) break;
        rows.push(...next.value);
      }
      expect(rows).toEqual(Array.from({ length: 40 }, (_, i) => i));
      // 1 + 10 at one row each, then 29 rows in 3 tasks of up to 10 rows (not 29 tasks of one).
      expect(src.ran()).toBeLessThanOrEqual(11 + 8 + 3);
      expect(src.ran()).toBeLessThan(25);
    });

    it('keeps every row once and in order, whenever and however often it is called (property)', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 60 }),
          fc.integer({ min: 1, max: 4 }),
          fc.array(fc.tuple(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 1, max: 12 })), {
            maxLength: 6,
          }),
          fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 16 }),
          async (total, concurrency, retracts, delays) => {
            let size = 1;
            const src = ranges(
              total,
              () => size,
              (i) => delays[i % delays.length]!,
            );
            const w = new OrderedWindow<number[]>(src.source, {
              scheduler: new RequestScheduler(new FixedConcurrency(concurrency)),
              maxPages: () => 2 * concurrency + 2,
              maxBytes: Number.MAX_SAFE_INTEGER,
              sizeOf: () => 1,
            });
            const rows: number[] = [];
            let taken = 0;
            for (;;) {
              // Before the `taken`-th result: a new size, given back after the result or at once.
              for (const [at, next] of retracts) {
                if (at !== taken) continue;
                size = next;
                w.retract();
              }
              const next = await w.next();
              if (next.done) break;
              rows.push(...next.value);
              taken++;
            }
            expect(rows).toEqual(Array.from({ length: total }, (_, i) => i));
          },
        ),
        { numRuns: 60 },
      );
    });
  });
});
