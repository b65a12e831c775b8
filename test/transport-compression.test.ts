/**
 * Compressed transfer: what the client asks for, what it does with whatever arrives (asked or not, lying,
 * unknown), and that inflating cannot run it out of memory. The emulator compresses as a front end does
 * and misbehaves on request (its `encoding` fault); the bombs come from a small proxy in front of it.
 * Every test talks HTTP on 127.0.0.1.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as zlib from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  ContentEncodingError,
  DatasetClient,
  DqsError,
  InvalidArgumentError,
  ResponseTooLargeError,
} from '../src/index.js';
import type { PageTiming } from '../src/query/page-fetcher.js';
import { CompressionChoice } from '../src/transport/compression-choice.js';
import { SUPPORTED_CODINGS } from '../src/transport/content-encoding.js';
import { expectRejects, ipcBytes, setup } from './helpers.js';

/** Result pages of the bomb proxy: a gzip stream of `bytes` zeros, or of `prefix` then spaces. */
interface Bomb {
  readonly bytes: number;
  readonly prefix?: string;
}

/** A result page GET (not the 1-row probe `query()` sends for the schema). */
const isPage = (r: { method: string; path: string; query: Readonly<Record<string, string>> }) =>
  r.method === 'GET' && /\/query\/[0-9a-f]{64}$/.test(r.path) && r.query.limit !== '1';

interface Proxy {
  readonly url: string;
  /** Bytes written to the socket for bomb bodies. */
  bombBytesSent: number;
  bombsStarted: number;
  /** Bomb bodies whose writing ended (the client hung up, or all was written). */
  bombsEnded: number;
  close(): Promise<void>;
}

/** A front end before `target` that forwards every request, and answers result pages with `bomb`. */
async function bombProxy(target: string, bomb: Bomb): Promise<Proxy> {
  const proxy: Proxy = { url: '', bombBytesSent: 0, bombsStarted: 0, bombsEnded: 0, close: async () => {} };
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (
      isPage({ method: req.method ?? '', path: url.pathname, query: Object.fromEntries(url.searchParams) })
    ) {
      res.writeHead(200, {
        'content-type': 'application/vnd.service.table+json',
        'content-encoding': 'gzip',
        'x-state': 'complete',
        'x-total': '3000',
      });
      proxy.bombsStarted++;
      await sendBomb(res, bomb.bytes, bomb.prefix, (n) => {
        proxy.bombBytesSent += n;
      });
      proxy.bombsEnded++;
      return;
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers: Record<string, string> = { 'accept-encoding': 'identity' };
    for (const name of ['authorization', 'x-api-version', 'accept', 'content-type']) {
      const v = req.headers[name];
      if (typeof v === 'string') headers[name] = v;
    }
    try {
      const upstream = await fetch(new URL(req.url ?? '/', target), {
        method: req.method ?? 'GET',
        headers,
        ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
      });
      const out: Record<string, string> = {};
      upstream.headers.forEach((v, k) => {
        if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(k))
          out[k] = v;
      });
      const body = Buffer.from(await upstream.arrayBuffer());
      res.writeHead(upstream.status, out);
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch {
      res.writeHead(502).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  Object.assign(proxy, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  });
  return proxy;
}

/** One gzip member per MiB (concatenated members are one valid gzip stream), written with backpressure. */
async function sendBomb(
  res: http.ServerResponse,
  bytes: number,
  prefix: string | undefined,
  sent: (n: number) => void,
): Promise<void> {
  const MiB = 1024 * 1024;
  const filler = zlib.gzipSync(Buffer.alloc(MiB, prefix === undefined ? 0 : 0x20), { level: 9 });
  if (prefix !== undefined) {
    const head = zlib.gzipSync(Buffer.from(prefix));
    res.write(head);
    sent(head.length);
  }
  for (let done = 0; done < bytes && !res.destroyed; done += MiB) {
    sent(filler.length);
    if (!res.write(filler)) {
      await new Promise<void>((r) => {
        const go = () => {
          res.off('drain', go).off('close', go);
          r();
        };
        res.on('drain', go).on('close', go);
      });
    }
  }
  res.end();
}

type Emulator = Awaited<ReturnType<typeof setup>>['emu'];

/** An emulator (`emulatorOptions`), a client with `clientOptions`, and one that never asks for compression. */
async function pair(
  emulatorOptions: Parameters<typeof setup>[0] = {},
  clientOptions: ConstructorParameters<typeof DatasetClient>[0] = {},
): Promise<{ emu: Emulator; client: DatasetClient; plain: DatasetClient }> {
  const { emu, client } = await setup(
    { seed: 1, rowCap: 3000, ...emulatorOptions },
    { retry: false, ...clientOptions },
  );
  const plain = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey, compression: false });
  onTestFinished(() => plain.close());
  return { emu, client, plain };
}

