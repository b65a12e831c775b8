/**
 * The emulator under load, at the door and after: fresh connections are accepted many per event-loop turn
 * (`acceptWidth`), so they do not queue behind a busy loop; and once a load has passed, an idle collection
 * gives the dead page buffers back. Assertions count loop turns and collections, never durations.
 */
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { Emulator } from '../src/emulator/index.js';
import { authHeaders, createQuery, startTestEmulator, TABLE } from './emulator-helpers.js';

/** One GET on a fresh connection (no agent, no keep-alive): resolves with its status. */
function freshGet(emu: Emulator, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${emu.url}${path}`, { agent: false, headers: authHeaders(emu) }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Turns of a busy event loop (each turn keeps the CPU `busyMs`, as a loaded emulator's do) until `n` fresh
 * connections have all been answered. Node accepts one connection per turn and listening descriptor, so
 * with one descriptor this is at least `n` turns.
 */
async function turnsToServe(emu: Emulator, n: number, busyMs = 2): Promise<number> {
  let turns = 0;
  let done = false;
  const spin = () => {
    if (done) return;
    turns++;
    const until = performance.now() + busyMs;
    while (performance.now() < until) {
      // busy, as a turn that parses and answers many requests is
    }
    setImmediate(spin);
  };
  setImmediate(spin);
  const statuses = await Promise.all(Array.from({ length: n }, () => freshGet(emu, '/datasets/')));
  done = true;
  expect(statuses).toEqual(Array(n).fill(200));
  return turns;
}

describe('wide accept', () => {
  it('accepts a burst of fresh connections in a few busy turns, where one descriptor needs one turn each', async () => {
    const n = 40;
    const narrow = await startTestEmulator({ acceptWidth: 1 });
    expect(narrow.stats().acceptWidth).toBe(1);
    const wide = await startTestEmulator({ acceptWidth: 64 });
    expect(wide.stats().acceptWidth).toBe(64);
    const narrowTurns = await turnsToServe(narrow, n);
    const wideTurns = await turnsToServe(wide, n);
    expect(narrowTurns).toBeGreaterThanOrEqual(n);
    expect(wideTurns).toBeLessThan(n / 2);
  });

  it('serves every connection and lets go of the port when closed', async () => {
    const emu = await startTestEmulator({ acceptWidth: 8 });
    const statuses = await Promise.all(Array.from({ length: 100 }, () => freshGet(emu, '/datasets/')));
    expect(statuses.every((s) => s === 200)).toBe(true);
    const { port } = emu;
    await emu.close();
    // Every copy of the listening descriptor is closed: the port can be listened on again.
    const { startEmulator } = await import('../src/emulator/index.js');
    const again = await startEmulator({ port, acceptWidth: 1 });
    expect(again.port).toBe(port);
    await again.close();
  });

  it('rejects a width outside 1-256 with a typed error naming the option', async () => {
    await expect(startTestEmulator({ acceptWidth: 0 })).rejects.toThrow(/acceptWidth/);
    await expect(startTestEmulator({ acceptWidth: 1.5 })).rejects.toThrow(/acceptWidth/);
  });
});

describe('idle collection', () => {
  it('runs one full collection once the emulator has been idle after serving tens of MB, none while busy', async () => {
    const emu = await startTestEmulator({ pageCacheSize: 0 });
    const { id } = await createQuery(emu, 'job_listings');
    // About 4 MB a page: 24 MB of bodies, past the 8 MiB that make a collection worth its pause.
    for (let i = 0; i < 6; i++) {
      const res = await fetch(
        `${emu.url}/datasets/job_listings/query/${id}?start=${i * 10_000 + 1}&limit=10000`,
        {
          headers: authHeaders(emu, { Accept: TABLE, 'Accept-Encoding': 'identity' }),
        },
      );
      await res.arrayBuffer();
    }
    expect(emu.stats().idleCollections).toBe(0);
    await new Promise((r) => setTimeout(r, 400));
    expect(emu.stats().idleCollections).toBe(0); // not idle long enough yet
    await new Promise((r) => setTimeout(r, 900));
    expect(emu.stats().idleCollections).toBe(1);
    // Nothing new served: no second collection.
    await new Promise((r) => setTimeout(r, 1200));
    expect(emu.stats().idleCollections).toBe(1);
  });

  it('makes no collection for a few small answers', async () => {
    const emu = await startTestEmulator();
    for (let i = 0; i < 20; i++) await freshGet(emu, '/datasets/');
    await new Promise((r) => setTimeout(r, 1300));
    expect(emu.stats().idleCollections).toBe(0);
  });
});
