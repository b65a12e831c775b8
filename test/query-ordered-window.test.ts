// OrderedWindow directly (src/query/ordered-window.ts): results in the order tasks were taken whatever the
// order they finish in, a window that stops starting tasks while nobody takes results (the stream's
// backpressure), the first failure in order reported at its place, and a source that says "not now"
// until woken. Pure in-process tasks: no network.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OrderedWindow, type WindowTask } from '../src/query/ordered-window.js';

/** A task per number from 0 to count-1; task i finishes after `delays[i]` ms with the value i. */
function tasks(count: number, delays: (i: number) => number, fail?: number) {
  let next = 0;
  return () => {
    if (next >= count) return undefined;
    const i = next++;
    const task: WindowTask<number> = () =>
      new Promise<number>((resolve, reject) =>
        setTimeout(() => (i === fail ? reject(new Error(`task ${i} failed`)) : resolve(i)), delays(i)),
      );
    return task;
  };
}

/** A window over `source` of `maxPages` tasks at most (each runs at once: no scheduler here). */
function window(source: () => WindowTask<number> | undefined, maxPages: number) {
  return new OrderedWindow<number>(source, {
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
      8,
    );
    expect(await drain(w)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(w.started).toBe(8);
  });

  it('starts no more than its window while nobody takes results', async () => {
    const w = window(
      tasks(50, () => 1),
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

  it('a source that answers "not now" (null) is asked again when woken, and nothing is lost', async () => {
    // Like the engine's: a page is planned only when the scheduler has room for its request.
    let room = 2;
    let wake: (() => void) | undefined;
    let next = 0;
    const w = new OrderedWindow<number>(
      () => {
        if (next >= 10) return undefined;
        if (room === 0) return null;
        room--;
        const i = next++;
        return () =>
          new Promise<number>((resolve) =>
            setTimeout(() => {
              room++;
              wake?.();
              resolve(i);
            }, 2),
          );
      },
      {
        maxPages: () => 8,
        maxBytes: Number.MAX_SAFE_INTEGER,
        sizeOf: () => 1,
        wake: (fill) => {
          wake = fill;
          return () => {
            wake = undefined;
          };
        },
      },
    );
    expect(await drain(w)).toEqual(Array.from({ length: 10 }, (_, i) => i));
    expect(room).toBe(2);
    // Cancelled, it asks no more to be woken.
    w.cancel();
    expect(wake).toBeUndefined();
  });

  it('keeps every result once and in order whatever the delays and the window (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 30, maxLength: 30 }),
        async (count, maxPages, delays) => {
          const w = window(
            tasks(count, (i) => delays[i]!),
            maxPages,
          );
          expect(await drain(w)).toEqual(Array.from({ length: count }, (_, i) => i));
        },
      ),
      { numRuns: 40 },
    );
  });
});
