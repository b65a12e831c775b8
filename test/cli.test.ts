/**
 * The built `dqs` executable, run as a child process the way users and scripts run it, against the
 * emulator started here (or its own embedded one). Outputs are read back by tools we did not write:
 * DuckDB for Parquet, Polars for Arrow IPC, apache-arrow for piped IPC, csv-parse for CSV.
 */
import { statSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { parse } from 'csv-parse/sync';
import pl from 'nodejs-polars';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, queryInfo, queryRows, startEmulator } from '../src/emulator/index.js';
import { DatasetClient } from '../src/index.js';
import { duck, ensureBuilt, finishCli, ROOT, startCli, startServe } from './cli-helpers.js';

const KEY = 'cli-test-key-7f3a9c';
/** A small dataset with every column type (string, ticker, number, date, boolean, datetime). */
const DATASET = 'store_locations';
/** Two tickers (483 rows), so the ticker column has more than one dictionary entry. */
const TICKERS = ['nasdaq:aapl', 'lse:tsco'];
/** Small pages, so every export spans several pages and batches. */
const PAGES = ['--page-size', '100'];
const BODY = { tickers: TICKERS };

function start(args: readonly string[], options: { env?: Record<string, string>; cwd?: string } = {}) {
  return startCli(args, { cwd: options.cwd ?? work, env: options.env });
}

const finish = finishCli;

function dqs(args: readonly string[], options: { env?: Record<string, string>; input?: string } = {}) {
  return finish(start(args, options), options.input);
}

/** Connection flags for the test emulator. */
function conn(emu: Emulator = emulator, key = KEY): string[] {
  return ['--base-url', emu.url, '--api-key', key];
}

/** Error output is one line, with no stack trace. */
function expectOneLine(stderr: string): void {
  expect(stderr.trim().split('\n')).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
}

let work: string;
let emulator: Emulator;
const expectedTotal = queryInfo(DATASET, BODY).total;

beforeAll(async () => {
  ensureBuilt();
  work = await mkdtemp(join(tmpdir(), 'dqs-cli-'));
  emulator = await startEmulator({ apiKey: KEY });
}, 120_000);

afterAll(async () => {
  await emulator?.close();
  await rm(work, { recursive: true, force: true });
});

describe('dqs: help, version, usage errors', () => {
  it('--version prints the package version; --help lists every command', async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const version = await dqs(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout.toString().trim()).toBe(pkg.version);
    const help = await dqs(['--help']);
    expect(help.code).toBe(0);
    for (const name of ['query', 'datasets', 'dataset', 'tickers', 'status', 'serve']) {
      expect(help.stdout.toString()).toMatch(new RegExp(`^  ${name} `, 'm'));
    }
  });

  it.concurrent.each(['query', 'datasets', 'dataset', 'tickers', 'status', 'serve'])(
    '`dqs %s --help` shows usage, options and an example',
    async (name) => {
      const run = await dqs([name, '--help']);
      expect(run.code).toBe(0);
      const text = run.stdout.toString();
      expect(text).toContain(`Usage: dqs ${name}`);
      expect(text).toMatch(/Examples?:\n {2}dqs /);
      expect(text).toContain('--quiet');
    },
  );

  it.concurrent.each([
    [[], /Usage: dqs <command>/],
    [['frobnicate'], /unknown command "frobnicate"/],
    [['datasets', '--bogus'], /Unknown option '--bogus'/],
    [['query', 'job_listings'], /missing --out FILE/],
    [['query', 'job_listings', '--out', 'a.xyz'], /cannot tell the output format of "a.xyz"/],
    [
      ['query', 'job_listings', '--out', 'a.csv', '--page-size', 'ten'],
      /Expected --page-size to be an integer >= 1, got "ten"/,
    ],
    [['query', '--out', 'a.csv'], /missing <dataset>/],
    [['tickers', 'job_listings'], /missing <text>/],
    [
      ['query', 'job_listings', '--out', 'a.csv', '--ticker', 'aapl'],
      /"aapl" is not a ticker: expected `<market>:<identifier>`/,
    ],
  ] as const)('usage error %j exits 2 with one line', async (args, message) => {
    const run = await dqs([...args, ...(args.length > 1 ? conn() : [])]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    if (args.length > 0) expectOneLine(run.stderr);
  });
});

