/**
 * Compressed transfer: what the client asks for, what it does with whatever arrives (asked or not, lying,
 * unknown), and that inflating cannot run it out of memory. A small proxy in front of the emulator plays
 * the front end (nginx, a CDN) that compresses, or misbehaves; every test talks HTTP on 127.0.0.1.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as zlib from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
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

type Mode =
  /** Compresses with the first coding the request accepts, as a front end does. */
  | { kind: 'negotiate' }
  /** Compresses every answer with `coding`, asked or not. */
  | { kind: 'always'; coding: string }
  /** Says `Content-Encoding: <coding>` on result pages and sends them plain. */
  | { kind: 'lie'; coding: string }
  /** Result pages: a gzip stream of `bytes` zeros, or of `prefix` then spaces. */
  | { kind: 'bomb'; bytes: number; prefix?: string };

const ENCODERS: Record<string, (b: Buffer) => Buffer> = {
  gzip: (b) => zlib.gzipSync(b, { level: 1 }),
  deflate: (b) => zlib.deflateSync(b, { level: 1 }),
  br: (b) => zlib.brotliCompressSync(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }),
  ...((zlib as unknown as { zstdCompressSync?: (b: Buffer) => Buffer }).zstdCompressSync
    ? {
        zstd: (b: Buffer) =>
          (zlib as unknown as { zstdCompressSync: (b: Buffer) => Buffer }).zstdCompressSync(b),
      }
    : {}),
};

const isPage = (url: string) => /\/query\/[0-9a-f]{64}\?/.test(url) && !/[?&]limit=1(&|$)/.test(url);

interface Proxy {
  readonly url: string;
  /** `Accept-Encoding` of every request seen, in order, with its path. */
  readonly seen: { path: string; acceptEncoding: string | undefined }[];
  /** Bytes written to the socket for bomb bodies. */
  bombBytesSent: number;
  bombsStarted: number;
  /** Bomb bodies whose writing ended (the client hung up, or all was written). */
  bombsEnded: number;
  close(): Promise<void>;
}