/** The same query's Arrow IPC bytes and rows read through `client`. */
async function read(client: DatasetClient, format: 'json' | 'csv' = 'json') {
  const result = await client.query('job_listings', {}, STREAM_READS);
  const ipc = await ipcBytes(result.stream({ pageSize: 700, concurrency: 2, format }));
  const rows = await result.toArray({ pageSize: 1100, format });
  return { ipc, rows };
}

/** `query()` reads only one row itself: the result's pages are all read by its streams. */
const STREAM_READS = { firstPageRows: 1 };

/** The emulator's `encoding` fault on result pages only. */
const onPages =
  (fault: { encodeWith: 'identity' | 'gzip'; contentEncoding?: string }) =>
  (r: { method: string; path: string; query: Readonly<Record<string, string>> }) =>
    isPage(r) ? ({ kind: 'encoding', ...fault } as const) : undefined;

describe('compressed transfer', () => {
  it('asks for every coding the runtime decodes (zstd only where zlib has it), and identity when off', async () => {
    expect(SUPPORTED_CODINGS.includes('zstd')).toBe(
      typeof (zlib as { createZstdDecompress?: unknown }).createZstdDecompress === 'function',
    );
    for (const [compression, want] of [
      [true, SUPPORTED_CODINGS.join(', ')],
      [false, 'identity'],
      [['br', 'gzip'], 'br, gzip'],
    ] as const) {
      const { emu, client } = await pair({}, { compression });
      await client.listDatasets();
      // Read whole by query() (3000 rows is one page), then by a stream.
      const result = await client.query('job_listings', {});
      await result.toArray({ pageSize: 1000 });
      expect(emu.requests.filter(isPage).length).toBe(4);
      for (const r of emu.requests) expect(r.acceptEncoding).toBe(want);
      if (compression !== false)
        expect(emu.requests.filter(isPage).every((r) => r.encoding !== null)).toBe(true);
    }
  });

  it.each(SUPPORTED_CODINGS)(
    'reads %s pages from the emulator into the same tables as plain ones, JSON and CSV',
    async (coding) => {
      const { emu, client, plain } = await pair(
        { compression: { codings: [coding] } },
        { compression: true },
      );
      const want = await read(plain);
      const compressed = await read(client);
      expect(compressed.rows).toEqual(want.rows);
      expect(compressed.ipc.equals(want.ipc)).toBe(true);
      const csv = await read(client, 'csv');
      expect(csv.rows).toEqual(want.rows);
      const pages = emu.requests.filter(isPage);
      expect(pages.filter((r) => r.encoding === coding).length).toBeGreaterThan(8);
      expect(pages.filter((r) => r.encoding === null).length).toBe(
        pages.filter((r) => r.acceptEncoding === 'identity').length,
      );
    },
  );

  it('inflates a body compressed unasked (compression: false), JSON endpoints included', async () => {
    const { emu, client, plain } = await pair(
      { fault: (r) => (r.method === 'GET' ? { kind: 'encoding', encodeWith: 'gzip' } : undefined) },
      { compression: false },
    );
    const want = await read(plain);
    expect((await client.listDatasets()).length).toBeGreaterThan(0);
    const unasked = await read(client);
    expect(unasked.ipc.equals(want.ipc)).toBe(true);
    expect(unasked.rows).toEqual(want.rows);
    expect(emu.requests.every((r) => r.acceptEncoding === 'identity')).toBe(true);
    expect(emu.requests.filter((r) => r.encoding === 'gzip').length).toBeGreaterThan(10);
  });

  it('progress counts decoded bytes, the same as a plain read', async () => {
    const { client, plain } = await pair({}, { compression: true });
    const bytesOf = async (c: DatasetClient) => {
      const stream = (await c.query('job_listings', {}, STREAM_READS)).stream({ pageSize: 1000 });
      let last = 0;
      stream.on('progress', (e: { bytes: number }) => {
        last = e.bytes;
      });
      for await (const _ of stream);
      return last;
    };
    expect(await bytesOf(client)).toBe(await bytesOf(plain));
  });

  it("publishes each page's codings, wire and decoded bytes and timings on 'dqs-client:page'", async () => {
    const { client } = await pair({}, { compression: ['gzip'] });
    const pages: PageTiming[] = [];
    const listener = (m: unknown) => pages.push(m as PageTiming);
    subscribe('dqs-client:page', listener);
    try {
      const result = await client.query('job_listings', {}, STREAM_READS);
      await result.toTable({ pageSize: 1000 });
    } finally {
      unsubscribe('dqs-client:page', listener);
    }
    expect(pages.map((p) => p.start).sort((a, b) => a - b)).toEqual([1, 1001, 2001]);
    for (const p of pages) {
      expect(p.codings).toEqual(['gzip']);
      // job_listings table JSON gzips ~7x at level 1
      expect(p.wireBytes).toBeLessThan(p.bytes / 3);
      expect(p.waitMs).toBeGreaterThanOrEqual(0);
      expect(p.bodyMs).toBeGreaterThanOrEqual(0);
      expect(p.decodeMs).toBeGreaterThanOrEqual(0);
    }
  });

  it("'auto' asks the first result page plain and the second compressed, JSON answers always", async () => {
    const { emu, client } = await pair();
    const result = await client.query('job_listings', {}, STREAM_READS);
    await result.toTable({ pageSize: 300, concurrency: 1 });
    const gets = emu.requests.filter(isPage).map((r) => r.acceptEncoding);
    expect(gets.length).toBe(10);
    expect(gets[0]).toBe('identity');
    expect(gets[1]).toBe(SUPPORTED_CODINGS.join(', '));
    // JSON answers always ask: they are small, and a front end may compress them anyway.
    const json = emu.requests.filter((r) => !isPage(r)).map((r) => r.acceptEncoding);
    expect(new Set(json)).toEqual(new Set([SUPPORTED_CODINGS.join(', ')]));
    expect(client.http.compressionMeasured).toHaveProperty('plain');
    expect(client.http.compressionMeasured).toHaveProperty('compressed');
  });

  it('the measured choice keeps the cheaper way and retries the other ever less often', () => {
    const run = (onMsPerMB: number, offMsPerMB: number, pages: number) => {
      const choice = new CompressionChoice();
      const asked: boolean[] = [];
      for (let i = 0; i < pages; i++) {
        const on = choice.next();
        asked.push(on);
        choice.record(on, 4_000_000, 4 * (on ? onMsPerMB : offMsPerMB));
      }
      return asked;
    };
    // A slow link: compressed 12 ms/MB against 80 plain. The first two measurements differ by more than
    // 4x: the first retry of plain comes after 64 pages, not 16.
    const slow = run(12, 80, 500);
    expect(slow.slice(0, 2)).toEqual([false, true]);
    const plainPages = slow.map((on, i) => (on ? -1 : i)).filter((i) => i >= 0);
    expect(plainPages).toEqual([0, 65, 321]);
    // A loser within 4x at first is retried at the usual gaps (16, then x4 as it lost by more than 2x).
    const mid = run(12, 36, 500);
    expect(mid.map((on, i) => (on ? -1 : i)).filter((i) => i >= 0)).toEqual([0, 17, 81, 337]);
    // Loopback, where compressing costs more than it saves: plain, with rare compressed tries.
    // The loser was within 2x: retried at gaps doubling from 16.
    const fast = run(3, 2, 500);
    expect(fast.map((on, i) => (on ? i : -1)).filter((i) => i >= 0)).toEqual([1, 17, 49, 113, 241, 497]);
    // Compression a clear loss (a server whose gzip is slow): retried after 64 pages, then 256.
    const clearLoss = run(20, 2, 500);
    expect(clearLoss.map((on, i) => (on ? i : -1)).filter((i) => i >= 0)).toEqual([1, 65, 321]);
    // A plain page measured before any compressed one (a fast link: the compressed one is slow on the
    // way, or failed) asks plain, with one compressed page every 32 requests until one is measured: no
    // second compressed page while the first is on its way (on loopback it takes 300-500 ms while the
    // limit climbs), and compression is not locked out should it have failed.
    const early = new CompressionChoice();
    expect([early.next(), early.next(), early.next()]).toEqual([false, true, true]);
    early.record(false, 4_000_000, 400);
    const next32 = Array.from({ length: 32 }, () => early.next());
    expect(next32.map((on, i) => (on ? i : -1)).filter((i) => i >= 0)).toEqual([31]);
    // On a slow link the compressed page comes back first: compressed pages, and one plain try.
    const slowFirst = new CompressionChoice();
    expect([slowFirst.next(), slowFirst.next()]).toEqual([false, true]);
    slowFirst.record(true, 4_000_000, 40);
    expect(Array.from({ length: 4 }, () => slowFirst.next())).toEqual([true, true, true, true]);
    early.record(true, 4_000_000, 100);
    expect(early.next()).toBe(true);
    // Bodies under 64 KiB are not measured: they would time round trips, not bytes.
    const small = new CompressionChoice();
    small.next();
    small.record(true, 1000, 50);
    expect(small.measured).toEqual({});
  });

  it("judges how clearly a way lost on each way's best page, not on averages a busy event loop inflates", () => {
    // Loopback: plain pages measured while the event loop was busy decoding others (50 ms/MB beside
    // 1 ms/MB when it was free) must not make gzip (65 ms/MB) look like a near loss: judged on each way's
    // best page it lost 65-fold, so it is retried 64 pages on, not 16 (a 46-page export asked gzip
    // two or three times when averages decided, once since).
    const busy = new CompressionChoice();
    expect([busy.next(), busy.next()]).toEqual([false, true]);
    busy.record(false, 4_000_000, 4);
    const asked: boolean[] = [];
    for (let i = 0; i < 2; i++) {
      asked.push(busy.next());
      busy.record(false, 4_000_000, 200);
    }
    busy.record(true, 4_000_000, 260);
    expect(busy.measured.plain).toBeGreaterThan(20); // the average: 26 ms/MB, within 4x of gzip's 65
    for (let i = 0; i < 200; i++) {
      const on = busy.next();
      asked.push(on);
      busy.record(on, 4_000_000, on ? 260 : 200);
    }
    expect(asked.map((on, i) => (on ? i + 2 : -1)).filter((i) => i >= 0)).toEqual([67]);
    // Best pages that disagree with the averages are no clear loss. Plain's first page (10 ms/MB) beats
    // compressed (15), then plain runs at 100 ms/MB: compressed wins on average, but plain's best page
    // was the better one, so plain is retried at the usual gaps (16, then x2; on averages, x4: 17, 81).
    const mixed = new CompressionChoice();
    expect([mixed.next(), mixed.next()]).toEqual([false, true]);
    mixed.record(false, 4_000_000, 40);
    mixed.record(true, 4_000_000, 60);
    const mixedAsked: boolean[] = [];
    for (let i = 0; i < 60; i++) {
      const on = mixed.next();
      mixedAsked.push(on);
      mixed.record(on, 4_000_000, on ? 60 : 400);
    }
    expect(mixedAsked.map((on, i) => (on ? -1 : i + 2)).filter((i) => i >= 0)).toEqual([2, 17, 49]);
  });

  it('a lying Content-Encoding (says gzip, sends plain) is a ContentEncodingError naming the coding and the request', async () => {
    for (const coding of ['gzip', 'br', 'deflate']) {
      const { client } = await pair({ fault: onPages({ encodeWith: 'identity', contentEncoding: coding }) });
      // query() reading the whole small result, then streams reading pages.
      const whole = await expectRejects<ContentEncodingError>(client.query('job_listings', {}), () => {});
      expect(whole).toBeInstanceOf(ContentEncodingError);
      expect(whole.message).toContain(`Content-Encoding says ${coding} but the body is not ${coding} data`);
      const result = await client.query('job_listings', {}, STREAM_READS);
      for (const format of ['json', 'csv'] as const) {
        const err = await expectRejects<ContentEncodingError>(
          result.toArray({ pageSize: 1000, format }),
          () => {},
        );
        expect(err).toBeInstanceOf(ContentEncodingError);
        expect(err.code).toBe('DQS_PROTOCOL');
        expect(err.encoding).toBe(coding);
        expect(err.message).toContain(`Content-Encoding says ${coding} but the body is not ${coding} data`);
        expect(err.message).toMatch(
          /\(GET http:\/\/127\.0\.0\.1:\d+\/datasets\/job_listings\/query\/[0-9a-f]{64}\?/,
        );
        expect(err.page).toEqual({ start: 1, limit: 1000 });
      }
    }
  });

  it('a body that ends inside its compressed data is a ContentEncodingError, not rows', async () => {
    // Claims gzip twice, was gzipped once: the outer gunzip gives plain JSON to the inner one.
    const { client } = await pair({ fault: onPages({ encodeWith: 'gzip', contentEncoding: 'gzip, gzip' }) });
    const result = await client.query('job_listings', {}, STREAM_READS);
    const err = await expectRejects<ContentEncodingError>(result.toArray({ pageSize: 1000 }), () => {});
    expect(err).toBeInstanceOf(ContentEncodingError);
    expect(err.message).toContain('Content-Encoding says gzip, gzip but the body is not gzip, gzip data');
  });

  it('an unknown Content-Encoding is a ContentEncodingError before any byte is decoded, JSON endpoints too', async () => {
    const { client } = await pair({
      fault: () => ({ kind: 'encoding', encodeWith: 'identity', contentEncoding: 'x-snappy' }),
    });
    const err = await expectRejects<ContentEncodingError>(client.listDatasets(), () => {});
    expect(err).toBeInstanceOf(ContentEncodingError);
    expect(err.encoding).toBe('x-snappy');
    expect(err.message).toContain('Content-Encoding "x-snappy" cannot be decoded here');
    expect(err.message).toContain(`the request asked for ${SUPPORTED_CODINGS.join(', ')}`);
    expect(err.message).toContain('GET http://127.0.0.1');
  });

  it('property: any Content-Encoding header is decoded or refused with a typed error, never a crash', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.constantFrom(
            'gzip',
            'GZIP',
            ' gzip ',
            'identity',
            'gzip, identity',
            'x-gzip',
            'gzip,gzip,gzip,gzip',
            '',
          ),
          fc.string({ maxLength: 12 }).filter((s) => /^[\x21-\x7e ]*$/.test(s)),
        ),
        async (header) => {
          const server = http.createServer((_req, res) => {
            const body = Buffer.from('{"datasets":[{"id":"d"}]}');
            const codings = header
              .split(',')
              .map((c) => c.trim().toLowerCase())
              .filter((c) => c && c !== 'identity');
            const gz = codings.every((c) => c === 'gzip' || c === 'x-gzip');
            const encoded = gz ? codings.reduce((b) => zlib.gzipSync(b), body) : body;
            res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': header });
            res.end(encoded);
          });
          await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
          const client = new DatasetClient({
            baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
            retry: false,
          });
          try {
            const list = await client.listDatasets();
            expect(list).toEqual([{ id: 'd' }]);
          } catch (err) {
            expect(err).toBeInstanceOf(DqsError);
            expect(err).toBeInstanceOf(ContentEncodingError);
          } finally {
            await client.close();
            server.closeAllConnections();
            await new Promise((r) => server.close(r));
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('validates the `compression` option', () => {
    for (const bad of ['gzip', [], ['lz4'], 1, null]) {
      expect(() => new DatasetClient({ baseUrl: 'http://127.0.0.1:1/', compression: bad as never })).toThrow(
        InvalidArgumentError,
      );
    }
    expect(
      () => new DatasetClient({ baseUrl: 'http://127.0.0.1:1/', compression: ['lz4' as never] }),
    ).toThrow(
      /Expected `?compression`?|Invalid `compression`: Expected true, false, 'auto' or a non-empty list of 'gzip'/,
    );
  });
});

describe('compression bombs', () => {
  async function viaBomb(bomb: Bomb, clientOptions: ConstructorParameters<typeof DatasetClient>[0] = {}) {
    const { emu } = await setup({ seed: 1, rowCap: 3000 });
    const proxy = await bombProxy(emu.url, bomb);
    onTestFinished(() => proxy.close());
    const client = new DatasetClient({
      baseUrl: proxy.url,
      apiKey: emu.apiKey,
      retry: false,
      ...clientOptions,
    });
    onTestFinished(() => client.close());
    return { proxy, client };
  }

  /** Runs `fn`, sampling RSS every 5 ms: the peak above the RSS at the start. */
  async function rssGrowth(fn: () => Promise<unknown>): Promise<number> {
    const before = process.memoryUsage.rss();
    let peak = before;
    const timer = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss());
    }, 5);
    try {
      await fn();
    } finally {
      clearInterval(timer);
    }
    return Math.max(peak, process.memoryUsage.rss()) - before;
  }

  it('2 GiB of gzipped zeros, default limits: ResponseTooLargeError as a bomb, early, memory bounded', async () => {
    const t = await viaBomb({ bytes: 2 * 1024 ** 3 });
    const result = await t.client.query('job_listings', {}, STREAM_READS);
    let err: unknown;
    const growth = await rssGrowth(async () => {
      err = await result.toTable({ pageSize: 3000 }).catch((e: unknown) => e);
    });
    expect(err).toBeInstanceOf(ResponseTooLargeError);
    expect((err as Error).message).toContain('refused as a compression bomb');
    // Stopped at the first chunk past 32 MiB (the whole bomb is only ~2 MB of gzip, which the sockets'
    // buffers may take in full: what shows the stop is how much was inflated).
    const inflated = Number(/\((\d+) bytes from \d+\)/.exec((err as Error).message)?.[1]);
    expect(inflated).toBeGreaterThan(32 * 1024 * 1024);
    expect(inflated).toBeLessThanOrEqual(32 * 1024 * 1024 + 64 * 1024);
    expect(growth).toBeLessThan(200 * 1024 * 1024);
  });

  it('a valid JSON prefix then endless whitespace stops as soon as maxResponseBytes is crossed, JSON and CSV', async () => {
    const prefix = '{"start":1,"limit":3000,"count":3000,"total":3000,"fields":[],"rows":[';
    // Endless: the test ends only if the client hangs up.
    const t = await viaBomb(
      { bytes: Number.POSITIVE_INFINITY, prefix },
      { maxResponseBytes: 8 * 1024 * 1024 },
    );
    const result = await t.client.query('job_listings', {}, STREAM_READS);
    for (const format of ['json', 'csv'] as const) {
      t.proxy.bombBytesSent = 0;
      let err: unknown;
      const growth = await rssGrowth(async () => {
        err = await result.toArray({ pageSize: 3000, format }).catch((e: unknown) => e);
      });
      expect(err).toBeInstanceOf(ResponseTooLargeError);
      expect((err as Error).message).toContain(`body exceeds the limit of ${8 * 1024 * 1024} bytes`);
      // 8 MiB of spaces is ~8 KiB of gzip: what was sent beyond is what the sockets buffered.
      expect(t.proxy.bombBytesSent).toBeLessThan(8 * 1024 * 1024);
      await expect.poll(() => t.proxy.bombsEnded).toBe(t.proxy.bombsStarted);
      expect(growth).toBeLessThan(200 * 1024 * 1024);
    }
  });
});