describe('dqs: listing commands', () => {
  it.concurrent('datasets: an aligned table, and --json is one JSON document', async () => {
    const table = await dqs(['datasets', ...conn()]);
    expect(table.code).toBe(0);
    const lines = table.stdout.toString().trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+COMPANIES\s+STATE\s+SUMMARY$/);
    expect(lines.some((l) => l.startsWith('job_listings '))).toBe(true);
    // Columns line up: every row has its NAME where the header has it.
    const at = lines[0]!.indexOf('NAME');
    for (const l of lines.slice(1)) expect(l[at - 1]).toBe(' ');

    const json = await dqs(['datasets', '--json', '--ticker', 'nasdaq:aapl', ...conn()]);
    expect(json.code).toBe(0);
    const list = JSON.parse(json.stdout.toString()) as { id: string }[];
    expect(list.map((d) => d.id)).toContain(DATASET);
  });

  it.concurrent('dataset: metadata and columns; --json parses', async () => {
    const text = await dqs(['dataset', DATASET, ...conn()]);
    expect(text.code).toBe(0);
    expect(text.stdout.toString()).toMatch(/^row cap: +500,000$/m);
    expect(text.stdout.toString()).toMatch(/^opened_date +date /m);
    const json = await dqs(['dataset', DATASET, '--json', ...conn()]);
    const meta = JSON.parse(json.stdout.toString()) as { id: string; fields: { id: string }[] };
    expect(meta.id).toBe(DATASET);
    expect(meta.fields.map((f) => f.id)).toContain('updated_at');
  });

  it.concurrent('tickers: search by name; --json parses', async () => {
    const text = await dqs(['tickers', DATASET, 'apple', ...conn()]);
    expect(text.code).toBe(0);
    expect(text.stdout.toString()).toMatch(/^nasdaq:aapl +Apple/m);
    const json = await dqs(['tickers', DATASET, 'APPLE', '--json', ...conn()]);
    const tickers = JSON.parse(json.stdout.toString()) as { id: string }[];
    expect(tickers.map((t) => t.id)).toEqual(['nasdaq:aapl']);
  });

  it.concurrent('status: state, total and truncation of a query; --json parses', async () => {
    const client = new DatasetClient({ baseUrl: emulator.url, apiKey: KEY });
    const handle = await client.createQuery(DATASET, BODY);
    await client.close();
    const json = await dqs(['status', DATASET, handle.id, '--json', ...conn()]);
    expect(json.code).toBe(0);
    const status = JSON.parse(json.stdout.toString()) as Record<string, unknown>;
    expect(status).toMatchObject({
      id: handle.id,
      state: 'complete',
      total: expectedTotal,
      truncated: false,
    });
    const text = await dqs(['status', DATASET, handle.id, ...conn()]);
    expect(text.stdout.toString()).toMatch(/^state: +complete$/m);
    const missing = await dqs(['status', DATASET, '0'.repeat(64), ...conn()]);
    expect(missing.code).toBe(4);
    expectOneLine(missing.stderr);
  });
});

