/**
 * The CLI's result cache (on by default): `dqs query` / `dqs export` run twice against one service, the
 * second run checks with two requests and writes the same bytes; `--no-cache`, `--refresh`, two processes
 * filling one entry at once, and `dqs cache list | prune | clear`.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../src/emulator/index.js';
import { cleanEnv, ensureBuilt, finishCli, ROOT, startCli } from './cli-helpers.js';

const KEY = 'cli-cache-key-51c0';
const DATASET = 'store_locations';
const TICKERS = ['--ticker', 'nasdaq:aapl', '--ticker', 'lse:tsco'];
/**
 * Each test runs several CLI processes one after another (~0.5 s each on a quiet machine, 3-5 s with the
 * machine loaded by parallel suites): the default 30 s is too tight for the longest.
 */
const CLI_TIMEOUT = 120_000;

let work: string;
let cacheHome: string;
let emulator: Emulator;

beforeAll(async () => {
  ensureBuilt();
  work = await mkdtemp(join(tmpdir(), 'dqs-cli-cache-'));
  cacheHome = join(work, 'cache-home');
  emulator = await startEmulator({ apiKey: KEY });
}, 120_000);

afterAll(async () => {
  await emulator?.close();
  await rm(work, { recursive: true, force: true });
});

function dqs(args: readonly string[]) {
  return finishCli(startCli(args, { cwd: work, env: { XDG_CACHE_HOME: cacheHome } }));
}

/** Each test starts with a cache of its own (cheaper than a `dqs cache clear` process). */
let tests = 0;
function freshCache(): void {
  cacheHome = join(work, `cache-home-${++tests}`);
}

function conn(): string[] {
  return ['--base-url', emulator.url, '--api-key', KEY];
}

/**
 * Runs the command and returns it with every request the service saw meanwhile: the query's and the
 * unknown-ticker check's (`GET /datasets/?ticker=`, issue 15), which a validated hit answers from its
 * entry.
 */
async function counted(args: readonly string[]) {
  const before = emulator.requests.length;
  const run = await dqs(args);
  const seen = emulator.requests.slice(before);
  const requests = seen.map((r) => r.method);
  const tickerChecks = seen.filter((r) => r.method === 'GET' && r.query.ticker !== undefined).length;
  return { ...run, requests, tickerChecks };
}

async function entries(): Promise<string[]> {
  return (await readdir(join(cacheHome, 'dqs-client', 'entries')).catch(() => [] as string[])).filter((n) =>
    n.endsWith('.dqsc'),
  );
}

