/**
 * `split: true` (issue #32): a ticker list whose result passes the row cap is read in parts that fit, as
 * one result. The emulator's `rowCap` is lowered to about a third of the list's rows, so the list splits
 * into a few parts; every test reads over real HTTP and checks against queries of one ticker each.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { MessageReader, type RecordBatch, tableFromIPC } from 'apache-arrow';
import { afterEach, describe, expect, test } from 'vitest';
import type { CacheEvent } from '../src/cache/events.js';
import { type Emulator, queryInfo, startEmulator } from '../src/emulator/index.js';
import {
  type DatasetClient,
  type QueryResult,
  ResultStream,
  type SplitInfo,
  SplitSchemaError,
  type SplitWarning,
} from '../src/index.js';
import type { JUPYTER_DISPLAY } from '../src/query/result-display.js';
import { ipcBytes, setup } from './helpers.js';

const DATASET = 'store_locations';
/** 16 tickers of store_locations, 4,259 rows in all (from 46 to 420 each), in sorted order. */
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
/** About a third of the list's rows: the whole and both halves are truncated, the quarters fit. */
const CAP = 1420;

const dirs: string[] = [];
afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});

type Row = Record<string, unknown>;

/** The rows of one query per ticker, in list order: what the split result must hold, row by row. */
async function perTicker(client: DatasetClient, tickers: readonly string[]): Promise<Row[]> {
  const rows: Row[] = [];
  for (const ticker of tickers) {
    const result = await client.query(DATASET, { tickers: [ticker] }, { cache: false });
    expect(result.truncated).toBe(false);
    rows.push(...(await result.toArray()));
  }
  return rows;
}

/** Requests of `emu` by kind while `run` runs. */
async function counted<T>(
  emu: Emulator,
  run: () => Promise<T>,
): Promise<{ value: T; post: number; head: number; get: number }> {
  const before = emu.requests.length;
  const value = await run();
  const seen = emu.requests.slice(before);
  const count = (method: string) => seen.filter((r) => r.method === method).length;
  return { value, post: count('POST'), head: count('HEAD'), get: count('GET') };
}