describe('dqs: failures have exit codes, one line, and never show the key', () => {
  it.concurrent('a wrong key exits 3 and says which setting to check, even with --debug', async () => {
    const wrong = 'wrong-key-q8z7x6';
    const run = await dqs(['datasets', ...conn(emulator, wrong)]);
    expect(run.code).toBe(3);
    expectOneLine(run.stderr);
    expect(run.stderr).toMatch(/^dqs datasets: 401 from the service .*Check --api-key or DQS_API_KEY\.$/m);
    const debug = await dqs(['datasets', '--debug'], {
      env: { DQS_BASE_URL: emulator.url, DQS_API_KEY: wrong },
    });
    expect(debug.code).toBe(3);
    expect(debug.stderr).toMatch(/^\s+at /m);
    for (const r of [run, debug]) {
      expect(r.stderr).not.toContain(wrong);
      expect(r.stdout.toString()).not.toContain(wrong);
    }
  });

  it.concurrent('an unknown dataset exits 4 and leaves no file', async () => {
    const dir = await mkdtemp(join(work, 'nf-'));
    const run = await dqs(['query', 'no_such_dataset', '--out', join(dir, 'x.parquet'), ...conn()]);
    expect(run.code).toBe(4);
    expectOneLine(run.stderr);
    expect(run.stderr).toContain('dqs datasets');
    expect(await readdir(dir)).toEqual([]);
  });

  it.concurrent('an unreachable service exits 5; an unwritable output exits 7', async () => {
    const down = await dqs(['datasets', '--base-url', 'http://127.0.0.1:9', '--api-key', KEY]);
    expect(down.code).toBe(5);
    expect(down.stderr).toMatch(/Check --base-url or DQS_BASE_URL/);
    const nowhere = await dqs([
      'query',
      DATASET,
      '--out',
      join(work, 'no', 'such', 'dir', 'a.csv'),
      ...conn(),
    ]);
    expect(nowhere.code).toBe(7);
    expect(nowhere.stderr).toMatch(/the directory .*[/]no does not exist \(ENOENT\)/);
  });

  it.concurrent('a page the service refuses mid-export exits 5 and leaves neither file nor temp file', async () => {
    const failing = await startEmulator({
      apiKey: KEY,
      fault: (r) =>
        r.method === 'GET' && r.query.start === '201' ? { kind: 'status', status: 400 } : undefined,
    });
    try {
      const dir = await mkdtemp(join(work, 'fail-'));
      const run = await dqs([
        'query',
        DATASET,
        ...TICKERS.flatMap((t) => ['--ticker', t]),
        ...PAGES,
        '--out',
        join(dir, 'x.arrow'),
        ...conn(failing),
      ]);
      expect(run.code).toBe(5);
      expectOneLine(run.stderr);
      expect(await readdir(dir)).toEqual([]);
    } finally {
      await failing.close();
    }
  });
});

