/**
 * Tickers the dataset does not carry. Regression: `dqs query job_listings --ticker nyse:ibm` wrote 0 rows
 * and exited 0, and `--ticker nasdaq:aapl --ticker nyse:ibm` silently gave Apple's rows alone (the
 * service answers a ticker it lacks with no rows). The CLI now warns naming them (`--strict-tickers`:
 * exit 2), and the library does the same on request (`checkTickers`).
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryTotal } from '../src/emulator/index.js';
import { InvalidArgumentError, unknownTickers } from '../src/index.js';
import { ensureBuilt, finishCli, startCli } from './cli-helpers.js';
import { setup } from './helpers.js';

const DATASET = 'job_listings';
const AAPL = 'nasdaq:aapl';
const IBM = 'nyse:ibm'; // no dataset of the emulator carries it

function tickerChecks(emu: Awaited<ReturnType<typeof setup>>['emu']): string[] {
  return emu.requests
    .filter((r) => r.method === 'GET' && r.query.ticker !== undefined)
    .map((r) => r.query.ticker!);
}

function posts(emu: Awaited<ReturnType<typeof setup>>['emu']): number {
  return emu.requests.filter((r) => r.method === 'POST').length;
}

describe('library: checkTickers', () => {
  it('unknownTickers names the tickers the dataset lacks, one request per distinct ticker', async () => {
    const { emu, client } = await setup();
    expect(await unknownTickers(client, DATASET, [AAPL, IBM, AAPL, 'nyse:zzzz'])).toEqual([IBM, 'nyse:zzzz']);
    expect(tickerChecks(emu).sort()).toEqual([AAPL, IBM, 'nyse:zzzz'].sort());
    // A malformed ticker is left to the query's validation, which names it as body.tickers[i].
    expect(await unknownTickers(client, DATASET, ['NASDAQ:AAPL'])).toEqual([]);
    await expect(
      client.query(DATASET, { tickers: [AAPL, 'NASDAQ:AAPL'] }, { checkTickers: 'error' }),
    ).rejects.toThrow(/Invalid `body\.tickers\[1\]`/);
    expect(await unknownTickers(client, 'store_locations', ['nyse:wmt'])).toEqual([]);
  });

  it("'error' refuses the query before creating it, naming the ticker", async () => {
    const { emu, client } = await setup();
    const failure = await client
      .query(DATASET, { tickers: [AAPL, IBM] }, { checkTickers: 'error' })
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(InvalidArgumentError);
    expect((failure as InvalidArgumentError).argument).toBe('tickers');
    expect((failure as Error).message).toContain(`no data for the ticker ${IBM}`);
    expect((failure as Error).message).not.toContain(AAPL);
    expect(posts(emu)).toBe(0);
  });

  it("'warn' emits a DQS_UNKNOWN_TICKERS process warning and reads every row of the others", async () => {
    const { client } = await setup();
    const warnings: Error[] = [];
    const listener = (w: Error) => warnings.push(w);
    process.on('warning', listener);
    try {
      const result = await client.query(DATASET, { tickers: [IBM, AAPL] }, { checkTickers: 'warn' });
      expect(result.total).toBe(queryTotal(DATASET, { tickers: [AAPL] }));
      await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
    } finally {
      process.off('warning', listener);
    }
    expect(warnings.map((w) => [(w as Error & { code?: string }).code, w.message])).toEqual([
      ['DQS_UNKNOWN_TICKERS', expect.stringContaining(`no data for the ticker ${IBM}`)],
    ]);
  });

  it('off by default and for known tickers: no request, no warning', async () => {
    const { emu, client } = await setup();
    await client.query(DATASET, { tickers: [IBM] });
    expect(tickerChecks(emu)).toEqual([]);
    await client.query(DATASET, { tickers: [AAPL] }, { checkTickers: 'error' });
    expect(tickerChecks(emu)).toEqual([AAPL]);
    await expect(client.query(DATASET, {}, { checkTickers: 'maybe' as 'warn' })).rejects.toThrow(
      /Expected `checkTickers` to be true, false, 'warn' or 'error', got "maybe" \(string\)/,
    );
  });
});

describe('CLI: dqs query warns about tickers the dataset lacks; --strict-tickers refuses', () => {
  let work: string;
  beforeAll(() => {
    ensureBuilt();
    work = mkdtempSync(join(tmpdir(), 'dqs-tickers-'));
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('a mistyped ticker among good ones: a warning naming it, the good rows written, exit 0', async () => {
    const { emu } = await setup();
    const env = { DQS_BASE_URL: emu.url, DQS_API_KEY: emu.apiKey };
    const run = await finishCli(
      startCli(['query', DATASET, '--ticker', AAPL, '--ticker', IBM, '--out', 'jobs.csv', '--no-cache'], {
        cwd: work,
        env,
      }),
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(
      new RegExp(
        `^dqs: warning: dataset ${DATASET} has no data for the ticker ${IBM} .*--strict-tickers`,
        'm',
      ),
    );
    expect(run.stderr).toContain(
      `wrote ${queryTotal(DATASET, { tickers: [AAPL] }).toLocaleString('en-US')} rows`,
    );

    const strict = await finishCli(
      startCli(['query', DATASET, '--ticker', IBM, '--out', 'ibm.csv', '--strict-tickers', '--no-cache'], {
        cwd: work,
        env,
      }),
    );
    expect(strict.code).toBe(2);
    expect(strict.stderr).toContain(`no data for the ticker ${IBM}`);
    expect(readdirSync(work)).toEqual(['jobs.csv']);
  });
  // `dqs export` wrote a 0-row partition for such a ticker without a word, unlike `dqs query`.
  it('dqs export: a warning naming the unknown ticker, exit 0; --strict-tickers exits 2 before writing', async () => {
    const { emu } = await setup();
    const env = { DQS_BASE_URL: emu.url, DQS_API_KEY: emu.apiKey };
    const run = await finishCli(
      startCli(['export', DATASET, '--ticker', AAPL, '--ticker', IBM, '--out-dir', 'lake', '--no-cache'], {
        cwd: work,
        env,
      }),
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(
      new RegExp(
        `^dqs: warning: dataset ${DATASET} has no data for the ticker ${IBM} .*: its partition will have no rows; --strict-tickers`,
        'm',
      ),
    );
    const strict = await finishCli(
      startCli(
        ['export', DATASET, '--ticker', IBM, '--out-dir', 'strict-lake', '--strict-tickers', '--no-cache'],
        {
          cwd: work,
          env,
        },
      ),
    );
    expect(strict.code).toBe(2);
    expect(strict.stderr).toContain(`no data for the ticker ${IBM}`);
    // The directory is made before connecting (a bad --out-dir fails first), but no partition is written.
    expect(readdirSync(join(work, 'strict-lake'), { recursive: true })).toEqual([]);
  });
});