/** A front end before `target`: forwards every request (asking the emulator for plain bodies) and encodes the answer by `mode`. */
async function frontEnd(target: string, mode: Mode): Promise<Proxy> {
  const seen: Proxy['seen'] = [];
  const proxy: Proxy = {
    url: '',
    seen,
    bombBytesSent: 0,
    bombsStarted: 0,
    bombsEnded: 0,
    close: async () => {},
  };
  const server = http.createServer(async (req, res) => {
    seen.push({ path: req.url ?? '', acceptEncoding: req.headers['accept-encoding'] });
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers: Record<string, string> = { 'accept-encoding': 'identity' };
    for (const name of ['authorization', 'x-api-version', 'accept', 'content-type']) {
      const v = req.headers[name];
      if (typeof v === 'string') headers[name] = v;
    }
    let upstream: Response;
    try {
      upstream = await fetch(new URL(req.url ?? '/', target), {
        method: req.method ?? 'GET',
        headers,
        ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
      });
    } catch {
      res.writeHead(502).end();
      return;
    }
    const body = Buffer.from(await upstream.arrayBuffer());
    const out: Record<string, string> = {};
    upstream.headers.forEach((v, k) => {
      if (
        k !== 'content-length' &&
        k !== 'content-encoding' &&
        k !== 'transfer-encoding' &&
        k !== 'connection'
      )
        out[k] = v;
    });
    const page = isPage(req.url ?? '') && upstream.status === 200;
    if (mode.kind === 'bomb' && page) {
      res.writeHead(200, { ...out, 'content-encoding': 'gzip' });
      proxy.bombsStarted++;
      await sendBomb(res, mode.bytes, mode.prefix, (n) => {
        proxy.bombBytesSent += n;
      });
      proxy.bombsEnded++;
      return;
    }
    let coding: string | undefined;
    if (mode.kind === 'always') coding = mode.coding;
    if (mode.kind === 'negotiate') {
      const accepted = String(req.headers['accept-encoding'] ?? '')
        .split(',')
        .map((c) => c.trim());
      coding = accepted.find((c) => c in ENCODERS);
    }
    if (mode.kind === 'lie' && page) {
      res.writeHead(upstream.status, { ...out, 'content-encoding': mode.coding });
      res.end(body);
      return;
    }
    if (coding && req.method !== 'HEAD' && body.length > 0) {
      const encode = ENCODERS[coding];
      const encoded = encode ? encode(body) : body;
      res.writeHead(upstream.status, {
        ...out,
        'content-encoding': coding,
        'content-length': encoded.length,
      });
      res.end(encoded);
      return;
    }
    res.writeHead(upstream.status, out);
    res.end(req.method === 'HEAD' ? undefined : body);
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

async function viaFrontEnd(mode: Mode, clientOptions: ConstructorParameters<typeof DatasetClient>[0] = {}) {
  const { emu } = await setup({ seed: 1, rowCap: 3000 });
  const proxy = await frontEnd(emu.url, mode);
  const client = new DatasetClient({
    baseUrl: proxy.url,
    apiKey: emu.apiKey,
    retry: false,
    ...clientOptions,
  });
  const plain = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey, compression: false });
  return {
    proxy,
    client,
    plain,
    close: async () => {
      await client.close();
      await plain.close();
      await proxy.close();
    },
  };
}

/** The same query's Arrow IPC bytes and rows read through `client`. */
async function read(client: DatasetClient, format: 'json' | 'csv' = 'json') {
  const result = await client.query('job_listings', {});
  const ipc = await ipcBytes(result.stream({ pageSize: 700, concurrency: 2, format }));
  const rows = await result.toArray({ pageSize: 1100, format });
  return { ipc, rows };
}

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
      const t = await viaFrontEnd({ kind: 'negotiate' }, { compression });
      try {
        await t.client.listDatasets();
        const result = await t.client.query('job_listings', {});
        await result.toArray({ pageSize: 1000 });
        const gets = t.proxy.seen.filter((s) => isPage(s.path));
        expect(gets.length).toBe(3);
        for (const s of t.proxy.seen) expect(s.acceptEncoding).toBe(want);
      } finally {
        await t.close();
      }
    }
  });

  it.each(Object.keys(ENCODERS))(
    'reads %s pages into the same tables as plain ones, JSON and CSV',
    async (coding) => {
      const t = await viaFrontEnd({ kind: 'negotiate' }, { compression: [coding as 'gzip'] });
      try {
        const plain = await read(t.plain);
        const compressed = await read(t.client);
        expect(compressed.rows).toEqual(plain.rows);
        expect(compressed.ipc.equals(plain.ipc)).toBe(true);
        const csv = await read(t.client, 'csv');
        expect(csv.rows).toEqual(plain.rows);
        const gets = t.proxy.seen.filter((s) => isPage(s.path));
        expect(gets.length).toBeGreaterThan(4);
      } finally {
        await t.close();
      }
    },
  );

  it('inflates a body compressed unasked (compression: false), JSON endpoints included', async () => {
    const t = await viaFrontEnd({ kind: 'always', coding: 'gzip' }, { compression: false });
    try {
      expect((await t.client.listDatasets()).length).toBeGreaterThan(0);
      const plain = await read(t.plain);
      const unasked = await read(t.client);
      expect(unasked.ipc.equals(plain.ipc)).toBe(true);
      expect(t.proxy.seen.every((s) => s.acceptEncoding === 'identity')).toBe(true);
    } finally {
      await t.close();
    }
  });

  it('reports decoded and wire bytes of compressed pages apart (progress counts decoded bytes)', async () => {
    const t = await viaFrontEnd({ kind: 'negotiate' }, { compression: true });
    try {
      const plainResult = await t.plain.query('job_listings', {});
      const result = await t.client.query('job_listings', {});
      const bytesOf = async (stream: NodeJS.EventEmitter & AsyncIterable<unknown>) => {
        let last = 0;
        stream.on('progress', (e: { bytes: number }) => {
          last = e.bytes;
        });
        for await (const _ of stream);
        return last;
      };
      const plainBytes = await bytesOf(plainResult.stream({ pageSize: 1000 }));
      const decoded = await bytesOf(result.stream({ pageSize: 1000 }));
      expect(decoded).toBe(plainBytes);
    } finally {
      await t.close();
    }
  });

  it("publishes each page's codings, wire and decoded bytes and timings on 'dqs-client:page'", async () => {
    const t = await viaFrontEnd({ kind: 'negotiate' }, { compression: ['gzip'] });
    const pages: PageTiming[] = [];
    const listener = (m: unknown) => pages.push(m as PageTiming);
    subscribe('dqs-client:page', listener);
    try {
      const result = await t.client.query('job_listings', {});
      await result.toTable({ pageSize: 1000 });
      expect(pages.map((p) => p.start).sort((a, b) => a - b)).toEqual([1, 1001, 2001]);
      for (const p of pages) {
        expect(p.codings).toEqual(['gzip']);
        // job_listings table JSON gzips ~7x at level 1
        expect(p.wireBytes).toBeLessThan(p.bytes / 3);
        expect(p.waitMs).toBeGreaterThanOrEqual(0);
        expect(p.bodyMs).toBeGreaterThanOrEqual(0);
        expect(p.decodeMs).toBeGreaterThanOrEqual(0);
      }
    } finally {
      unsubscribe('dqs-client:page', listener);
      await t.close();
    }
  });

  it("'auto' asks the first result page compressed and the second plain, then keeps measuring", async () => {
    const t = await viaFrontEnd({ kind: 'negotiate' });
    try {
      const result = await t.client.query('job_listings', {});
      await result.toTable({ pageSize: 300, concurrency: 1 });
      const gets = t.proxy.seen.filter((s) => isPage(s.path)).map((s) => s.acceptEncoding);
      expect(gets.length).toBe(10);
      expect(gets[0]).toBe(SUPPORTED_CODINGS.join(', '));
      expect(gets[1]).toBe('identity');
      // JSON answers always ask: they are small, and a front end may compress them anyway.
      const json = t.proxy.seen.filter((s) => !isPage(s.path)).map((s) => s.acceptEncoding);
      expect(new Set(json)).toEqual(new Set([SUPPORTED_CODINGS.join(', ')]));
      expect(t.client.http.compressionMeasured).toHaveProperty('plain');
      expect(t.client.http.compressionMeasured).toHaveProperty('compressed');
    } finally {
      await t.close();
    }
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
    // A slow link: compressed 12 ms/MB against 80 plain.
    const slow = run(12, 80, 500);
    expect(slow.slice(0, 2)).toEqual([true, false]);
    const plainPages = slow.map((on, i) => (on ? -1 : i)).filter((i) => i >= 0);
    expect(plainPages).toEqual([1, 17, 81, 337]);
    // Loopback, where compressing costs more than it saves: plain, with rare compressed tries.
    // The loser was within 2x: retried at gaps doubling from 16.
    const fast = run(3, 2, 500);
    expect(fast.map((on, i) => (on ? i : -1)).filter((i) => i >= 0)).toEqual([0, 17, 49, 113, 241, 497]);
    // Bodies under 64 KiB are not measured: they would time round trips, not bytes.
    const small = new CompressionChoice();
    small.next();
    small.record(true, 1000, 50);
    expect(small.measured).toEqual({});
  });

  it('a lying Content-Encoding (says gzip, sends plain) is a ContentEncodingError naming the coding and the request', async () => {
    for (const coding of ['gzip', 'br', 'deflate']) {
      const t = await viaFrontEnd({ kind: 'lie', coding });
      try {
        const result = await t.client.query('job_listings', {});
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
      } finally {
        await t.close();
      }
    }
  });

  it('an unknown Content-Encoding is a ContentEncodingError before any byte is decoded, JSON endpoints too', async () => {
    const t = await viaFrontEnd({ kind: 'always', coding: 'x-snappy' });
    try {
      const err = await expectRejects<ContentEncodingError>(t.client.listDatasets(), () => {});
      expect(err).toBeInstanceOf(ContentEncodingError);
      expect(err.encoding).toBe('x-snappy');
      expect(err.message).toContain('Content-Encoding "x-snappy" cannot be decoded here');
      expect(err.message).toContain('GET http://127.0.0.1');
    } finally {
      await t.close();
    }
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
    const t = await viaFrontEnd({ kind: 'bomb', bytes: 2 * 1024 ** 3 });
    try {
      const result = await t.client.query('job_listings', {});
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
    } finally {
      await t.close();
    }
  });

  it('a valid JSON prefix then endless whitespace stops as soon as maxResponseBytes is crossed, JSON and CSV', async () => {
    const prefix = '{"start":1,"limit":3000,"count":3000,"total":3000,"fields":[],"rows":[';
    const t = await viaFrontEnd(
      { kind: 'bomb', bytes: 2 * 1024 ** 3, prefix },
      { maxResponseBytes: 8 * 1024 * 1024 },
    );
    try {
      const result = await t.client.query('job_listings', {});
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
    } finally {
      await t.close();
    }
  });
});
