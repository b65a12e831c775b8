// Retries (src/transport/retry.ts, retry-after.ts): what is retried and how, backoff and Retry-After,
// cut bodies never decoded as short pages. Moved out of reliability.test.ts unchanged.
import { describe, expect, it } from 'vitest';
import { FIRST_PAGE_ROWS } from '../src/client.js';
import { type FaultKind, faultPlan } from '../src/emulator/index.js';
import { type DqsError, NetworkError, RateLimitedError, ServerError, TimeoutError } from '../src/index.js';
import { backoffDelay, normalizeRetryOptions, pacedRefusals } from '../src/transport/retry.js';
import { parseRetryAfter } from '../src/transport/retry-after.js';
import { expectRejects, FAST_RETRY, isPageGet, kindOf, retriesOf, setup } from './helpers.js';

const expectedKind = (k: FaultKind | 'custom') => (k === 'reset' || k === 'cut' ? 'network' : k);

describe('retries', () => {
  it('retries each transient failure once on GET, HEAD and the creating POST, each visible as an event', async () => {
    // Odd request numbers fail (one fault per call), the repeat succeeds; the 6th call meets two in a row.
    const plan = faultPlan({
      seed: 1,
      rate: 0,
      retryAfter: '0',
      at: {
        1: '429',
        3: '503',
        5: 'cut',
        7: 'reset',
        9: '500',
        11: '502',
        12: '504',
        14: 'reset',
        16: 'cut',
        18: 'latency',
        19: 'trickle',
      },
    });
    const { client, emu } = await setup({ fault: plan }, { retry: FAST_RETRY });
    const retries = retriesOf(client);
    const h = await client.createQuery('web_traffic', { tickers: ['nasdaq:aapl'] }); // 1 429, 2
    expect((await client.checkQuery('web_traffic', h.id)).state).toBe('complete'); // 3 503, 4
    const page = await client.readPage('web_traffic', h.id, { start: 1, limit: 50 }); // 5 cut, 6
    expect(page.rows).toHaveLength(50);
    expect((await client.listDatasets()).length).toBe(4); // 7 reset, 8
    expect((await client.getDataset('web_traffic')).id).toBe('web_traffic'); // 9 500, 10
    expect((await client.searchTickers('web_traffic', 'apple')).length).toBeGreaterThan(0); // 11, 12, 13
    expect((await client.checkQuery('web_traffic', h.id)).total).toBe(page.total); // 14 reset, 15
    expect((await client.createQuery('web_traffic', { tickers: ['nasdaq:aapl'] })).id).toBe(h.id); // 16 cut, 17
    await client.listDatasets(); // 18 latency: slow, not failed
    await client.listDatasets(); // 19 trickle: slow, not failed
    expect(emu.requests).toHaveLength(19);
    expect(plan.failures).toBe(9);
    expect(retries).toHaveLength(plan.failures);
    const failing = plan.log.filter((f) => f.kind !== 'latency' && f.kind !== 'trickle');
    expect(retries.map((e) => kindOf(e.error))).toEqual(failing.map((f) => expectedKind(f.kind)));
    expect(retries.map((e) => e.what.split(' ')[0])).toEqual(failing.map((f) => f.method));
    // The second of two failures in a row is attempt 2.
    expect(retries.map((e) => e.attempt)).toEqual([1, 1, 1, 1, 1, 1, 2, 1, 1]);
  });

  it('does not retry what cannot succeed: 400, 401, 404, 406, 409', async () => {
    for (const status of [400, 401, 404, 406, 409]) {
      const { client, emu } = await setup(
        { fault: faultPlan({ seed: 1, rate: 0, at: { 1: { kind: 'status', status } } }) },
        { retry: FAST_RETRY },
      );
      const retries = retriesOf(client);
      const err = await expectRejects<DqsError>(client.listDatasets(), () => {});
      expect((err as { status?: number }).status).toBe(status);
      expect(retries).toHaveLength(0);
      expect(emu.requests).toHaveLength(1);
    }
  });

  it('bounds the attempts: retries + 1 requests, then the last error', async () => {
    const { client, emu } = await setup(
      { fault: () => ({ kind: 'status', status: 503 }) },
      { retry: { retries: 2, ...FAST_RETRY } },
    );
    const retries = retriesOf(client);
    await expectRejects<ServerError>(client.listDatasets(), (e) => {
      expect(e).toBeInstanceOf(ServerError);
      expect(e.status).toBe(503);
    });
    expect(emu.requests).toHaveLength(3);
    expect(retries.map((e) => e.attempt)).toEqual([1, 2]);
  });

  it('a request the service sheds (429, 503 with Retry-After) is retried past `retries`, within the deadline', async () => {
    // Seven sheds in a row, then the answer: a loaded service draining its queue. `retries` is the default 4.
    let n = 0;
    const { client, emu } = await setup(
      {
        fault: () => {
          n++;
          if (n > 7) return undefined;
          return n % 2
            ? { kind: 'status', status: 503, headers: { 'Retry-After': '0' } }
            : { kind: 'status', status: 429, headers: { 'Retry-After': '0' } };
        },
      },
      { retry: FAST_RETRY },
    );
    const retries = retriesOf(client);
    expect((await client.listDatasets()).length).toBeGreaterThan(0);
    expect(emu.requests.map((r) => r.status)).toEqual([503, 429, 503, 429, 503, 429, 503, 200]);
    // Every attempt is numbered, so the backoff still grows.
    expect(retries.map((e) => e.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('a service that sheds every attempt: the last answer once the deadline is near, not an endless loop', async () => {
    const { client, emu } = await setup(
      { fault: () => ({ kind: 'status', status: 503, headers: { 'Retry-After': '0' } }) },
      { retry: { deadlineMs: 300, ...FAST_RETRY } },
    );
    const t0 = performance.now();
    await expectRejects<ServerError>(client.listDatasets(), (e) => {
      expect(e).toBeInstanceOf(ServerError);
      expect(e.status).toBe(503);
    });
    expect(performance.now() - t0).toBeLessThan(2000);
    // More than retries + 1 attempts (sheds do not count), all within the deadline.
    expect(emu.requests.length).toBeGreaterThan(5);
  });

  it('gives up at once when a Retry-After would pass the overall deadline', async () => {
    const { client, emu } = await setup(
      { fault: () => ({ kind: 'status', status: 429, headers: { 'Retry-After': '30' } }) },
      { retry: { deadlineMs: 2000, ...FAST_RETRY } },
    );
    const t0 = performance.now();
    await expectRejects<RateLimitedError>(client.listDatasets(), (e) => {
      expect(e).toBeInstanceOf(RateLimitedError);
      expect(e.retryAfterMs).toBe(30_000);
    });
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(emu.requests).toHaveLength(1);
  });

  it('honours Retry-After in seconds ("1" is one second) and as an HTTP date', async () => {
    const date = () => new Date(Date.now() + 2000).toUTCString();
    let n = 0;
    const { client, emu } = await setup(
      {
        fault: () => {
          n++;
          if (n === 1) return { kind: 'status', status: 429, headers: { 'Retry-After': '1' } };
          if (n === 3) return { kind: 'status', status: 503, headers: { 'Retry-After': date() } };
          return undefined;
        },
      },
      { retry: FAST_RETRY },
    );
    const retries = retriesOf(client);
    await client.listDatasets();
    await client.listDatasets();
    // The client waited (far more than its 5 ms maximum backoff) and the server saw the gap: the
    // Retry-After, spread by at most a quarter of it.
    expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(1000);
    expect(retries[0]!.delayMs).toBeLessThanOrEqual(1250);
    // An HTTP date has whole seconds: 2 s ahead is between 1 and 2 s away (and the spread on top).
    expect(retries[1]!.delayMs).toBeGreaterThanOrEqual(1000);
    expect(retries[1]!.delayMs).toBeLessThanOrEqual(2500);
    const at = emu.requests.map((r) => r.at);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(990);
    expect(at[3]! - at[2]!).toBeGreaterThanOrEqual(990);
  });

  it('retries a request that outlasts its timeout, before headers and in a trickling body', async () => {
    const { client } = await setup(
      {
        fault: faultPlan({
          seed: 1,
          rate: 0,
          at: {
            1: { kind: 'delay', ms: 2000 },
            3: { kind: 'trickle', bytesPerChunk: 8, intervalMs: 40 },
          },
        }),
      },
      { timeoutMs: 250, retry: FAST_RETRY },
    );
    const retries = retriesOf(client);
    const t0 = performance.now();
    expect((await client.listDatasets()).length).toBe(4);
    expect((await client.listDatasets()).length).toBe(4);
    expect(retries.map((e) => e.error.code)).toEqual(['DQS_TIMEOUT', 'DQS_TIMEOUT']);
    expect(retries[0]!.error).toBeInstanceOf(TimeoutError);
    expect(performance.now() - t0).toBeLessThan(1500);
  });

  it('download(): a slow but steady body outlives timeoutMs, a silent one still times out (regression)', async () => {
    // The whole-exchange timer ran until the downloaded body closed, so any download taking longer than
    // timeoutMs in all was aborted, though the option promises "the longest silence between two chunks".
    const { client } = await setup(
      {
        fault: (r) => {
          // The query's own first page (descriptors and first rows) comes at once.
          if (!isPageGet(r) || r.query.limit === String(FIRST_PAGE_ROWS)) return undefined;
          return r.query.limit === '300'
            ? { kind: 'trickle', bytesPerChunk: 4096, intervalMs: 25 }
            : { kind: 'trickle', bytesPerChunk: 4096, intervalMs: 5000 };
        },
      },
      // Plain bodies: the timing counts chunks of bytes on the wire, which compression would shrink.
      { timeoutMs: 300, retry: false, compression: false },
    );
    const result = await client.query('job_listings', { tickers: ['nasdaq:aapl'] });
    const t0 = performance.now();
    let bytes = 0;
    for await (const chunk of await result.download({ limit: 300 })) bytes += (chunk as Buffer).length;
    expect(performance.now() - t0).toBeGreaterThan(400);
    expect(bytes).toBeGreaterThan(20 * 4096);
    const silent = await result.download({ limit: 200 });
    await expect(
      (async () => {
        for await (const _ of silent);
      })(),
    ).rejects.toMatchObject({ code: 'UND_ERR_BODY_TIMEOUT' });
  });

  it('never decodes a cut JSON body as a page: any cut point is a NetworkError', async () => {
    const { client, emu } = await setup({}, { retry: false });
    const h = await client.createQuery('web_traffic', { tickers: ['nasdaq:aapl'] });
    const full = await client.readPage('web_traffic', h.id, { start: 1, limit: 20 });
    const size = Buffer.byteLength(JSON.stringify(full));
    await emu.close();
    for (const afterBytes of [0, 1, 2, 100, Math.floor(size / 2), size - 2, size - 1, size + 10]) {
      const { client: c } = await setup(
        { fault: (r) => (isPageGet(r) ? { kind: 'cut', afterBytes } : undefined) },
        { retry: false },
      );
      await c.createQuery('web_traffic', { tickers: ['nasdaq:aapl'] });
      await expectRejects<NetworkError>(c.readPage('web_traffic', h.id, { start: 1, limit: 20 }), (e) => {
        expect(e).toBeInstanceOf(NetworkError);
        expect(e.code).toBe('DQS_NETWORK');
      });
    }
  });

  it('retries a cut CSV body instead of failing with a DecodeError (regression)', async () => {
    // The CSV/XLSX path read undici's error raw: csv-parse wrapped it in a DecodeError, which is not
    // retried, so one cut page failed the whole download.
    let cuts = 0;
    const { client } = await setup(
      {
        rowCap: 3000,
        fault: (r) =>
          isPageGet(r) && r.query.start === '1001' && cuts++ < 2
            ? { kind: 'cut', afterBytes: 5000 }
            : undefined,
      },
      { retry: FAST_RETRY },
    );
    const retries = retriesOf(client);
    const result = await client.query('job_listings', {});
    const rows = await result.toArray({ format: 'csv', pageSize: 1000 });
    expect(rows).toHaveLength(3000);
    expect(retries.map((e) => e.error.code)).toEqual(['DQS_NETWORK', 'DQS_NETWORK']);
    const csvTable = await result.toTable({ format: 'csv', pageSize: 1000 });
    const jsonTable = await result.toTable({ format: 'json', pageSize: 1000 });
    expect(csvTable.toArray().map((r) => r.toJSON())).toEqual(jsonTable.toArray().map((r) => r.toJSON()));
  });

  it('full jitter without Retry-After: each pause is uniform in [0, min(max, min * 2^(attempt-1))]', () => {
    const policy = normalizeRetryOptions({ minDelayMs: 100, maxDelayMs: 1000 });
    const err = new ServerError({ status: 503, method: 'GET', url: 'u' });
    expect([1, 2, 3, 4, 5, 6].map((a) => backoffDelay(policy, a, err, () => 0.999999))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
    expect(backoffDelay(policy, 3, err, () => 0)).toBe(0);
    const limited = new RateLimitedError({ status: 429, method: 'GET', url: 'u', retryAfterMs: 3000 });
    expect(backoffDelay(policy, 1, limited, () => 0)).toBe(3000);
  });

  it('Retry-After is the wait: spread by a quarter of it, up to twice it for a request refused again and again', () => {
    const policy = normalizeRetryOptions({ minDelayMs: 250, maxDelayMs: 15_000 });
    const limited = new RateLimitedError({ status: 429, method: 'GET', url: 'u', retryAfterMs: 1000 });
    const most = (a: number) => backoffDelay(policy, a, limited, () => 0.999999);
    const least = (a: number) => backoffDelay(policy, a, limited, () => 0);
    // The waits that once grew to 4, 8 and 14 s after a few refusals of `Retry-After: 1`.
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(most)).toEqual([
      1250, 1500, 1750, 2000, 2000, 2000, 2000, 2000, 2000, 2000,
    ]);
    expect([1, 5, 10].map(least)).toEqual([1000, 1000, 1000]);
    // `Retry-After: 0`: back at once, spread over minDelayMs (no spin, no growth).
    const now = new RateLimitedError({ status: 429, method: 'GET', url: 'u', retryAfterMs: 0 });
    expect([1, 8].map((a) => backoffDelay(policy, a, now, () => 0.999999))).toEqual([250, 250]);
    // Under the client's own rate limit the limiter spaces retries: no spread beyond minDelayMs.
    const paced = new RateLimitedError({ status: 429, method: 'GET', url: 'u', retryAfterMs: 58_000 });
    pacedRefusals.add(paced);
    expect([1, 4].map((a) => backoffDelay(policy, a, paced, () => 0.999999))).toEqual([58_250, 58_250]);
    const shed = new ServerError({ status: 503, method: 'GET', url: 'u', retryAfterMs: 2000 });
    expect(backoffDelay(policy, 9, shed, () => 0.5)).toBe(3000);
    expect(parseRetryAfter('1')).toBe(1000);
    expect(parseRetryAfter(' 0 ')).toBe(0);
    expect(parseRetryAfter('2.5')).toBe(2500);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('2015-10-21T07:27:30Z'))).toBe(30_000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('2016-01-01T00:00:00Z'))).toBe(0);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });
});
