// OrderedWindow directly (src/query/ordered-window.ts): results in the order tasks were taken whatever the
// order they finish in, a window that stops starting tasks while nobody takes results (the stream's
// backpressure), and the first failure in order reported at its place. Pure in-process tasks: no network.
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
});
