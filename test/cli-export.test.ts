/**
 * `dqs export`, the built executable run as a child process against the emulator started here: the
 * partitioned dataset read back by DuckDB, re-runs that skip finished partitions, Ctrl-C mid-export, and
 * the usage and local-file exit codes.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPANIES, type Emulator, queryTotal, startEmulator } from '../src/emulator/index.js';
import { duck, ensureBuilt, finishCli, ROOT, startCli } from './cli-helpers.js';

const KEY = 'export-cli-key-51d2';
const DATASET = 'web_traffic';
const TICKERS = ['nasdaq:aapl', 'nyse:brk.b', 'lse:tsco', 'tyo:7203', 'private:aldi'];
const expected = Object.fromEntries(TICKERS.map((t) => [t, queryTotal(DATASET, { tickers: [t] })]));

function start(args: readonly string[]): ChildProcess {
  return startCli(args, { cwd: work });
}

/** `finishCli`, with stdout as text (every command here prints JSON or nothing). */
async function finish(child: ChildProcess) {
  const run = await finishCli(child);
  return { ...run, stdout: run.stdout.toString('utf8') };
}

const dqs = (args: readonly string[]) => finish(start(args));

function conn(emu: Emulator): string[] {
  return ['--base-url', emu.url, '--api-key', KEY];
}

