/**
 * `dqs query --split-truncated` (issue #32), the built CLI against an emulator whose row cap is about a
 * third of the list's rows: every row in one file, byte-identical across runs (from the service, and from
 * the cache), and the warnings for what cannot be split.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, queryInfo, startEmulator } from '../src/emulator/index.js';
import { ensureBuilt, finishCli, MAIN, startCli } from './cli-helpers.js';

const KEY = 'cli-split-key-4b1e';
const DATASET = 'store_locations';
/** 8 tickers of store_locations, 2,115 rows in all; nyse:bac alone has 420. */
const TICKERS = [
  'nasdaq:aapl',
  'nasdaq:amzn',
  'nasdaq:cost',
  'nasdaq:sbux',
  'nasdaq:tsla',
  'nyse:bac',
  'nyse:cmg',
  'nyse:dis',
];
const ALL = TICKERS.reduce((n, t) => n + queryInfo(DATASET, { tickers: [t] }).total, 0);
/** About a third of the list's rows. */
const CAP = 700;

let work: string;
let emulator: Emulator;

beforeAll(async () => {
  ensureBuilt();
  work = await mkdtemp(join(tmpdir(), 'dqs-cli-split-'));
  emulator = await startEmulator({ apiKey: KEY, rowCap: CAP });
}, 120_000);

afterAll(async () => {
  await emulator?.close();
  await rm(work, { recursive: true, force: true });
});

function dqs(args: readonly string[]) {
  return finishCli(
    startCli([...args, '--base-url', emulator.url, '--api-key', KEY], {
      cwd: work,
      // A cache of this file's own: the second run must be able to hit what the first stored.
      env: { XDG_CACHE_HOME: join(work, 'cache-home') },
    }),
  );
}

const tickerArgs = (tickers: readonly string[]) => tickers.flatMap((t) => ['--ticker', t]);

describe('dqs query --split-truncated', () => {
  it('writes every row of the list in parts, byte-identical across runs, from the service and the cache', async () => {
    const ALL_ROWS = ALL;
    expect(ALL_ROWS).toBeGreaterThan(2.9 * CAP);
    const args = ['query', DATASET, ...tickerArgs(TICKERS), '--split-truncated', '--json'];
    const first = await dqs([...args, '--out', 'a.arrow']);
    expect(first.code).toBe(0);
    expect(first.stderr).not.toMatch(/warning|TRUNCATED/);
    const summary = JSON.parse(first.stdout.toString()) as {
      rows: number;
      truncated: boolean;
      parts: { tickers: string[]; total: number; truncated: boolean }[];
    };
    expect(summary.rows).toBe(ALL_ROWS);
    expect(summary.truncated).toBe(false);
    expect(summary.parts.flatMap((p) => p.tickers)).toEqual(TICKERS);
    expect(summary.parts.length).toBeGreaterThanOrEqual(3);

    const second = await dqs([...args, '--out', 'b.arrow']);
    expect(second.code).toBe(0);
    expect(second.stderr).toMatch(/complete \(read in \d parts of 2,115 rows in all\); from the local cache/);
    const uncached = await dqs([...args, '--out', 'c.arrow', '--no-cache']);
    expect(uncached.code).toBe(0);
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((n) => readFile(join(work, `${n}.arrow`))));
    expect(b!.equals(a!)).toBe(true);
    expect(c!.equals(a!)).toBe(true);
    const table = tableFromIPC(a!);
    expect(table.numRows).toBe(ALL_ROWS);
    // Part by part in list order: the ticker column changes in the order of the parts' tickers.
    const seen = [...new Set(table.getChild('ticker')!.toArray() as string[])];
    expect(seen).toEqual(summary.parts.flatMap((p) => [...p.tickers].sort()));

    // Without the option: the cut file, and the way to get the rest.
    const cut = await dqs(['query', DATASET, ...tickerArgs(TICKERS), '--out', 'cut.arrow', '--no-cache']);
    expect(cut.code).toBe(0);
    expect(cut.stderr).toMatch(
      /TRUNCATED at the service's row cap \(700 rows\): --split-truncated reads every row/,
    );
  });

  it('a ticker alone over the cap: warned, its part the only truncated one', async () => {
    // nyse:bac has 420 rows: over a cap of 400, which every other ticker of the list fits.
    const low = await startEmulator({ apiKey: KEY, rowCap: 400 });
    try {
      const over = await finishCli(
        startCli(
          [
            'query',
            DATASET,
            ...tickerArgs(['nyse:dis', 'nyse:bac', 'nasdaq:tsla']),
            '--split-truncated',
            '--no-cache',
            '--out',
            'over.arrow',
            '--base-url',
            low.url,
            '--api-key',
            KEY,
          ],
          { cwd: work },
        ),
      );
      expect(over.code).toBe(0);
      expect(over.stderr).toMatch(
        /warning: nyse:bac alone passes the row cap of store_locations \(400 rows\): its part is truncated, the only truncated part of 3/,
      );
      expect(over.stderr).toMatch(/TRUNCATED \(read in 3 parts of 595 rows in all\): nyse:bac alone passes/);
      expect(tableFromIPC(await readFile(join(work, 'over.arrow'))).numRows).toBe(46 + 400 + 149);
    } finally {
      await low.close();
    }
  });

  it('a query without tickers cannot be split: the warning names --ticker', async () => {
    const run = await dqs(['query', DATASET, '--split-truncated', '--no-cache', '--out', 'all.arrow']);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(
      /warning: the result of store_locations is truncated at 700 rows and --split-truncated cannot split it: the service filters a query by tickers only, and this query names none; pass --ticker or --tickers-file/,
    );
    expect(tableFromIPC(await readFile(join(work, 'all.arrow'))).numRows).toBe(CAP);
  });

  it('on a terminal, one progress bar for the whole split result, not one per part', async () => {
    // `script` runs the CLI on a pseudo-terminal (its bar is drawn only on a TTY) and records what it drew.
    const quote = (a: string) => `'${a.replaceAll("'", "'\\''")}'`;
    const args = [
      process.execPath,
      MAIN,
      'query',
      DATASET,
      ...tickerArgs(TICKERS),
      '--split-truncated',
      '--no-cache',
      '--page-size',
      '50',
      '--out',
      'bar.arrow',
      '--base-url',
      emulator.url,
      '--api-key',
      KEY,
    ];
    const child = spawn('script', ['-qfec', args.map(quote).join(' '), '/dev/null'], {
      cwd: work,
      env: { ...process.env, COLUMNS: '160', TERM: 'xterm' },
    });
    const run = await finishCli(child);
    expect(run.code, run.stderr + run.stdout.toString()).toBe(0);
    // Every frame of the bar: rows so far / the total it counts to.
    const frames = [...run.stdout.toString().matchAll(/([\d,]+)\/([\d,]+) rows/g)].map((m) => ({
      rows: Number(m[1]!.replaceAll(',', '')),
      total: Number(m[2]!.replaceAll(',', '')),
    }));
    expect(frames.length).toBeGreaterThan(0);
    // One total: the split result's (all parts), never a part's own or the truncated whole's cap.
    expect(new Set(frames.map((f) => f.total))).toEqual(new Set([ALL]));
    // And it only goes forward: a bar per part would start again from 0.
    for (let i = 1; i < frames.length; i++)
      expect(frames[i]!.rows).toBeGreaterThanOrEqual(frames[i - 1]!.rows);
    expect(tableFromIPC(await readFile(join(work, 'bar.arrow'))).numRows).toBe(ALL);
  }, 60_000);
});