describe('dqs query: files read by independent tools', () => {
  const tickerArgs = TICKERS.flatMap((t) => ['--ticker', t]);
  const first = queryRows(DATASET, BODY, {}, 1, 1)[0]!;
  const firstAapl = queryRows(DATASET, { tickers: ['nasdaq:aapl'] }, {}, 1, 1)[0]!;

  it.concurrent('.parquet: DuckDB reads every row with the right types and values; --json summary', async () => {
    const path = join(work, 'jobs.parquet');
    const run = await dqs(['query', DATASET, ...tickerArgs, '--out', path, '--json', ...PAGES, ...conn()]);
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout.toString()) as Record<string, unknown>;
    expect(summary).toMatchObject({ rows: expectedTotal, truncated: false, format: 'parquet', file: path });
    expect(summary.queryId).toMatch(/^[0-9a-f]{64}$/);
    expect(summary.bytes).toBe(statSync(path).size);
    expect(run.stderr).toMatch(
      new RegExp(
        // Other tests of this file run the same query, so the result may come from the CLI's cache
        // (on by default since issue 20): the file and its rows are what this test checks, not the source.
        `^dqs: wrote ${expectedTotal.toLocaleString('en-US')} rows to .*jobs\\.parquet .*; complete(; from the local cache .*)?$`,
        'm',
      ),
    );
    const p = `read_parquet('${path}')`;
    const [types] = await duck(
      `SELECT count(*) AS n, count(DISTINCT ticker) AS tickers, typeof(ticker) AS ticker, typeof(opened_date) AS opened,
       typeof(updated_at) AS updated, typeof(latitude) AS latitude, typeof(is_open) AS is_open FROM ${p} GROUP BY ALL`,
    );
    expect(types).toEqual({
      n: String(expectedTotal),
      tickers: '2',
      ticker: 'VARCHAR',
      opened: 'DATE',
      updated: 'TIMESTAMP WITH TIME ZONE',
      latitude: 'DOUBLE',
      is_open: 'BOOLEAN',
    });
    const [row] = await duck(
      `SELECT ticker, name, strftime(opened_date, '%Y%m%d') AS opened, latitude, is_open,
       strftime(updated_at AT TIME ZONE 'UTC', '%Y%m%dT%H%M%SZ') AS updated FROM ${p} LIMIT 1`,
    );
    expect(row).toEqual({
      ticker: first[0],
      name: first[2],
      opened: first[8],
      latitude: first[6],
      is_open: first[10],
      updated: first[11],
    });
  });

  it.concurrent('.arrow (IPC file) and .arrows (IPC stream): Polars reads them', async () => {
    for (const ext of ['arrow', 'arrows']) {
      const path = join(work, `jobs.${ext}`);
      const run = await dqs(['query', DATASET, ...tickerArgs, '--out', path, ...PAGES, ...conn()]);
      expect(run.code, run.stderr).toBe(0);
      const bytes = await readFile(path);
      const df = ext === 'arrow' ? pl.readIPC(bytes) : pl.readIPCStream(bytes);
      expect(df.height).toBe(expectedTotal);
      expect(df.getColumn('ticker').nUnique()).toBe(2);
      expect(String(df.getColumn('opened_date').dtype)).toBe('DataType(Date)');
      expect(String(df.getColumn('updated_at').dtype)).toBe('DataType(Datetime(ms,UTC))');
      expect(String(df.getColumn('latitude').dtype)).toBe('DataType(Float64)');
      expect(String(df.getColumn('is_open').dtype)).toBe('DataType(Bool)');
      const rec = df.head(1).toRecords()[0]!;
      expect(rec).toMatchObject({ ticker: first[0], name: first[2], latitude: first[6], is_open: first[10] });
      expect((rec.updated_at as unknown as Date).toISOString().replace(/[-:]|\.000/g, '')).toBe(first[11]);
    }
  });

  it.concurrent('.csv and .jsonl from a --tickers-file (comments, commas), ISO dates', async () => {
    await writeFile(
      join(work, 'tickers.txt'),
      `# the two of them\n${TICKERS[0]}, ${TICKERS[1]} # trailing\n\n`,
    );
    const csvPath = join(work, 'jobs.csv');
    const csv = await dqs([
      'query',
      DATASET,
      '--tickers-file',
      'tickers.txt',
      '--out',
      csvPath,
      ...PAGES,
      ...conn(),
    ]);
    expect(csv.code, csv.stderr).toBe(0);
    const records = parse(await readFile(csvPath), { columns: true }) as Record<string, string>[];
    expect(records).toHaveLength(expectedTotal);
    const opened = String(first[8]);
    expect(records[0]!.opened_date).toBe(`${opened.slice(0, 4)}-${opened.slice(4, 6)}-${opened.slice(6)}`);
    expect(records[0]!.updated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
    expect(records[0]!.name).toBe(first[2]);

    const jsonlPath = join(work, 'jobs.jsonl');
    const jsonl = await dqs(['query', DATASET, '--tickers-file', '-', '--out', jsonlPath, ...conn()], {
      input: TICKERS.join('\n'),
    });
    expect(jsonl.code, jsonl.stderr).toBe(0);
    const lines = (await readFile(jsonlPath, 'utf8')).trimEnd().split('\n');
    expect(lines).toHaveLength(expectedTotal);
    expect(JSON.parse(lines[0]!)).toMatchObject({ ticker: first[0], name: first[2], longitude: first[7] });

    const empty = await dqs(['query', DATASET, '--tickers-file', '-', '--out', jsonlPath, ...conn()], {
      input: '# none\n',
    });
    expect(empty.code).toBe(2);
  });

  it.concurrent('--out - pipes an Arrow IPC stream (apache-arrow reads it) or JSON Lines', async () => {
    const arrow = await dqs(['query', DATASET, '--ticker', 'nasdaq:aapl', '--out', '-', ...conn()]);
    expect(arrow.code, arrow.stderr).toBe(0);
    const table = tableFromIPC(arrow.stdout);
    const total = queryInfo(DATASET, { tickers: ['nasdaq:aapl'] }).total;
    expect(table.numRows).toBe(total);
    expect(table.getChild('name')!.get(0)).toBe(firstAapl[2]);
    expect(arrow.stderr).toMatch(/rows to stdout/);

    const jsonl = await dqs([
      'query',
      DATASET,
      '--ticker',
      'nasdaq:aapl',
      '--out',
      '-',
      '--as',
      'jsonl',
      '-q',
      ...conn(),
    ]);
    expect(jsonl.code).toBe(0);
    expect(jsonl.stderr).toBe('');
    const lines = jsonl.stdout.toString().trimEnd().split('\n');
    expect(lines).toHaveLength(total);
    expect((JSON.parse(lines[0]!) as { ticker: string }).ticker).toBe('nasdaq:aapl');
  });

  // Not concurrent with the tests above: its eight runs of dqs would crowd theirs on a two-core machine.
  it('same rows, same bytes: other page sizes and concurrencies write the same files', async () => {
    // Issue #47: the batches (row groups) followed the pages, so every run wrote another file.
    const reads = [
      ['--page-size', '37', '--concurrency', '7'],
      ['--concurrency', '1'],
    ];
    for (const ext of ['arrow', 'arrows', 'parquet']) {
      const files: Buffer[] = [];
      for (const [i, read] of reads.entries()) {
        const path = join(work, `same-${i}.${ext}`);
        const run = await dqs([
          'query',
          DATASET,
          ...tickerArgs,
          '--out',
          path,
          '--no-cache',
          ...read,
          ...conn(),
        ]);
        expect(run.code, run.stderr).toBe(0);
        files.push(await readFile(path));
      }
      expect(files[1]!.equals(files[0]!), ext).toBe(true);
    }
    // --batch-size cuts the Arrow file's batches; a Parquet file has row groups instead.
    const small = await dqs([
      'query',
      DATASET,
      ...tickerArgs,
      '--out',
      '-',
      '--batch-size',
      '200',
      ...conn(),
    ]);
    expect(small.code, small.stderr).toBe(0);
    expect(tableFromIPC(small.stdout).batches.map((b) => b.numRows)).toEqual([200, 200, expectedTotal - 400]);
    const refused = await dqs(['query', DATASET, '--out', 'x.parquet', '--batch-size', '200', ...conn()]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--batch-size N is for Arrow IPC output/);
  }, 120_000);
});