function text(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** The dictionary batch messages of Arrow IPC stream bytes: their dictionary id and delta flag. */
function dictionaryMessages(ipc: Uint8Array): { id: number; isDelta: boolean }[] {
  const out: { id: number; isDelta: boolean }[] = [];
  const reader = new MessageReader(ipc);
  for (let message = reader.readMessage(); message; message = reader.readMessage()) {
    if (message.isDictionaryBatch()) {
      const header = message.header();
      out.push({ id: Number(header.id), isDelta: header.isDelta });
    }
    if (message.bodyLength > 0) reader.readMessageBody(message.bodyLength);
  }
  return out;
}

function warnings(): { list: SplitWarning[]; onSplitWarning: (w: SplitWarning) => void } {
  const list: SplitWarning[] = [];
  return { list, onSplitWarning: (w) => list.push(w) };
}

describe('split: true', () => {
  test('reads every row of the list once, part by part, in list order, with the requests the bisection needs', async () => {
    const { emu, client } = await setup({ rowCap: CAP });
    const expected = await perTicker(client, TICKERS);
    expect(expected.length).toBeGreaterThan(2.9 * CAP);

    // Without the option the list is cut at the cap (what a user gets today).
    const cut = await client.query(DATASET, { tickers: TICKERS });
    expect(cut.truncated).toBe(true);
    expect(cut.total).toBe(CAP);

    const { list, onSplitWarning } = warnings();
    const run = await counted(emu, async () => {
      const result = await client.query(DATASET, { tickers: TICKERS }, { split: true, onSplitWarning });
      return { result, rows: await result.toArray() };
    });
    const { result, rows } = run.value;
    expect(list).toEqual([]);
    expect(result.truncated).toBe(false);
    expect(result.total).toBe(expected.length);
    expect(rows.length).toBe(expected.length);
    // Row by row: no row lost, none twice, and in the documented order.
    expect(rows).toEqual(expected);

    const parts = result.parts!;
    expect(parts.length).toBe(4);
    expect(parts.flatMap((p) => p.tickers)).toEqual(TICKERS);
    expect(parts.every((p) => !p.truncated && p.total < CAP)).toBe(true);
    expect(parts.map((p) => p.firstRow)).toEqual(
      parts.map((_, i) => 1 + parts.slice(0, i).reduce((n, p) => n + p.total, 0)),
    );
    expect(new Set(parts.map((p) => p.queryId)).size).toBe(parts.length);

    // The bisection's tree: the whole, both halves (truncated) and four quarters. One POST each (the
    // whole's was made once more by this run); a HEAD only where the total reached the cap (the halves);
    // one GET for the whole's first page and one per part (each part fits in its first page). A query per
    // ticker would have been 16 POSTs and 16 GETs.
    expect(run.post).toBe(2 * parts.length - 1);
    expect(run.head).toBeLessThanOrEqual(parts.length - 1);
    expect(run.get).toBe(1 + parts.length);
    expect(run.post).toBeLessThan(TICKERS.length);
    // Read again (a second stream of the same result): the same rows, no query asked again.
    const again = await counted(emu, () => result.toArray());
    expect(again.value).toEqual(expected);
    expect(again.post + again.head).toBe(0);
  });

  test("the stream announces the parts in a 'split' event, and Arrow output equals row output", async () => {
    const { client } = await setup({ rowCap: CAP });
    const stream = client.stream(DATASET, { tickers: TICKERS }, { split: true });
    const events: SplitInfo[] = [];
    stream.on('split', (info: SplitInfo) => events.push(info));
    let truncated = false;
    stream.on('truncated', () => {
      truncated = true;
    });
    const ipc = await ipcBytes(stream);
    expect(truncated).toBe(false);
    expect(events.length).toBe(1);
    expect(events[0]!.parts.map((p) => p.tickers.length)).toEqual([4, 4, 4, 4]);
    expect(events[0]!.cappedTotal).toBe(CAP);
    // Byte-identical Arrow across two runs of the same split.
    const second = await ipcBytes(client.stream(DATASET, { tickers: TICKERS }, { split: true }));
    expect(second.equals(ipc)).toBe(true);
    // One dictionary per column across parts: the first dictionary batch of each column, then deltas
    // (a replacement, which the IPC file format forbids, is what each part's own builder would give).
    const dictionaries = dictionaryMessages(ipc);
    expect(dictionaries.filter((d) => !d.isDelta).map((d) => d.id)).toEqual([
      ...new Set(dictionaries.map((d) => d.id)),
    ]);
    expect(dictionaries.filter((d) => d.isDelta).length).toBeGreaterThanOrEqual(3);
    expect(tableFromIPC(ipc).getChild('ticker')!.toArray()).toEqual(
      (await client.query(DATASET, { tickers: TICKERS }, { split: true }).then((r) => r.toArray())).map(
        (r) => r.ticker,
      ),
    );

    const result = await client.query(DATASET, { tickers: TICKERS }, { split: true });
    const table = await result.toTable();
    const rows = await result.toArray();
    expect(table.numRows).toBe(rows.length);
    expect(table.get(table.numRows - 1)!.toJSON()).toEqual(
      Object.fromEntries(
        Object.entries(rows.at(-1)!).map(([k, v]) => [k, v instanceof Date ? v.getTime() : v]),
      ),
    );
  });

  test('the REPL summary and the notebook display list the parts: tickers and rows each', async () => {
    const { client } = await setup({ rowCap: CAP });
    const result = await client.query(DATASET, { tickers: TICKERS }, { split: true });
    const parts = result.parts!;
    expect(parts.length).toBe(4);
    const text = inspect(result);
    expect(text).toContain('read in 4 parts (split: true)');
    // Each part: its number, its tickers (4 of them: first two, then the last), its rows.
    for (const [i, p] of parts.entries()) {
      const line = text.split('\n').find((l) => l.includes(p.tickers.at(-1)!) && l.includes(p.tickers[0]!))!;
      expect(line, text).toMatch(new RegExp(`^\\s+${i + 1}\\s`));
      expect(line).toContain(p.total.toLocaleString('en-US'));
      expect(line).toContain('(4 tickers)');
    }
    const html = result[Symbol.for('Jupyter.display') as typeof JUPYTER_DISPLAY]()['text/html'];
    expect(html).toContain('read in <b>4</b> parts');
    for (const p of parts) expect(html).toContain(p.total.toLocaleString('en-US'));
    // A result read as one query shows no parts.
    const one = await client.query(DATASET, { tickers: TICKERS.slice(0, 2) }, { split: true });
    expect(inspect(one)).not.toContain('parts');
  });

  test('startRow counts across parts; repeated tickers are read once', async () => {
    const { client } = await setup({ rowCap: CAP });
    const doubled = [...TICKERS, 'nasdaq:aapl', 'asx:wow'];
    const result = await client.query(DATASET, { tickers: doubled }, { split: true });
    expect(result.parts!.flatMap((p) => p.tickers)).toEqual(TICKERS);
    const all = await result.toArray();
    expect(all).toEqual(await perTicker(client, TICKERS));
    // From inside the second part to the end.
    const from = result.parts![1]!.firstRow + 17;
    expect(await result.toArray({ startRow: from })).toEqual(all.slice(from - 1));
    // A batchSize holds across parts: every batch has that many rows but the last.
    const sizes: number[] = [];
    for await (const batch of result.stream({ batchSize: 500 })) sizes.push((batch as RecordBatch).numRows);
    expect(sizes.slice(0, -1).every((n) => n === 500)).toBe(true);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(all.length);
  });

  test('a result that fits is read as one query: no part, no request more', async () => {
    const { emu, client } = await setup({ rowCap: CAP });
    const small = TICKERS.slice(0, 3);
    const plain = await counted(emu, () => client.query(DATASET, { tickers: small }));
    const split = await counted(emu, () => client.query(DATASET, { tickers: small }, { split: true }));
    expect(split.value.parts).toBeUndefined();
    expect(split.value.truncated).toBe(false);
    expect([split.post, split.head, split.get]).toEqual([plain.post, plain.head, plain.get]);
  });

  test('a single ticker whose rows alone pass the cap: the only truncated part, warned about', async () => {
    // nyse:bac has 420 rows; every other ticker of the list fewer than 400.
    const { client } = await setup({ rowCap: 400 });
    const tickers = ['nasdaq:aapl', 'nasdaq:tsla', 'nyse:bac', 'nyse:dis', 'lse:mks'];
    const { list, onSplitWarning } = warnings();
    const result = await client.query(DATASET, { tickers }, { split: true, onSplitWarning });
    const over = result.parts!.filter((p) => p.truncated);
    expect(over.map((p) => p.tickers)).toEqual([['nyse:bac']]);
    expect(over[0]!.total).toBe(400);
    expect(result.truncated).toBe(true);
    expect(list.map((w) => [w.code, w.tickers])).toEqual([['DQS_SPLIT_TICKER_OVER_CAP', ['nyse:bac']]]);
    expect(list[0]!.message).toMatch(/nyse:bac alone passes the row cap of store_locations \(400 rows\)/);
    expect(list[0]!.message).toMatch(/the only truncated part/);

    // The stream says so too, and holds every row of the others and bac's first 400.
    const stream = result.stream({ output: 'rows' });
    let cut: { total: number } | undefined;
    stream.on('truncated', (info: { total: number }) => {
      cut = info;
    });
    const rows: Row[] = [];
    for await (const row of stream) rows.push(row as Row);
    expect(cut).toEqual({ total: result.total });
    // Parts in list order, each in the service's order: the emulator orders a query's rows by ticker, so
    // the part [nyse:dis, lse:mks] gives lse:mks first.
    expect(result.parts!.map((p) => p.tickers)).toEqual([
      ['nasdaq:aapl', 'nasdaq:tsla'],
      ['nyse:bac'],
      ['nyse:dis', 'lse:mks'],
    ]);
    const expected: Row[] = [];
    for (const part of result.parts!) {
      for (const t of [...part.tickers].sort()) {
        const one = await (await client.query(DATASET, { tickers: [t] }, { cache: false })).toArray();
        expected.push(...one.slice(0, 400));
      }
    }
    expect(rows).toEqual(expected);
    // onTruncated: 'error' refuses it, as any truncated result.
    await expect(result.toTable({ onTruncated: 'error' })).rejects.toMatchObject({ code: 'DQS_TRUNCATED' });
  });

  test('a lone ticker over the cap, and a query without tickers, cannot be split: process warnings say why', async () => {
    const { client } = await setup({ rowCap: 400 });
    const seen: Error[] = [];
    const onWarning = (w: Error) => seen.push(w);
    process.on('warning', onWarning);
    try {
      const lone = await client.query(DATASET, { tickers: ['nyse:bac'] }, { split: true });
      expect(lone.parts).toEqual([
        { tickers: ['nyse:bac'], queryId: lone.id, total: 400, truncated: true, firstRow: 1 },
      ]);
      expect((await lone.toArray()).length).toBe(400);
      const all = await client.query(DATASET, {}, { split: true });
      expect(all.truncated).toBe(true);
      expect(all.parts).toBeUndefined();
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    const codes = seen.map((w) => (w as Error & { code: string }).code);
    expect(codes).toEqual(['DQS_SPLIT_TICKER_OVER_CAP', 'DQS_SPLIT_NO_TICKERS']);
    expect(seen[1]!.message).toMatch(/cannot be split: the service filters a query by tickers only/);
    expect(seen[1]!.message).toMatch(/pass `tickers`/);
  });

  test('the result cache keeps a split result as one entry, keyed apart from the unsplit result', async () => {
    const { emu } = await setup({ rowCap: CAP });
    const dir = mkdtempSync(join(tmpdir(), 'dqs-split-cache-'));
    dirs.push(dir);
    const { DatasetClient } = await import('../src/index.js');
    const client = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey, cache: { dir } });
    const events: CacheEvent[] = [];
    client.on('cache', (e: CacheEvent) => events.push(e));
    try {
      const first = await client.query(DATASET, { tickers: TICKERS }, { split: true });
      const rows = await first.toArray();
      expect(events.map((e) => e.type)).toEqual(['miss', 'stored']);

      events.length = 0;
      const run = await counted(emu, async () => {
        const hit = await client.query(DATASET, { tickers: TICKERS }, { split: true });
        return { hit, rows: await hit.toArray() };
      });
      expect(events.map((e) => e.type)).toEqual(['hit']);
      expect(run.value.rows).toEqual(rows);
      expect(run.value.hit.parts).toEqual(first.parts);
      expect(run.value.hit.total).toBe(first.total);
      // Validated as any entry: the whole list's POST and one one-row page.
      expect([run.post, run.head, run.get]).toEqual([1, 0, 1]);

      // A stream asking for other values than the entry holds reads the parts again, not the whole.
      const exact = await (await client.query(DATASET, { tickers: TICKERS }, { split: true })).toArray({
        bigNumbers: 'string',
      });
      expect(exact.length).toBe(rows.length);

      // The unsplit query of the same body has an entry of its own: the truncated result.
      events.length = 0;
      const unsplit = await client.query(DATASET, { tickers: TICKERS });
      expect(events.map((e) => e.type)).toEqual(['miss']);
      expect(unsplit.truncated).toBe(true);
      expect((await unsplit.toArray()).length).toBe(CAP);
    } finally {
      await client.close();
    }
  });

  test("parts whose columns differ from the whole list's: SplitSchemaError before any row", async () => {
    // A service that describes one column otherwise for every query but the whole list's: a proxy in front
    // of the emulator rewrites the pages of the parts' queries.
    const emu = await startEmulator({ apiKey: 'split-key', rowCap: CAP });
    const whole = queryInfo(DATASET, { tickers: TICKERS }, { rowCap: CAP }).id;
    const proxy = createServer(async (req, res) => {
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(
          ([k]) => !['host', 'accept-encoding', 'content-length'].includes(k),
        ),
      ) as Record<string, string>;
      const body = req.method === 'POST' ? await text(req) : undefined;
      const answer = await fetch(`${emu.url}${req.url}`, {
        method: req.method!,
        headers,
        ...(body === undefined ? {} : { body }),
      });
      let bytes = Buffer.from(await answer.arrayBuffer());
      const id = /\/query\/([0-9a-f]{64})/.exec(req.url ?? '')?.[1];
      if (req.method === 'GET' && id !== undefined && id !== whole && answer.ok) {
        const page = JSON.parse(bytes.toString('utf8')) as { fields: { display_name: string }[] };
        page.fields[2]!.display_name = 'Renamed';
        bytes = Buffer.from(JSON.stringify(page));
      }
      const out: Record<string, string> = {};
      answer.headers.forEach((v, k) => {
        if (!['content-encoding', 'content-length', 'transfer-encoding'].includes(k)) out[k] = v;
      });
      res.writeHead(answer.status, { ...out, 'content-length': String(bytes.length) });
      res.end(req.method === 'HEAD' ? undefined : bytes);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const { port } = proxy.address() as AddressInfo;
    const { DatasetClient } = await import('../src/index.js');
    const client = new DatasetClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'split-key' });
    try {
      const err = await client.query(DATASET, { tickers: TICKERS }, { split: true }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SplitSchemaError);
      expect(err).toMatchObject({
        code: 'DQS_SPLIT_SCHEMA',
        datasetId: DATASET,
        tickers: TICKERS.slice(0, 4),
      });
      expect((err as Error).message).toMatch(/describes column 3 \(\w+\) otherwise/);
    } finally {
      await client.close();
      await new Promise((resolve) => proxy.close(resolve));
      await emu.close();
    }
  });

  test('split is validated and a split result has no single body to download', async () => {
    const { client } = await setup({ rowCap: CAP });
    await expect(
      client.query(DATASET, { tickers: TICKERS }, { split: 'yes' as unknown as boolean }),
    ).rejects.toMatchObject({ code: 'DQS_INVALID_ARGUMENT', argument: 'split' });
    const result: QueryResult = await client.query(DATASET, { tickers: TICKERS }, { split: true });
    await expect(result.download()).rejects.toMatchObject({ code: 'DQS_INVALID_ARGUMENT' });
    expect(result.stream()).toBeInstanceOf(ResultStream);
  });
});
