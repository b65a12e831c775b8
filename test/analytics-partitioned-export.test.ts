/**
 * `exportPartitioned()`: one query per ticker into a Hive-partitioned Parquet dataset, read back by real
 * engines (DuckDB's `read_parquet(..., hive_partitioning = true)`, Polars' `scanParquet`) and counted per
 * partition against the emulator. Then what makes it a data-lake filler: resume (only missing partitions
 * are queried again), interruption and failure (finished partitions stay, no temporary file does), and a
 * query budget shared through one client.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { tableFromIPC } from 'apache-arrow';
import pl from 'nodejs-polars';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Emulator, queryInfo, queryTotal } from '../src/emulator/index.js';
import {
  AbortError,
  exportPartitioned,
  InvalidArgumentError,
  type PartitionReport,
  partitionPath,
  rawBody,
  ServerError,
} from '../src/index.js';
import { duck } from './cli-helpers.js';
import { expectRejects, setup } from './helpers.js';

const DATASET = 'web_traffic';
/** A dot, digits, and `private:aldi`, which has no web traffic: an empty partition. */
const TICKERS = ['nasdaq:aapl', 'nyse:brk.b', 'tyo:7203', 'lse:tsco', 'private:aldi'];
const STREAM = { pageSize: 500, concurrency: 2 };

let out: string;
beforeEach(async () => {
  out = await mkdtemp(join(tmpdir(), 'dqs-lake-'));
});
afterEach(async () => {
  await rm(out, { recursive: true, force: true });
});

