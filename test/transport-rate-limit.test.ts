import diagnostics from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import { DatasetClient } from '../src/index.js';
import { collectRows, retriesOf, setup } from './helpers.js';

describe('rate limiter', () => {
  it('keeps every span of intervalMs at `requests` requests or fewer, polling and pages alike', async () => {
    const { client, emu } = await setup(
      { rowCap: 4000, queryDelayMs: 150 },
      { rateLimit: { requests: 5, intervalMs: 400 } },
    );
    // When the client hands each request to undici, after its turn in the limiter: what the limiter
    // bounds. (The emulator's arrival times also carry the loopback and the event loops' delays, which a
    // loaded machine stretched to a 344 ms span for a 400 ms interval.)
    const sent: number[] = [];
    const origin = new URL(emu.url).origin;
    const onCreate = (message: unknown) => {
      const { request } = message as { request: { origin: string } };
      if (String(request.origin) === origin) sent.push(performance.now());
    };
    diagnostics.subscribe('undici:request:create', onCreate);
    const t0 = performance.now();
    let rows: number;
    try {
      rows = await collectRows(client.stream('job_listings', {}, { pageSize: 500, pollMinMs: 10 }));
    } finally {
      diagnostics.unsubscribe('undici:request:create', onCreate);
    }
    const elapsed = performance.now() - t0;
    expect(rows).toBe(4000);
    expect(sent).toHaveLength(emu.requests.length);
    const at = sent;
    const methods = new Set(emu.requests.map((r) => r.method));
    expect(methods).toEqual(new Set(['POST', 'HEAD', 'GET']));
    // POST, >= 1 HEAD, the 1-row GET and 8 pages: at least 11 requests, so at least 2 full intervals.
    expect(at.length).toBeGreaterThanOrEqual(11);
    expect(elapsed).toBeGreaterThanOrEqual(Math.floor((at.length - 1) / 5) * 400 - 20);
    // The sixth request after any request goes out a whole interval later (less a few ms between the
    // limiter's turn and undici's dispatch).
    for (let i = 5; i < at.length; i++) expect(at[i]! - at[i - 5]!).toBeGreaterThanOrEqual(380);
  });

  it('rejects bad options with the option named', () => {
    for (const rateLimit of [{ requests: 0 }, { requests: 1.5 }, { requests: 5, intervalMs: 0 }]) {
      expect(() => new DatasetClient({ baseUrl: 'http://127.0.0.1:1', rateLimit })).toThrow(/rateLimit\./);
    }
  });

  it('does not count the wait for a turn against the per-request timeout (regression)', async () => {
    // The timeout timer used to start before the rate limiter's wait, so a request queued for longer
    // than timeoutMs failed (and was retried) without ever reaching the server.
    const { client, emu } = await setup({}, { rateLimit: { requests: 1, intervalMs: 400 }, timeoutMs: 250 });
    const retries = retriesOf(client);
    await Promise.all([client.listDatasets(), client.listDatasets(), client.listDatasets()]);
    expect(retries).toHaveLength(0);
    expect(emu.requests).toHaveLength(3);
  });

  it("a 429 under the client's rate limit is retried after its Retry-After, not spread over a quarter of it", async () => {
    // The limiter spaces the retries: spreading them too cost up to 15 s after a 58 s wait (bench:wan,
    // 20 requests a minute). Without a rate limit the spread stays (load shedding by many clients).
    let refused = 0;
    const { client } = await setup(
      {
        rowCap: 50,
        fault: (r) =>
          r.method === 'GET' && r.query.limit !== undefined && refused++ === 0
            ? { kind: 'status', status: 429, headers: { 'Retry-After': '2' } }
            : undefined,
      },
      { rateLimit: { requests: 100 }, retry: { minDelayMs: 0 } },
    );
    const retries = retriesOf(client);
    const result = await client.query('job_listings', {});
    expect(await result.toArray({ pageSize: 20 })).toHaveLength(50);
    expect(retries.map((e) => [e.error.code, e.delayMs])).toEqual([['DQS_RATE_LIMITED', 2000]]);
  });
});
