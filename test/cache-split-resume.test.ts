/**
 * Resumable split reads (issue #46, point 3), in the library: a split read of a caching client that is
 * broken off and run again goes on from its checkpoint (no second bisection; finished parts from their
 * entries, no request), gives the rows an uninterrupted read gives, and falls back to the service when
 * the checkpoint no longer describes the service's result. Real HTTP to the emulator, a lowered row cap.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { type Emulator, type EmulatorOptions, startEmulator } from '../src/emulator/index.js';
import { type CacheEvent, DatasetClient, type SplitInfo } from '../src/index.js';

const KEY = 'split-resume-key';
const DATASET = 'store_locations';
/** 16 tickers of store_locations, 4,259 rows; a cap of 1,420 splits them into 4 parts of 4 tickers. */
const TICKERS = [
  'asx:wow',
  'epa:mc',
  'lse:hsba',
  'lse:kgf',
  'lse:mks',
  'lse:tsco',
  'nasdaq:aapl',
  'nasdaq:amzn',
  'nasdaq:cost',
  'nasdaq:sbux',
  'nasdaq:tsla',
  'nyse:bac',
  'nyse:brk.b',
  'nyse:cmg',
  'nyse:dis',
  'nyse:hd',
];
const CAP = 1420;
const BODY = { tickers: TICKERS };
/** Small pages: a part is many requests, so a read can be broken off inside one. */
const PAGE = 100;

const open: { close(): Promise<void> }[] = [];
const dirs: string[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});

async function emulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const emu = await startEmulator({ apiKey: KEY, rowCap: CAP, ...options });
  open.push(emu);
  return emu;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dqs-split-resume-'));
  dirs.push(dir);
  return dir;
}

function client(emu: Emulator, dir?: string): { client: DatasetClient; events: CacheEvent[] } {
  const c = new DatasetClient({ baseUrl: emu.url, apiKey: KEY, ...(dir ? { cache: { dir } } : {}) });
  open.push(c);
  const events: CacheEvent[] = [];
  c.on('cache', (e: CacheEvent) => events.push(e));
  return { client: c, events };
}

type Row = Record<string, unknown>;

/** Requests by the query id they read (`POST` for creates: the emulator's log has no body). */
function requestsSince(emu: Emulator, from: number) {
  const seen = emu.requests.slice(from);
  const gets = new Map<string, number>();
  for (const r of seen) {
    const id = /\/query\/([0-9a-f]{64})$/.exec(r.path)?.[1];
    if (r.method === 'GET' && id) gets.set(id, (gets.get(id) ?? 0) + 1);
  }
  return { all: seen.length, post: seen.filter((r) => r.method === 'POST').length, gets };
}

/** Reads the split result with small pages; `stopAfter` rows: breaks off there (as a kill would). */
async function read(
  c: DatasetClient,
  stopAfter = Number.POSITIVE_INFINITY,
): Promise<{ rows: Row[]; split: SplitInfo | undefined }> {
  const stream = c.stream(DATASET, BODY, { split: true, output: 'rows', pageSize: PAGE, hedge: false });
  let split: SplitInfo | undefined;
  stream.on('split', (s: SplitInfo) => {
    split = s;
  });
  const rows: Row[] = [];
  for await (const row of stream) {
    rows.push(row as Row);
    if (rows.length >= stopAfter) break;
  }
  return { rows, split };
}

function files(dir: string): string[] {
  try {
    return readdirSync(join(dir, 'entries')).filter((n) => n.endsWith('.dqsc'));
  } catch {
    return [];
  }
}