describe('dqs query with the cache', () => {
  it(
    'a second run makes two requests and writes the same bytes; --no-cache and --refresh read it all',
    async () => {
      freshCache();
      const out = (n: number) => join(work, `q${n}.csv`);
      const first = await counted([
        'query',
        DATASET,
        ...TICKERS,
        '--page-size',
        '100',
        '--out',
        out(1),
        ...conn(),
      ]);
      expect(first.code, first.stderr).toBe(0);
      expect(first.requests.length).toBeGreaterThan(5);
      expect(first.tickerChecks).toBe(2);
      expect(await entries()).toHaveLength(1);

      const second = await counted([
        'query',
        DATASET,
        ...TICKERS,
        '--page-size',
        '100',
        '--out',
        out(2),
        ...conn(),
      ]);
      expect(second.code, second.stderr).toBe(0);
      // All it asks: the POST and the one-row page; the tickers' check is the entry's.
      expect(second.requests).toEqual(['POST', 'GET']);
      expect(second.stderr).toMatch(/from the local cache \(fetched .* ago, unchanged on the service\)/);
      expect((await readFile(out(2))).equals(await readFile(out(1)))).toBe(true);

      const bypass = await counted([
        'query',
        DATASET,
        ...TICKERS,
        '--page-size',
        '100',
        '--out',
        out(3),
        '--no-cache',
        ...conn(),
      ]);
      expect(bypass.code, bypass.stderr).toBe(0);
      expect(bypass.requests.length).toBe(first.requests.length);
      expect(bypass.stderr).not.toMatch(/local cache/);
      expect((await readFile(out(3))).equals(await readFile(out(1)))).toBe(true);

      const refresh = await counted([
        'query',
        DATASET,
        ...TICKERS,
        '--page-size',
        '100',
        '--out',
        out(4),
        '--refresh',
        ...conn(),
      ]);
      expect(refresh.code, refresh.stderr).toBe(0);
      expect(refresh.requests.length).toBe(first.requests.length);
      expect((await readFile(out(4))).equals(await readFile(out(1)))).toBe(true);
      expect(await entries()).toHaveLength(1);

      // Arrow IPC from the cache: the same bytes too (dictionaries included).
      const arrowArgs = ['query', DATASET, ...TICKERS, '--page-size', '100', ...conn(), '--out'];
      await dqs([...arrowArgs, join(work, 'a1.arrow'), '--no-cache']);
      const arrow = await counted([...arrowArgs, join(work, 'a2.arrow')]);
      expect(arrow.requests).toEqual(['POST', 'GET']);
      const a1 = await readFile(join(work, 'a1.arrow'));
      expect((await readFile(join(work, 'a2.arrow'))).equals(a1)).toBe(true);

      const both = await dqs([
        'query',
        DATASET,
        ...TICKERS,
        '--out',
        out(5),
        '--no-cache',
        '--refresh',
        ...conn(),
      ]);
      expect(both.code).toBe(2);
      expect(both.stderr).toMatch(/--no-cache .* --refresh .*use one/);
    },
    CLI_TIMEOUT,
  );

  it(
    'a re-run warns about an unknown ticker as the first run did, and --strict-tickers still refuses it',
    async () => {
      freshCache();
      const unknown = 'nyse:ibm'; // no dataset of the emulator carries it
      const args = (out: string) => [
        'query',
        DATASET,
        '--ticker',
        'nasdaq:aapl',
        '--ticker',
        unknown,
        '--out',
        join(work, out),
        ...conn(),
      ];
      const warning = new RegExp(
        `^dqs: warning: dataset ${DATASET} has no data for the ticker ${unknown} `,
        'm',
      );
      const first = await counted(args('u1.csv'));
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr).toMatch(warning);
      expect(first.tickerChecks).toBe(2);

      const again = await counted(args('u2.csv'));
      expect(again.code, again.stderr).toBe(0);
      expect(again.requests).toEqual(['POST', 'GET']);
      expect(again.stderr).toMatch(warning);
      expect(again.stderr).toMatch(/from the local cache/);
      expect((await readFile(join(work, 'u2.csv'))).equals(await readFile(join(work, 'u1.csv')))).toBe(true);

      const strict = await counted([...args('u3.csv'), '--strict-tickers']);
      expect(strict.code).toBe(2);
      expect(strict.requests.length).toBeLessThanOrEqual(2);
      expect(strict.stderr).toContain(`no data for the ticker ${unknown} (GET /datasets/?ticker=`);
      expect(strict.stderr).toContain('(--strict-tickers)');
      expect((await readdir(work)).filter((n) => n.includes('u3'))).toEqual([]);
    },
    CLI_TIMEOUT,
  );

  it(
    'two processes filling one entry at once both write the whole result, and one entry remains',
    async () => {
      freshCache();
      const runs = await Promise.all(
        [1, 2, 3].map((n) =>
          dqs([
            'query',
            DATASET,
            ...TICKERS,
            '--page-size',
            '50',
            '--out',
            join(work, `c${n}.csv`),
            ...conn(),
          ]),
        ),
      );
      for (const run of runs) expect(run.code, run.stderr).toBe(0);
      const c1 = await readFile(join(work, 'c1.csv'));
      for (const n of [2, 3]) expect((await readFile(join(work, `c${n}.csv`))).equals(c1)).toBe(true);
      expect(await entries()).toHaveLength(1);
      expect(await readdir(join(cacheHome, 'dqs-client', 'entries'))).toHaveLength(1);
      const again = await counted([
        'query',
        DATASET,
        ...TICKERS,
        '--page-size',
        '50',
        '--out',
        join(work, 'c4.csv'),
        ...conn(),
      ]);
      expect(again.requests).toEqual(['POST', 'GET']);
      expect((await readFile(join(work, 'c4.csv'))).equals(c1)).toBe(true);
    },
    CLI_TIMEOUT,
  );

  it(
    'the embedded emulator is never cached',
    async () => {
      freshCache();
      const run = await dqs(['query', DATASET, ...TICKERS, '--out', join(work, 'e.csv')]);
      expect(run.code, run.stderr).toBe(0);
      expect(await entries()).toEqual([]);
    },
    CLI_TIMEOUT,
  );
});