async function files(dir: string): Promise<string[]> {
  if (!existsSync(dir)) return [];
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

/** Rows per ticker as DuckDB reads the dataset directory, glob as docs/cli.md shows it. */
async function countsPerTicker(dir: string): Promise<Record<string, number>> {
  const rows = (await duck(
    `SELECT ticker, count(*)::INTEGER AS n FROM read_parquet('${dir}/dataset=${DATASET}/*/*.parquet', hive_partitioning = true) GROUP BY ticker`,
  )) as { ticker: string; n: number }[];
  return Object.fromEntries(rows.map((r) => [r.ticker, r.n]));
}

let work: string;
let emulator: Emulator;
/** Slow pages, so an interrupt lands mid-export. */
let slow: Emulator;

beforeAll(async () => {
  // Rebuilt when the built CLI predates the export command (`npm test` builds in pretest).
  ensureBuilt(join(ROOT, 'dist', 'cli', 'commands', 'export.js'));
  work = await mkdtemp(join(tmpdir(), 'dqs-export-cli-'));
  emulator = await startEmulator({ apiKey: KEY });
  slow = await startEmulator({
    apiKey: KEY,
    fault: (r) => (r.method === 'GET' && r.query.limit === '200' ? { kind: 'delay', ms: 40 } : undefined),
  });
}, 120_000);

afterAll(async () => {
  await emulator?.close();
  await slow?.close();
  await rm(work, { recursive: true, force: true });
});

describe('dqs export', () => {
  it('writes one partition per ticker that DuckDB reads as one table; a re-run skips them; --json', async () => {
    const out = join(work, 'lake');
    const list = join(work, 'tickers.txt');
    await writeFile(
      list,
      `# web traffic\n${TICKERS.slice(0, 3).join('\n')}\n${TICKERS.slice(3).join(', ')}\n`,
    );
    const run = await dqs([
      'export',
      DATASET,
      '--tickers-file',
      list,
      '--out-dir',
      out,
      '--page-size',
      '500',
      '--concurrency',
      '3',
      '--json',
      ...conn(emulator),
    ]);
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout);
    const total = Object.values(expected).reduce((a, b) => a + b, 0);
    expect(summary).toMatchObject({
      dataset: DATASET,
      partitions: 5,
      written: 5,
      skipped: 0,
      rows: total,
      truncated: [],
    });
    expect(summary.root).toBe(join(out, 'dataset=web_traffic'));
    expect(summary.files.map((f: { ticker: string; rows: number }) => [f.ticker, f.rows])).toEqual(
      TICKERS.map((t) => [t, expected[t]]),
    );
    expect(run.stderr).toMatch(
      new RegExp(
        `^dqs: exported web_traffic to .*dataset=web_traffic: 5 partitions written \\(${total.toLocaleString('en-US')} rows, .*; 1 with no rows\\) in .*s$`,
        'm',
      ),
    );
    expect(await files(out)).toContain('dataset=web_traffic/ticker=nyse%3Abrk.b/part-0.parquet');
    const counts = await countsPerTicker(out);
    expect(counts).toEqual(
      Object.fromEntries(TICKERS.filter((t) => expected[t]! > 0).map((t) => [t, expected[t]])),
    );

    // Again: nothing to do. Then one partition removed: only it is written.
    const rerun = ['export', DATASET, '--tickers-file', list, '--out-dir', out, '--json', ...conn(emulator)];
    const again = await dqs(rerun);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ written: 0, skipped: 5, rows: 0 });
    expect(again.stderr).toMatch(
      /0 partitions written \(0 rows, 0 B\), 5 skipped \(finished by an earlier run\)/,
    );
    await rm(join(out, 'dataset=web_traffic', 'ticker=lse%3Atsco'), { recursive: true });
    const resumed = await dqs(rerun);
    expect(resumed.code, resumed.stderr).toBe(0);
    const files_ = JSON.parse(resumed.stdout).files as { ticker: string; status: string }[];
    expect(files_.filter((f) => f.status === 'written').map((f) => f.ticker)).toEqual(['lse:tsco']);
    expect(await countsPerTicker(out)).toEqual(counts);
  });

  it('Ctrl-C: exit 130, finished partitions stay, no temporary file; the same command then finishes the rest', async () => {
    const out = join(work, 'interrupted');
    const args = [
      'export',
      DATASET,
      ...TICKERS.flatMap((t) => ['--ticker', t]),
      '--out-dir',
      out,
      '--page-size',
      '200',
    ];
    const child = start([...args, '--concurrency', '1', ...conn(slow)]);
    const done = finish(child);
    // Interrupt once the first partition is finished.
    const deadline = Date.now() + 20_000;
    while (!(await files(out)).some((f) => f.endsWith('.parquet')) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    child.kill('SIGINT');
    const run = await done;
    expect(run.code, run.stderr).toBe(130);
    expect(run.stderr).toMatch(
      /partitions? (is|are) finished in .*; run the same command again to export the rest/,
    );
    expect(run.stderr).toMatch(/^dqs export: interrupted \(SIGINT\)$/m);
    const left = await files(out);
    expect(left.filter((f) => !f.endsWith('/part-0.parquet'))).toEqual([]);
    const finished = left.length;
    expect(finished).toBeGreaterThanOrEqual(1);
    expect(finished).toBeLessThan(TICKERS.length);

    const rest = await dqs([...args, '--json', ...conn(emulator)]);
    expect(rest.code, rest.stderr).toBe(0);
    expect(JSON.parse(rest.stdout)).toMatchObject({ skipped: finished, written: TICKERS.length - finished });
    expect(Object.values(await countsPerTicker(out)).reduce((a, b) => a + b, 0)).toBe(
      Object.values(expected).reduce((a, b) => a + b, 0),
    );
  });

  it('usage errors (exit 2) before any request; an --out-dir that is a file is a local error (exit 7)', async () => {
    const before = emulator.requests.length;
    const cases: [string[], RegExp][] = [
      [['export', DATASET, '--ticker', 'nasdaq:aapl'], /missing --out-dir DIR/],
      [['export', DATASET, '--out-dir', 'x'], /missing tickers: --ticker T/],
      [
        ['export', DATASET, '--out-dir', 'x', '--ticker', 'AAPL'],
        /"AAPL" is not a ticker: expected `<market>:<identifier>`/,
      ],
      [
        ['export', DATASET, '--out-dir', 'x', '--all-tickers', '--ticker', 'nasdaq:aapl'],
        /--all-tickers exports every ticker/,
      ],
      [
        ['export', DATASET, '--out-dir', 'x', '--ticker', 'nasdaq:aapl', '--concurrency', '0'],
        /--concurrency to be an integer from 1 to 64/,
      ],
    ];
    for (const [args, message] of cases) {
      const run = await dqs([...args, ...conn(emulator)]);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(emulator.requests.length).toBe(before);
    const file = join(work, 'a-file');
    await writeFile(file, 'x');
    const local = await dqs([
      'export',
      DATASET,
      '--ticker',
      'nasdaq:aapl',
      '--out-dir',
      file,
      ...conn(emulator),
    ]);
    expect(local.code, local.stderr).toBe(7);
    expect(local.stderr).toMatch(/cannot use --out-dir .*a-file: it is a regular file, not a directory/);
  });

  it('--all-tickers exports every ticker the dataset lists', async () => {
    const out = join(work, 'all');
    const run = await dqs([
      'export',
      'store_locations',
      '--all-tickers',
      '--out-dir',
      out,
      '--concurrency',
      '4',
      '--json',
      ...conn(emulator),
    ]);
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout);
    // The emulator lists the companies that have stores.
    const listed = COMPANIES.filter((c) => queryTotal('store_locations', { tickers: [c.id] }) > 0);
    expect(summary.partitions).toBe(listed.length);
    expect(summary.rows).toBe(queryTotal('store_locations'));
  });
});
