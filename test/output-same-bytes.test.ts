/**
 * Same rows, same bytes (issue #47): the writers' output of one query is the same, byte for byte, however
 * the rows were read: other page sizes, other concurrencies, pages answered out of order (a seeded
 * latency plan), from the service or from the result cache, and for a split read (`split: true`) too.
 * Before, Arrow file, Arrow stream and Parquet outputs followed the page sizes the stream learned, and
 * the ticker dictionary the order in which pages were converted: three runs, three sha256s.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, type Readable, Writable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { tableFromIPC } from 'apache-arrow';
import { afterEach, describe, expect, test } from 'vitest';
import { type Emulator, faultPlan, queryInfo, startEmulator } from '../src/emulator/index.js';
import {
  type CacheEvent,
  DatasetClient,
  type QueryBody,
  type StreamOptions,
  toArrowIpc,
  toCsv,
  toJsonl,
  toParquet,
} from '../src/index.js';

const KEY = 'same-bytes-key';
const open: { close(): Promise<void> }[] = [];
const dirs: string[] = [];

afterEach(async () => {
  while (open.length) await open.pop()!.close();
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});

/** Every writer, with its defaults and with batches or row groups small enough to cut these results. */
const WRITERS = {
  arrowFile: () => toArrowIpc(),
  arrowStream: () => toArrowIpc({ format: 'stream' }),
  arrowFileSmallBatches: () => toArrowIpc({ batchSize: 1000 }),
  arrowStreamSmallBatches: () => toArrowIpc({ format: 'stream', batchSize: 999 }),
  parquet: () => toParquet(),
  parquetSmallRowGroups: () => toParquet({ rowGroupSize: 1500 }),
  csv: () => toCsv(),
  jsonl: () => toJsonl(),
} as const;

type Digests = Record<keyof typeof WRITERS, string> & { rows: number };

/** One read of the stream, fed to every writer at once; the sha256 of each writer's bytes. */
async function digests(stream: Readable): Promise<Digests> {
  const out = {} as Record<string, string>;
  let rows = 0;
  const done = Object.entries(WRITERS).map(([name, writer]) => {
    const hash = createHash('sha256');
    const branch = new PassThrough({ objectMode: true });
    stream.pipe(branch);
    return pipeline(
      branch,
      writer(),
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          hash.update(chunk);
          callback();
        },
      }),
    ).then(() => {
      out[name] = hash.digest('hex');
    });
  });
  stream.on('data', (batch: { numRows: number }) => {
    rows += batch.numRows;
  });
  await Promise.all([finished(stream), ...done]);
  return { ...(out as Record<keyof typeof WRITERS, string>), rows };
}

/** Five ways to read: page sizes from 333 rows to the learned ones, one to eight requests at once. */
const READS: readonly StreamOptions[] = [
  {},
  { pageSize: 333, concurrency: 8 },
  { pageSize: 1000, concurrency: 1 },
  { pageSize: 2718, concurrency: 3, hedge: false },
  { pageSize: 7000, concurrency: 'auto' },
];

async function emulator(rowCap?: number): Promise<Emulator> {
  // Some pages answered late, so pages arrive out of order at concurrency above one.
  const fault = faultPlan({ seed: 47, rate: 0.3, kinds: ['latency'], latencyMs: 40 });
  const emu = await startEmulator({ apiKey: KEY, fault, ...(rowCap ? { rowCap } : {}) });
  open.push(emu);
  return emu;
}

function cachingClient(emu: Emulator): { client: DatasetClient; events: CacheEvent['type'][] } {
  const dir = mkdtempSync(join(tmpdir(), 'dqs-same-bytes-'));
  dirs.push(dir);
  const client = new DatasetClient({ baseUrl: emu.url, apiKey: KEY, cache: { dir } });
  open.push(client);
  const events: CacheEvent['type'][] = [];
  client.on('cache', (e: CacheEvent) => events.push(e.type));
  return { client, events };
}

/** Each of READS from the service, then the first two again from the cache; every digest. */
async function readEveryWay(
  client: DatasetClient,
  dataset: string,
  body: QueryBody,
  split: boolean,
): Promise<Digests[]> {
  const runs: Digests[] = [];
  for (const read of READS) {
    runs.push(await digests(client.stream(dataset, body, { ...read, split, cache: false })));
  }
  for (const read of [READS[1]!, READS[0]!, READS[2]!]) {
    runs.push(await digests(client.stream(dataset, body, { ...read, split })));
  }
  return runs;
}

describe('the writers write the same bytes however the rows were read', () => {
  test('a plain read: five page sizes and concurrencies, then from the cache', async () => {
    const emu = await emulator();
    const { client, events } = cachingClient(emu);
    const body = { tickers: ['nasdaq:aapl', 'nyse:wmt', 'lse:tsco'] };
    const total = queryInfo('web_traffic', body).total;
    const runs = await readEveryWay(client, 'web_traffic', body, false);
    // The third cached read is a hit: the writers' bytes came from disk.
    expect(events).toEqual(['miss', 'stored', 'hit', 'hit']);
    expect(runs[0]!.rows).toBe(total);
    for (const run of runs.slice(1)) expect(run).toEqual(runs[0]);
    expect(new Set(Object.values(runs[0]!)).size).toBe(Object.keys(runs[0]!).length);
  });

  test('a split read (split: true): the same, from the service and from the cache', async () => {
    // store_locations' 16 tickers, 4,259 rows; a cap of a third makes the list split into parts.
    const tickers = ['asx:wow', 'epa:mc', 'lse:hsba', 'lse:kgf', 'lse:mks', 'lse:tsco', 'nasdaq:aapl'];
    tickers.push('nasdaq:amzn', 'nasdaq:cost', 'nasdaq:sbux', 'nasdaq:tsla', 'nyse:bac', 'nyse:brk.b');
    tickers.push('nyse:cmg', 'nyse:dis', 'nyse:hd');
    const emu = await emulator(1420);
    const { client, events } = cachingClient(emu);
    const runs = await readEveryWay(client, 'store_locations', { tickers }, true);
    expect(events).toEqual(['miss', 'stored', 'hit', 'hit']);
    expect(runs[0]!.rows).toBe(4259);
    for (const run of runs.slice(1)) expect(run).toEqual(runs[0]);
  });

  test('the file holds every row, in batches of the writer, not of the pages', async () => {
    const emu = await emulator();
    const client = new DatasetClient({ baseUrl: emu.url, apiKey: KEY });
    open.push(client);
    const chunks: Buffer[] = [];
    await pipeline(
      client.stream('job_listings', { tickers: ['nasdaq:aapl'] }, { pageSize: 777, concurrency: 4 }),
      toArrowIpc({ batchSize: 5000 }),
      async (bytes: AsyncIterable<Buffer>) => {
        for await (const b of bytes) chunks.push(b);
      },
    );
    const table = tableFromIPC(Buffer.concat(chunks));
    expect(table.numRows).toBe(18_946);
    expect(table.batches.map((b) => b.numRows)).toEqual([5000, 5000, 5000, 3946]);
  });
});