describe('the summary says what the cache did', () => {
  const args = (out: string) => ['query', DATASET, ...TICKERS, '--out', join(work, out), ...conn()];
  const dirOf = () => join(cacheHome, 'dqs-client');

  it(
    'an entry that fails its check: read again, and the summary says why, never "unchanged on the service"',
    async () => {
      // Issue 28: the summary said "from the local cache (... unchanged on the service)" after a refetch.
      freshCache();
      expect((await dqs(args('b1.csv'))).code).toBe(0);
      const path = join(dirOf(), 'entries', (await entries())[0]!);
      const bytes = await readFile(path);
      bytes[bytes.length - 40]! ^= 0xff;
      await writeFile(path, bytes);
      const again = await dqs(args('b2.csv'));
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toMatch(
        /; the cached entry was unusable \(checksum mismatch \(a cut or altered entry\)\): read from the service\n/,
      );
      expect(again.stderr).not.toMatch(/unchanged on the service/);
      expect((await readFile(join(work, 'b2.csv'))).equals(await readFile(join(work, 'b1.csv')))).toBe(true);
      expect((await dqs(args('b3.csv'))).stderr).toMatch(/unchanged on the service/); // stored anew
    },
    CLI_TIMEOUT,
  );

  it(
    'a cache directory others can write: one warning with the fix, the summary says the cache was not used',
    async () => {
      freshCache();
      expect((await dqs(args('w1.csv'))).code).toBe(0);
      await chmod(dirOf(), 0o777);
      const run = await counted(args('w2.csv'));
      expect(run.code, run.stderr).toBe(0);
      expect(run.requests.length).toBeGreaterThan(2); // the pages, not the entry
      expect(run.stderr).toContain(
        `dqs: warning: not using the local result cache: ${dirOf()} is writable by group and others (mode 0777); make it yours alone: chmod 700 ${dirOf()}\n`,
      );
      expect(run.stderr).toMatch(
        /; the local cache was not used \(not safe to use, see the warning above\)\n/,
      );
      // dqs export: a query per partition, one warning.
      const exported = await dqs([
        'export',
        DATASET,
        ...TICKERS,
        '--out-dir',
        join(work, 'w-lake'),
        ...conn(),
      ]);
      expect(exported.code, exported.stderr).toBe(0);
      expect(exported.stderr.match(/warning: not using the local result cache/g)).toHaveLength(1);
      expect(exported.stderr).toMatch(/the local cache not used for 2 \(not safe to use/);
      const list = await dqs(['cache', 'list']);
      expect(list.code, list.stderr).toBe(0);
      expect(list.stderr).toContain(`do not use this cache: ${dirOf()} is writable by group and others`);
    },
    CLI_TIMEOUT,
  );

  it(
    'a FIFO at the secret costs no wait: the run ends with a warning',
    async () => {
      // Issue 28: the CLI hung for good, deaf to SIGTERM and a second Ctrl-C.
      freshCache();
      expect((await dqs(args('f1.csv'))).code).toBe(0);
      await rm(join(dirOf(), 'secret'));
      execFileSync('mkfifo', [join(dirOf(), 'secret')]);
      const started = performance.now();
      const child = startCli(args('f2.csv'), { cwd: work, env: { XDG_CACHE_HOME: cacheHome } });
      const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const run = await finishCli(child);
      clearTimeout(killer);
      expect(run.code, run.stderr).toBe(0);
      expect(performance.now() - started).toBeLessThan(15_000);
      expect(run.stderr).toMatch(/warning: not using the local result cache: .*secret is a FIFO; remove it/);
    },
    CLI_TIMEOUT,
  );

  it(
    'a result that cannot be stored (a file size limit: EFBIG) says so, on every run',
    async () => {
      freshCache();
      for (let n = 0; n < 2; n++) {
        const main = join(ROOT, 'dist', 'cli', 'main.js');
        const argv = [process.execPath, main, 'query', DATASET, ...TICKERS, ...conn(), '--out', '-'];
        const quoted = argv.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
        // 512-byte blocks (POSIX sh): the entry exceeds 4 KiB; stdout is a pipe, which the limit leaves alone.
        const child = spawn('/bin/sh', ['-c', `ulimit -f 8; exec ${quoted}`], {
          cwd: work,
          env: cleanEnv({ XDG_CACHE_HOME: cacheHome }),
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        const run = await finishCli(child);
        expect(run.code, run.stderr).toBe(0);
        expect(run.stderr).toMatch(
          /; not stored in the local cache \(the file is larger than allowed .*\(EFBIG\)\)\n/,
        );
        expect(await entries()).toEqual([]);
      }
    },
    CLI_TIMEOUT,
  );
});

describe('dqs export and dqs cache', () => {
  it(
    'export --overwrite a second time reads every partition from the cache',
    async () => {
      freshCache();
      const outDir = join(work, 'lake');
      const first = await counted(['export', DATASET, ...TICKERS, '--out-dir', outDir, ...conn()]);
      expect(first.code, first.stderr).toBe(0);
      const file = join(outDir, `dataset=${DATASET}`, 'ticker=nasdaq%3Aaapl', 'part-0.parquet');
      const before = await readFile(file);
      const second = await counted([
        'export',
        DATASET,
        ...TICKERS,
        '--out-dir',
        outDir,
        '--overwrite',
        ...conn(),
      ]);
      expect(second.code, second.stderr).toBe(0);
      // No page read: the two GETs besides the validation's are the ticker checks `dqs export` makes
      // before writing any partition (one per listed ticker, as `dqs query` without a cache entry).
      expect(second.requests.sort()).toEqual(['GET', 'GET', 'GET', 'GET', 'POST', 'POST']);
      expect(second.tickerChecks).toBe(2);
      expect(second.stderr).toMatch(/2 of 2 results from the local cache/);
      expect((await readFile(file)).equals(before)).toBe(true);
    },
    CLI_TIMEOUT,
  );

  it(
    'list shows the entries without the key; prune removes broken ones; clear removes all',
    async () => {
      freshCache();
      await dqs(['query', DATASET, '--ticker', 'nasdaq:aapl', '--out', join(work, 'l1.csv'), ...conn()]);
      await dqs(['query', DATASET, '--ticker', 'lse:tsco', '--out', join(work, 'l2.csv'), ...conn()]);
      const list = await dqs(['cache', 'list', '--json']);
      expect(list.code, list.stderr).toBe(0);
      const listed = JSON.parse(list.stdout.toString()) as {
        dir: string;
        entries: { dataset: string; body: unknown; rows: number; problem: string | null }[];
      };
      expect(listed.dir).toBe(join(cacheHome, 'dqs-client'));
      expect(listed.entries.map((e) => e.body)).toEqual([
        { tickers: ['nasdaq:aapl'] },
        { tickers: ['lse:tsco'] },
      ]);
      expect(list.stdout.toString()).not.toContain(KEY);
      // Damage one entry: prune finds it by its checksum.
      const names = await entries();
      const path = join(cacheHome, 'dqs-client', 'entries', names[0]!);
      const bytes = await readFile(path);
      bytes[bytes.length - 40]! ^= 0xff;
      await writeFile(path, bytes);
      const prune = await dqs(['cache', 'prune', '--json']);
      expect(JSON.parse(prune.stdout.toString())).toMatchObject({ corrupt: 1, evicted: 0 });
      expect(await entries()).toHaveLength(1);
      const tight = await dqs(['cache', 'prune', '--max-bytes', '1', '--json']);
      expect(JSON.parse(tight.stdout.toString())).toMatchObject({ evicted: 1 });
      await writeFile(path, bytes); // an entry again (a damaged one), for clear to remove
      const clear = await dqs(['cache', 'clear', '--json']);
      expect(JSON.parse(clear.stdout.toString())).toMatchObject({ removed: 1 });
      expect(await entries()).toEqual([]);
    },
    CLI_TIMEOUT,
  );
});
