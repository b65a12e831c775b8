/**
 * Reliability of a result stream against the emulator's fault injection: the 429 step-down, resume from a
 * checkpoint, response-size limits, typed errors through the stream. Retries are in transport-retry.test.ts,
 * the rate limiter in transport-rate-limit.test.ts. Every test talks to a real server on 127.0.0.1.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RecordBatch } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { queryRows } from '../src/emulator/index.js';
import {
  AuthenticationError,
  BadRequestError,
  DatasetClient,
  type DqsError,
  MediaType,
  NotFoundError,
  type ProgressEvent,
  ResponseTooLargeError,
  type RetryEvent,
  ServerError,
} from '../src/index.js';
import { collectRows, expectRejects, FAST_RETRY, isPageGet, kindOf, retriesOf, setup } from './helpers.js';

describe('429 step-down', () => {
  it("halves the stream's concurrency on each 429 and earns it back as pages succeed", async () => {
    const throttled = new Set(['3001', '4001']);
    const { client } = await setup(
      {
        rowCap: 40_000,
        fault: (r) => {
          if (!isPageGet(r) || !throttled.has(r.query.start ?? '')) return undefined;
          throttled.delete(r.query.start!);
          return { kind: 'status', status: 429, headers: { 'Retry-After': '0' } };
        },
      },
      { retry: FAST_RETRY },
    );
    const stream = client.stream('job_listings', {}, { pageSize: 1000, concurrency: 4 });
    const seen: number[] = [];
    const streamRetries: RetryEvent[] = [];
    stream.on('retry', (e: RetryEvent) => streamRetries.push(e));
    stream.on('progress', () => seen.push(stream.concurrency));
    expect(stream.concurrency).toBe(4);
    expect(await collectRows(stream)).toBe(40_000);
    expect(streamRetries.map((e) => kindOf(e.error))).toEqual(['429', '429']);
    expect(Math.min(...seen)).toBeLessThanOrEqual(2);
    expect(seen.at(-1)).toBe(4);
  });
});

describe('resume', () => {
  it('a failed download resumes from the error checkpoint: no row lost or read twice (regression: slow consumer)', async () => {
    // The checkpoint used to count rows pushed into the stream's buffer; a failing stream drops that
    // buffer, so a slow consumer resumed past rows it never got.
    let failing = true;
    const { client, emu } = await setup(
      {
        rowCap: 20_000,
        fault: (r) =>
          failing && isPageGet(r) && r.query.start === '10001' ? { kind: 'status', status: 503 } : undefined,
      },
      { retry: { retries: 1, ...FAST_RETRY } },
    );
    const stream = client.stream('job_listings', {}, { pageSize: 1000, concurrency: 4 });
    const progress: ProgressEvent[] = [];
    stream.on('progress', (e: ProgressEvent) => progress.push(e));
    let got = 0;
    const err = await expectRejects<ServerError>(
      (async () => {
        for await (const b of stream) {
          got += (b as RecordBatch).numRows;
          await new Promise((r) => setTimeout(r, 15));
        }
      })(),
      (e) => expect(e).toBeInstanceOf(ServerError),
    );
    // Pages up to 10,000 were fetched, but what sat in the stream's buffer died with it: the checkpoint
    // is the first row the consumer did not get, whatever that is.
    expect(got).toBeGreaterThan(0);
    expect(got).toBeLessThanOrEqual(10_000);
    expect(err.checkpoint).toEqual({
      datasetId: 'job_listings',
      queryId: stream.source!.id,
      nextRow: got + 1,
    });
    expect(stream.checkpoint).toEqual(err.checkpoint);
    // Progress never claims more than the consumer read.
    expect(progress.at(-1)!.checkpoint.nextRow).toBeLessThanOrEqual(got + 1);

    failing = false;
    emu.resetRequests();
    // The documented way back in: the query by its id, which reads one row for its descriptors.
    const result = await client.result('job_listings', err.checkpoint!.queryId);
    // A request the transport retried (a connection reset on a loaded machine) asks its page again,
    // with no row read twice: only such pages may appear twice below, and the retries say why.
    const retried = retriesOf(client);
    // No hedged requests: on a loaded machine one would ask a slow page twice, by design, and the
    // count below is of requests.
    const rest = await result.toArray({ startRow: err.checkpoint!.nextRow, pageSize: 1000, hedge: false });
    expect(got + rest.length).toBe(20_000);
    const pageStarts = emu.requests.filter(isPageGet).map((r) => Number(r.query.start));
    expect(Math.min(...pageStarts)).toBe(got + 1);
    expect(
      new Set(pageStarts).size,
      `pages asked twice: ${JSON.stringify(pageStarts)}; retries: ${retried.map((e) => `${e.what}: ${e.error.message}`).join('; ')}`,
    ).toBe(pageStarts.length - retried.length);
    const [first] = queryRows('job_listings', {}, { rowCap: 20_000 }, got + 1, 1);
    expect(Object.values(rest[0]!)[0]).toBe(first![0]);
  });

  it('progress events come once the page has been read, with a checkpoint to resume from', async () => {
    const { client } = await setup({ rowCap: 3000 });
    const stream = client.stream('job_listings', {}, { pageSize: 1000, batchSize: 400 });
    const events: ProgressEvent[] = [];
    let read = 0;
    stream.on('progress', (e: ProgressEvent) => {
      events.push(e);
      expect(e.rows).toBeLessThanOrEqual(read + 400);
    });
    for await (const b of stream) read += (b as RecordBatch).numRows;
    expect(events.map((e) => [e.rows, e.pages, e.checkpoint.nextRow])).toEqual([
      [1000, 1, 1001],
      [2000, 2, 2001],
      [3000, 3, 3001],
    ]);
  });
});

describe('response size limits', () => {
  it('a page over maxResponseBytes is a ResponseTooLargeError, in JSON and in CSV', async () => {
    const { client } = await setup({ rowCap: 5000 }, { maxResponseBytes: 100_000 });
    const result = await client.query('job_listings', {});
    await expectRejects<ResponseTooLargeError>(
      client.readPage('job_listings', result.id, { start: 1, limit: 5000 }),
      (e) => {
        expect(e).toBeInstanceOf(ResponseTooLargeError);
        expect(e.code).toBe('DQS_RESPONSE_TOO_LARGE');
        expect(e.maxBytes).toBe(100_000);
      },
    );
    for (const format of ['json', 'csv'] as const) {
      await expectRejects<ResponseTooLargeError>(result.toTable({ format, pageSize: 5000 }), (e) => {
        expect(e.code).toBe('DQS_RESPONSE_TOO_LARGE');
        expect(e.page).toEqual({ start: 1, limit: 5000 });
      });
    }
    // Small pages fit.
    expect((await result.toTable({ pageSize: 100 })).numRows).toBe(5000);
  });

  it('a hostile server streaming an endless body costs a typed error, not the memory', async () => {
    const handle = { id: 'f'.repeat(64), state: 'complete', total: 10, formats: [MediaType.csv] };
    const headers = {
      'x-state': 'complete',
      'x-total': '10',
      'x-truncated': 'false',
      'x-formats': MediaType.csv,
    };
    // A valid CSV (header `a`, then rows `x`) that never ends: the decoder would happily keep every row.
    const chunk = Buffer.from('x\r\n'.repeat(20_000));
    let sent = 0;
    const server: Server = createServer((req, res) => {
      res.on('error', () => {});
      if (req.method === 'POST') return res.end(JSON.stringify(handle));
      if (req.method === 'HEAD') return res.writeHead(200, headers).end();
      if (req.url?.includes('/datasets/x') && !req.url.includes('/query/')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ id: 'x', fields: [{ id: 'a', type: 'string' }] }));
      }
      // Everything else: no Content-Length, and a body that never ends.
      res.writeHead(200, { ...headers, 'content-type': 'text/csv' });
      res.write('a\r\n');
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) sent += chunk.length;
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = new DatasetClient({ baseUrl: url, apiKey: 'k', maxResponseBytes: 2_000_000 });
    try {
      await expectRejects<ResponseTooLargeError>(client.listDatasets(), (e) =>
        expect(e.code).toBe('DQS_RESPONSE_TOO_LARGE'),
      );
      await expectRejects<ResponseTooLargeError>(client.stream('x', {}, { format: 'csv' }).toArray(), (e) =>
        expect(e.code).toBe('DQS_RESPONSE_TOO_LARGE'),
      );
      expect(sent).toBeLessThan(50_000_000);
    } finally {
      await client.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('typed errors stay typed through the stream', () => {
  it('an unknown dataset, a wrong key and a refused version end a stream with their class', async () => {
    const { emu } = await setup();
    const cases: [DatasetClient, string, new (...a: never[]) => DqsError][] = [
      [new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey }), 'no_such_dataset', NotFoundError],
      [new DatasetClient({ baseUrl: emu.url, apiKey: 'wrong' }), 'job_listings', AuthenticationError],
      [
        new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey, apiVersion: '20000101' }),
        'job_listings',
        BadRequestError,
      ],
    ];
    for (const [client, dataset, Class] of cases) {
      await expectRejects<DqsError>(client.stream(dataset, {}).toArray(), (e) =>
        expect(e).toBeInstanceOf(Class),
      );
      await client.close();
    }
  });
});