describe('a split read broken off goes on from its checkpoint', () => {
  test.each([0.25, 0.5, 0.75])(
    'at %s of the rows: the same rows, only the unfinished parts asked for',
    async (at) => {
      const emu = await emulator();
      // The uninterrupted read, without a cache: the rows, the parts, and each part's requests.
      const before = emu.requests.length;
      const whole = await read(client(emu).client);
      const full = requestsSince(emu, before);
      const parts = whole.split!.parts;
      expect(parts.length).toBe(4);
      expect(whole.rows.length).toBe(parts.reduce((n, p) => n + p.total, 0));
      /** A part's requests in the uninterrupted read: its POST and its GETs (no HEAD: each fits). */
      const cost = (p: (typeof parts)[number]) => 1 + (full.gets.get(p.queryId) ?? 0);

      const dir = tempDir();
      const stop = Math.round(at * whole.rows.length);
      const first = client(emu, dir);
      const broken = await read(first.client, stop);
      expect(broken.rows).toEqual(whole.rows.slice(0, stop));
      // Its requests in flight when it broke off end (and reach the log) before the rerun is counted.
      open.splice(open.indexOf(first.client), 1);
      await first.client.close();
      await new Promise((resolve) => setTimeout(resolve, 200));
      // The parts whose every row had passed: their entries, and the plan (nothing of the whole result).
      const finished = parts.filter((p) => p.firstRow + p.total - 1 <= stop);
      // (Parts read ahead of the consumer may have finished too.)
      expect(files(dir).length).toBeGreaterThanOrEqual(1 + finished.length);

      const again = client(emu, dir);
      const from = emu.requests.length;
      const resumed = await read(again.client);
      const rerun = requestsSince(emu, from);
      expect(resumed.rows).toEqual(whole.rows);
      expect(resumed.split).toEqual(whole.split);
      const unfinished = parts.filter((p) => !finished.includes(p));
      const allowed = unfinished.reduce((n, p) => n + cost(p), 0) + 2;
      // The figures, for the report.
      console.log(
        `split resume at ${at * 100} %: ${finished.length} of ${parts.length} parts finished; ` +
          `rerun ${rerun.all} requests, unfinished parts ${allowed - 2} (+2 allowed), uninterrupted ${full.all}`,
      );
      expect(rerun.all).toBeLessThanOrEqual(allowed);
      // Not one request for a finished part's pages.
      for (const p of finished) expect(rerun.gets.get(p.queryId) ?? 0).toBe(0);
      expect(again.events.map((e) => e.type)).toEqual(['miss', 'resumed', 'stored']);
      expect(again.events[1]).toMatchObject({ type: 'resumed', parts: 4 });
      expect((again.events[1] as { finished: number }).finished).toBeGreaterThanOrEqual(finished.length);
      // Stored whole: the checkpoint is gone, and a third run is a plain hit.
      expect(files(dir).length).toBe(1);
      const third = client(emu, dir);
      const hit = await read(third.client);
      expect(hit.rows).toEqual(whole.rows);
      expect(third.events.map((e) => e.type)).toEqual(['hit']);
    },
  );
});

describe('a checkpoint with queries that run a while', () => {
  test('the POSTs answer running: the parts created again are waited for, the rows are right', async () => {
    const emu = await emulator({ queryDelayMs: 30 });
    const dir = tempDir();
    const whole = await read(client(emu).client);
    await read(client(emu, dir).client, Math.round(whole.rows.length * 0.3));
    const again = client(emu, dir);
    const resumed = await read(again.client);
    expect(resumed.rows).toEqual(whole.rows);
    expect(resumed.split).toEqual(whole.split);
    expect(again.events.map((e) => e.type)).toEqual(['miss', 'resumed', 'stored']);
  });
});

describe('a checkpoint that no longer holds is not used', () => {
  test('the service changed its data (seed) behind the same address: split again, the new rows', async () => {
    const emu1 = await emulator({ seed: 1 });
    const port = emu1.port;
    const dir = tempDir();
    const old = await read(client(emu1).client);
    await read(client(emu1, dir).client, Math.round(old.rows.length * 0.6));
    expect(files(dir).length).toBeGreaterThan(1);
    await emu1.close();

    const emu2 = await emulator({ seed: 2, port });
    const fresh = await read(client(emu2).client);
    expect(fresh.rows).not.toEqual(old.rows);
    const again = client(emu2, dir);
    const resumed = await read(again.client);
    expect(resumed.rows).toEqual(fresh.rows);
    const types = again.events.map((e) => e.type);
    expect(types).toContain('checkpoint-unusable');
    expect(types).not.toContain('resumed');
    expect(files(dir).length).toBe(1);
  });

  test('another row cap (the whole list capped at another total): split again, correct rows', async () => {
    const emu1 = await emulator();
    const port = emu1.port;
    const dir = tempDir();
    const first = await read(client(emu1).client);
    await read(client(emu1, dir).client, Math.round(first.rows.length * 0.5));
    await emu1.close();

    const emu2 = await emulator({ port, rowCap: 1000 });
    const again = client(emu2, dir);
    const resumed = await read(again.client);
    expect(resumed.rows).toEqual(first.rows);
    const unusable = again.events.find((e) => e.type === 'checkpoint-unusable');
    expect(unusable).toMatchObject({
      reason: expect.stringMatching(/capped total is 1000, the checkpoint's 1420/),
    });
    expect(resumed.split!.cappedTotal).toBe(1000);
  });

  test("a finished part's entry cut short: that part is read from the service, the rows are right", async () => {
    const emu = await emulator();
    const dir = tempDir();
    const whole = await read(client(emu).client);
    await read(client(emu, dir).client, Math.round(whole.rows.length * 0.8));
    const { truncate } = await import('node:fs/promises');
    const { statSync } = await import('node:fs');
    // Every part entry (the plan is the smallest file) loses its last bytes.
    const sized = files(dir)
      .map((n) => join(dir, 'entries', n))
      .map((p) => ({ p, size: statSync(p).size }))
      .sort((a, b) => a.size - b.size);
    for (const { p, size } of sized.slice(1)) await truncate(p, size - 10);
    const again = client(emu, dir);
    const resumed = await read(again.client);
    expect(resumed.rows).toEqual(whole.rows);
    expect(again.events.map((e) => e.type)).toContain('checkpoint-unusable');
  });
});