/** Every file under `dir`, relative, sorted. */
async function files(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

/** Query-creating POSTs, by the ticker whose query id they led to (the POST body is not logged). */
function queriedTickers(emu: Emulator, tickers: readonly string[], since = 0): string[] {
  const ids = new Map(tickers.map((t) => [queryInfo(DATASET, { tickers: [t] }).id, t]));
  const seen = new Set<string>();
  for (const r of emu.requests.slice(since)) {
    const id = /\/query\/([0-9a-f]{64})$/.exec(r.path)?.[1];
    // The data GETs name the query (a create that answers `complete` needs no HEAD).
    if (r.method === 'GET' && id && ids.has(id)) seen.add(ids.get(id)!);
  }
  return [...seen].sort();
}

const expected = Object.fromEntries(TICKERS.map((t) => [t, queryTotal(DATASET, { tickers: [t] })]));

describe('exportPartitioned: the layout engines read', () => {
  it('writes dataset=/ticker=/part-0.parquet that DuckDB and Polars read as one table, counts per partition', async () => {
    expect(expected['private:aldi']).toBe(0);
    const { client } = await setup();
    const reports: PartitionReport[] = [];
    const result = await exportPartitioned(client, {
      dataset: DATASET,
      tickers: TICKERS,
      outDir: out,
      stream: STREAM,
      onPartition: (r) => reports.push(r),
    });
    expect(result.written).toBe(5);
    expect(result.skipped).toBe(0);
    expect(result.root).toBe(join(out, 'dataset=web_traffic'));
    expect(result.partitions.map((p) => [p.ticker, p.status, p.rows])).toEqual(
      TICKERS.map((t) => [t, 'written', expected[t]]),
    );
    expect(result.rowsWritten).toBe(Object.values(expected).reduce((a, b) => a + b, 0));
    expect(reports.map((r) => r.ticker).sort()).toEqual([...TICKERS].sort());
    expect(result.partitions.every((p) => p.truncated === false && /^[0-9a-f]{64}$/.test(p.queryId!))).toBe(
      true,
    );

    // Percent-encoded as DuckDB's own PARTITION_BY writes them; the empty ticker has a 0-row file.
    expect(await files(out)).toEqual([
      'dataset=web_traffic/ticker=lse%3Atsco/part-0.parquet',
      'dataset=web_traffic/ticker=nasdaq%3Aaapl/part-0.parquet',
      'dataset=web_traffic/ticker=nyse%3Abrk.b/part-0.parquet',
      'dataset=web_traffic/ticker=private%3Aaldi/part-0.parquet',
      'dataset=web_traffic/ticker=tyo%3A7203/part-0.parquet',
    ]);

    const counts = await duck(
      `SELECT dataset, ticker, count(*) AS n FROM read_parquet('${out}/**/*.parquet', hive_partitioning = true)
       GROUP BY ALL ORDER BY ticker`,
    );
    expect(counts).toEqual(
      TICKERS.filter((t) => expected[t]! > 0)
        .sort()
        .map((t) => ({ dataset: DATASET, ticker: t, n: String(expected[t]) })),
    );
    // The empty partition: a readable file with every column and no row.
    const [empty] = await duck(`SELECT count(*) AS n FROM read_parquet('${result.partitions[4]!.path}')`);
    expect(empty).toEqual({ n: '0' });
    const [typed] = await duck(
      `SELECT typeof(ticker) AS ticker, typeof(date) AS date FROM read_parquet('${out}/**/*.parquet', hive_partitioning = true) LIMIT 1`,
    );
    expect(typed).toEqual({ ticker: 'VARCHAR', date: 'DATE' });

    // Polars, over the dataset directory (nothing but Parquet files in it) and by glob.
    for (const source of [result.root, `${result.root}/**/*.parquet`]) {
      const df = pl.scanParquet(source, { hivePartitioning: true }).collectSync();
      const byTicker = df.groupBy('ticker').len().sort('ticker').toRecords();
      expect(byTicker, source).toEqual(
        TICKERS.filter((t) => expected[t]! > 0)
          .sort()
          .map((t) => ({ ticker: t, ticker_count: expected[t] })),
      );
    }
  });

  it("each file's partition column is a plain string, the type Hive partitioning infers from the path", async () => {
    // Issue #47: the files kept the stream's Dictionary<Utf8> ticker in their Arrow schema, and pyarrow's
    // dataset reader (`partitioning='hive'`) refused the lake: "ticker has incompatible types: dictionary
    // vs string". pyarrow cannot be installed where CI runs (npm and Debian packages only; Debian has no
    // python3-pyarrow), so this reads each file as an Arrow reader does, through parquet-wasm (arrow-rs,
    // which like pyarrow's reader restores the Arrow schema stored in the file), and checks the cause.
    const { client } = await setup();
    const result = await exportPartitioned(client, {
      dataset: DATASET,
      tickers: TICKERS,
      outDir: out,
      stream: STREAM,
    });
    const pq = await import('parquet-wasm');
    for (const { path, rows } of result.partitions) {
      // intoIPCStream() consumes the WebAssembly table: nothing left to free.
      const arrow = tableFromIPC(pq.readParquet(await readFile(path)).intoIPCStream());
      expect(arrow.numRows, path).toBe(rows);
      const types = Object.fromEntries(arrow.schema.fields.map((f) => [f.name, String(f.type)]));
      expect(types.ticker, path).toBe('Utf8');
      // Only the partition column changes: the other columns keep the stream's types.
      expect(types.date, path).toBe('Date32<DAY>');
    }
    // The same rows as the stream gives, ticker included.
    const [first] = await duck(
      `SELECT ticker, count(*) AS n FROM read_parquet('${result.partitions[0]!.path}') GROUP BY ALL`,
    );
    expect(first).toEqual({ ticker: TICKERS[0], n: String(expected[TICKERS[0]!]) });
  });

  it('runs at most `concurrency` queries at once through the one client', async () => {
    // Slow pages, so queries overlap in time when they may.
    const { emu, client } = await setup({
      fault: (r) => (r.method === 'GET' && r.query.limit === '500' ? { kind: 'delay', ms: 15 } : undefined),
    });
    await exportPartitioned(client, {
      dataset: DATASET,
      tickers: TICKERS,
      outDir: out,
      stream: STREAM,
      concurrency: 2,
    });
    const windows = new Map<string, [number, number]>();
    for (const r of emu.requests) {
      const id = /\/query\/([0-9a-f]{64})$/.exec(r.path)?.[1];
      if (!id) continue;
      const w = windows.get(id);
      windows.set(id, w ? [Math.min(w[0], r.n), Math.max(w[1], r.n)] : [r.n, r.n]);
    }
    // A query with rows reads them; the empty one (private:aldi) reads a GET only when no query before
    // it has shown the dataset's descriptors, which depends on the timing.
    const withRows = TICKERS.filter((t) => queryTotal(DATASET, { tickers: [t] }) > 0).length;
    expect(withRows).toBe(4);
    expect(windows.size).toBeGreaterThanOrEqual(withRows);
    expect(windows.size).toBeLessThanOrEqual(TICKERS.length);
    // Request-number intervals of each query: how many ever overlap at one point.
    const spans = [...windows.values()];
    const overlap = Math.max(...spans.map(([s]) => spans.filter(([a, b]) => a <= s && s <= b).length));
    expect(overlap).toBe(2);
  });

  it("shares the client's rate limit across all queries", async () => {
    const limit = { requests: 8, intervalMs: 250 };
    const { emu, client } = await setup({}, { rateLimit: limit });
    const tickers = TICKERS.slice(0, 3);
    // When the limiter admitted each request (what it bounds). undici's request:create comes a few ms
    // later, not always the same few: with 10 ms of slack, a loaded CI machine still saw 9 in a window.
    const admitted: number[] = [];
    const onAdmit = (message: unknown) => admitted.push((message as { at: number }).at);
    subscribe('dqs-client:rate-limit:admit', onAdmit);
    try {
      await exportPartitioned(client, {
        dataset: DATASET,
        tickers,
        outDir: out,
        stream: { pageSize: 500, concurrency: 4 },
        concurrency: 3,
      });
    } finally {
      unsubscribe('dqs-client:rate-limit:admit', onAdmit);
    }
    // Every request the emulator saw went through the one limiter, whichever query sent it...
    expect(admitted.length).toBe(emu.requests.length);
    expect(admitted.length).toBeGreaterThan(limit.requests * 2);
    // ...and no window of intervalMs holds more than `requests` of them.
    const most = Math.max(
      ...admitted.map((t) => admitted.filter((u) => u >= t && u < t + limit.intervalMs).length),
    );
    expect(most).toBeLessThanOrEqual(limit.requests);
  });

  it('escapes partition values as DuckDB does, and DuckDB reads them back unchanged', async () => {
    expect(partitionPath('lake', 'job_listings', 'nasdaq:aapl')).toBe(
      join('lake', 'dataset=job_listings', 'ticker=nasdaq%3Aaapl', 'part-0.parquet'),
    );
    // Not a ticker the service accepts, but the path function must never make a separator or `..`.
    const odd = 'a/b c%d=é..';
    const path = partitionPath(out, 'x', odd);
    expect(relative(out, path)).toBe(join('dataset=x', 'ticker=a%2Fb%20c%25d%3D%C3%A9..', 'part-0.parquet'));
    await mkdir(dirname(path), { recursive: true });
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    try {
      await c.run(`COPY (SELECT 1 AS x) TO '${path}' (FORMAT parquet)`);
      const rows = (
        await c.runAndReadAll(
          `SELECT ticker FROM read_parquet('${out}/**/*.parquet', hive_partitioning = true)`,
        )
      ).getRowObjectsJson();
      expect(rows).toEqual([{ ticker: odd }]);
    } finally {
      c.closeSync();
      db.closeSync();
    }
  });
});

describe('exportPartitioned: resume, interruption, failure', () => {
  it('a re-run skips finished partitions without a request; a deleted partition alone is queried again', async () => {
    const { emu, client } = await setup();
    const first = await exportPartitioned(client, {
      dataset: DATASET,
      tickers: TICKERS,
      outDir: out,
      stream: STREAM,
    });
    const before = emu.requests.length;
    const again = await exportPartitioned(client, {
      dataset: DATASET,
      tickers: TICKERS,
      outDir: out,
      stream: STREAM,
    });
    expect(emu.requests.length).toBe(before);
    expect(again.skipped).toBe(5);
    // Row counts of skipped partitions come from their Parquet footers.
    expect(again.partitions.map((p) => [p.status, p.rows, p.bytes])).toEqual(
      first.partitions.map((p) => ['skipped', p.rows, p.bytes]),
    );

    await rm(join(first.partitions[2]!.path, '..'), { recursive: true });
    const reports: PartitionReport[] = [];
    const mark = emu.requests.length;
    const resumed = await exportPartitioned(client, {
      dataset: DATASET,
      tickers: TICKERS,
      outDir: out,
      stream: STREAM,
      onPartition: (r) => reports.push(r),
    });
    expect(queriedTickers(emu, TICKERS, mark)).toEqual([TICKERS[2]]);
    expect(reports.filter((r) => r.status === 'written').map((r) => r.ticker)).toEqual([TICKERS[2]]);
    expect(resumed).toMatchObject({ written: 1, skipped: 4, rowsWritten: expected[TICKERS[2]!] });
    const [n] = await duck(
      `SELECT count(*) AS n FROM read_parquet('${out}/**/*.parquet', hive_partitioning = true)`,
    );
    expect(n).toEqual({ n: String(first.rowsWritten) });
    // overwrite: true writes everything again.
    const rewritten = await exportPartitioned(client, {
      dataset: DATASET,
      tickers: TICKERS.slice(0, 2),
      outDir: out,
      stream: STREAM,
      overwrite: true,
    });
    expect(rewritten.written).toBe(2);
  });

  it('an abort stops the queries in flight, removes their temporary files, keeps finished partitions; re-run completes', async () => {
    const { client } = await setup({
      fault: (r) => (r.method === 'GET' && r.query.limit === '500' ? { kind: 'delay', ms: 20 } : undefined),
    });
    const controller = new AbortController();
    const run = exportPartitioned(client, {
      dataset: DATASET,
      tickers: TICKERS,
      outDir: out,
      stream: STREAM,
      signal: controller.signal,
      onPartition: () => controller.abort(),
    });
    await expectRejects(run, (err: Error) => expect(err).toBeInstanceOf(AbortError));
    const left = await files(out);
    expect(left.filter((f) => f.endsWith('.tmp'))).toEqual([]);
    const finished = left.filter((f) => f.endsWith('.parquet'));
    expect(finished.length).toBeGreaterThanOrEqual(1);
    expect(finished.length).toBeLessThan(5);
    const done = await exportPartitioned(client, {
      dataset: DATASET,
      tickers: TICKERS,
      outDir: out,
      stream: STREAM,
    });
    expect(done.skipped).toBe(finished.length);
    expect(done.partitions.map((p) => p.rows)).toEqual(TICKERS.map((t) => expected[t]));
  });

  it('a failing query fails the export with its error; the others stop, finished partitions stay', async () => {
    const failing = queryInfo(DATASET, { tickers: ['tyo:7203'] }).id;
    const { client } = await setup(
      {
        fault: (r) =>
          r.method === 'GET' && r.path.endsWith(failing) && r.query.start !== '1'
            ? { kind: 'status', status: 503 }
            : undefined,
      },
      { retry: false },
    );
    const err = await expectRejects(
      exportPartitioned(client, {
        dataset: DATASET,
        tickers: TICKERS,
        outDir: out,
        stream: STREAM,
        concurrency: 1,
      }),
      (e: Error) => expect(e).toBeInstanceOf(ServerError),
    );
    expect((err as ServerError).status).toBe(503);
    const left = await files(out);
    expect(left.filter((f) => f.includes('.tmp'))).toEqual([]);
    // concurrency 1: the two tickers before it are finished, nothing after it was started.
    expect(left.filter((f) => f.endsWith('.parquet'))).toEqual([
      'dataset=web_traffic/ticker=nasdaq%3Aaapl/part-0.parquet',
      'dataset=web_traffic/ticker=nyse%3Abrk.b/part-0.parquet',
    ]);
    expect(existsSync(join(out, 'dataset=web_traffic', 'ticker=tyo%3A7203'))).toBe(true);
  });

  it('reports truncated partitions (a ticker over the row cap)', async () => {
    const { client } = await setup({ rowCap: 1000 });
    const result = await exportPartitioned(client, {
      dataset: DATASET,
      tickers: ['nasdaq:aapl', 'private:aldi'],
      outDir: out,
      stream: STREAM,
    });
    expect(result.partitions.map((p) => [p.rows, p.truncated])).toEqual([
      [1000, true],
      [0, false],
    ]);
  });
});

describe('exportPartitioned: arguments', () => {
  it('rejects bad options before touching the directory or the network', async () => {
    const { emu, client } = await setup();
    const base = { dataset: DATASET, tickers: TICKERS, outDir: join(out, 'never') };
    const bad: [object, RegExp][] = [
      [{ tickers: [] }, /non-empty array of tickers/],
      [{ tickers: ['AAPL'] }, /tickers/],
      [{ dataset: '../x' }, /dataset/],
      [{ outDir: '' }, /directory path/],
      [{ concurrency: 0 }, /to be an integer >= 1, got 0/],
      [{ body: rawBody({ tickers: ['nasdaq:aapl'] }) }, /no `tickers` in `body`/],
      [{ body: { filters: [] } }, /Expected `body` to be a rawBody\(\{ … \}\)/],
      [
        { parquet: { rowGroupsize: 10 } },
        /Invalid `parquet.rowGroupsize`: did you mean `parquet.rowGroupSize`\?/,
      ],
      [
        { stream: { output: 'rows' } },
        /Invalid `stream.output`: not one of the options of `exportPartitioned\(\)`/,
      ],
      [{ stream: { pageSize: 0 } }, /pageSize|Expected an integer >= 1/],
    ];
    for (const [override, message] of bad) {
      await expectRejects(exportPartitioned(client, { ...base, ...override }), (err: Error) => {
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect(err.message).toMatch(message);
      });
    }
    expect(existsSync(join(out, 'never'))).toBe(false);
    expect(emu.requests).toHaveLength(0);
  });
});