describe('dqs: connection', () => {
  it.concurrent('with no address, starts the embedded emulator, says so in one stderr line, writes the file', async () => {
    const path = join(work, 'embedded.parquet');
    const run = await dqs(['query', 'store_locations', '--ticker', 'nasdaq:aapl', '--out', path]);
    expect(run.code, run.stderr).toBe(0);
    const notices = run.stderr.split('\n').filter((l) => l.includes('embedded emulator'));
    expect(notices).toEqual([
      expect.stringMatching(
        /^dqs: no DQS_BASE_URL given; using the embedded emulator at http:\/\/127\.0\.0\.1:\d+ \(synthetic data\)$/,
      ),
    ]);
    const [row] = await duck(`SELECT count(*) AS n FROM read_parquet('${path}')`);
    expect(row!.n).toBe(String(queryInfo('store_locations', { tickers: ['nasdaq:aapl'] }).total));
  });

  it.concurrent('DQS_BASE_URL and DQS_API_KEY are used when no flag is given', async () => {
    const run = await dqs(['datasets', '--json'], { env: { DQS_BASE_URL: emulator.url, DQS_API_KEY: KEY } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toContain('embedded');
    expect(JSON.parse(run.stdout.toString())).toHaveLength(4);
  });

  it('dqs serve: prints its address, serves, and stops with exit 0 on Ctrl-C', async () => {
    const serve = await startServe(['--api-key', 'serve-key-1'], { cwd: work });
    const list = await dqs(['datasets', '--json', '--base-url', serve.url, '--api-key', 'serve-key-1']);
    expect(list.code, list.stderr).toBe(0);
    const run = await serve.stop();
    expect(run.code).toBe(0);
    expect(run.stderr).not.toContain('serve-key-1');
  });

  // glibc keeps freed page buffers resident unless its mmap threshold is fixed when a process starts, so
  // `dqs serve` starts the emulator in a child with it set (serve-process.ts) and only supervises it.
  it.runIf(process.platform === 'linux')(
    'dqs serve: the emulator runs in a child with glibc thresholds set; SIGTERM stops both, exit 0',
    async () => {
      const serve = await startServe([], { cwd: work });
      const pid = serve.child.pid!;
      const children = (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8')).trim().split(/\s+/);
      const environs = await Promise.all(children.map((c) => readFile(`/proc/${c}/environ`, 'utf8')));
      const server = environs.find((e) => e.split('\0').includes('DQS_SERVE_SUPERVISED=1'));
      expect(server?.split('\0')).toEqual(
        expect.arrayContaining(['MALLOC_MMAP_THRESHOLD_=65536', 'MALLOC_TRIM_THRESHOLD_=131072']),
      );
      const list = await dqs(['datasets', '--json', '--base-url', serve.url, '--api-key', 'demo']);
      expect(list.code, list.stderr).toBe(0);
      const exited = new Promise((resolve) => serve.child.once('exit', resolve));
      serve.child.kill('SIGTERM');
      await exited;
      const run = await serve.stop(); // already gone: only collects its result
      expect(run.code, run.stderr).toBe(0);
      for (const c of children) expect(() => process.kill(Number(c), 0)).toThrow();
    },
  );
});

describe('dqs query: interrupted', () => {
  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)(
    '%s mid-export aborts, removes the temporary file, leaves no file, exits %i',
    async (signal, code) => {
      // Every page takes 200 ms, so the export is surely still running when the signal comes.
      const slow = await startEmulator({
        apiKey: KEY,
        fault: (r) =>
          r.method === 'GET' && /\/query\/[0-9a-f]{64}$/.test(r.path) && r.query.limit !== '1'
            ? { kind: 'delay', ms: 200 }
            : undefined,
      });
      try {
        const dir = join(work, `killed-${signal}`);
        await mkdir(dir);
        const child = start([
          'query',
          'job_listings',
          '--ticker',
          'nasdaq:aapl',
          '--page-size',
          '500',
          '--concurrency',
          '1',
          '--out',
          join(dir, 'x.parquet'),
          ...conn(slow),
        ]);
        const done = finish(child);
        // Wait for two answered pages: the temporary file exists and holds data.
        for (let i = 0; i < 200; i++) {
          const answered = slow.requests.filter(
            (r) => r.method === 'GET' && r.query.limit === '500' && r.status === 200,
          );
          if (answered.length >= 2) break;
          await new Promise((r) => setTimeout(r, 25));
        }
        expect((await readdir(dir)).some((f) => /^\.x\.parquet\.\d+-[0-9a-f]{16}\.tmp$/.test(f))).toBe(true);
        child.kill(signal);
        const run = await done;
        expect(run.code).toBe(code);
        expect(run.stderr).toMatch(new RegExp(`interrupted \\(${signal}\\)`));
        expect(await readdir(dir)).toEqual([]);
        // The requests in flight were aborted: no page was asked for after the signal settled.
        const pages = slow.requests.filter((r) => r.query.limit === '500').length;
        await new Promise((r) => setTimeout(r, 300));
        expect(slow.requests.filter((r) => r.query.limit === '500').length).toBe(pages);
      } finally {
        await slow.close();
      }
    },
  );
});
