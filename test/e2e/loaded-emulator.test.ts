/**
 * The library against an emulator that is shedding load: while other clients hammer it with big pages,
 * some of the library's page requests are answered 503 + Retry-After; it retries them and the table it
 * builds is identical to one read from an idle emulator (same seed, so the same data).
 */
import { describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/index.js';
import { DatasetClient, ServerError } from '../../src/index.js';
import { ipcBytes, retriesOf } from '../helpers.js';

const TABLE = 'application/vnd.service.table+json';

/** Other clients: `width` loops of 4,000-row pages of another query until `stop`; counts their answers. */
async function hammer(emu: Emulator, width: number, stop: { done: boolean }): Promise<Map<number, number>> {
  const headers = { Authorization: `token ${emu.apiKey}`, 'Content-Type': 'application/json' };
  const created = await fetch(`${emu.url}/datasets/job_listings/query/`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ tickers: ['nyse:wmt', 'nasdaq:msft'] }),
  });
  const { id } = (await created.json()) as { id: string };
  const statuses = new Map<number, number>();
  let n = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (!stop.done) {
        const start = 1 + ((n++ * 7919) % 30_000);
        const res = await fetch(`${emu.url}/datasets/job_listings/query/${id}?start=${start}&limit=4000`, {
          headers: { ...headers, Accept: TABLE },
        });
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 503) expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      }
    }),
  );
  return statuses;
}

async function read(client: DatasetClient): Promise<Buffer> {
  const result = await client.query('job_listings', { tickers: ['nasdaq:aapl'] });
  expect(result.total).toBeGreaterThan(18_000);
  return ipcBytes(result.stream({ pageSize: 2000, concurrency: 4 }));
}

describe('a loaded emulator', () => {
  it('the library retries the pages shed with 503 and gets the same table as from an idle emulator', async () => {
    const quiet = await startEmulator({ acceptWidth: 1 });
    const quietClient = new DatasetClient({ baseUrl: quiet.url, apiKey: quiet.apiKey, cache: false });
    // No page cache, and room for about three pages: every page is built, and many requests are shed.
    const loaded = await startEmulator({ pageCacheSize: 0, maxPageRowsInFlight: 10_000 });
    const client = new DatasetClient({
      baseUrl: loaded.url,
      apiKey: loaded.apiKey,
      cache: false,
      // The default number of retries: the pages shed with 503 and Retry-After do not count against it.
      retry: { minDelayMs: 5, maxDelayMs: 50 },
    });
    const retries = retriesOf(client);
    try {
      const expected = await read(quietClient);
      const stop = { done: false };
      const others = hammer(loaded, 6, stop);
      let got: Buffer;
      try {
        got = await read(client);
      } finally {
        stop.done = true;
      }
      const answers = await others;
      expect(answers.get(503) ?? 0).toBeGreaterThan(0);
      const shedForUs = retries.filter((r) => r.error instanceof ServerError && r.error.status === 503);
      expect(shedForUs.length).toBeGreaterThan(0);
      expect(got.equals(expected)).toBe(true);
    } finally {
      await Promise.all([client.close(), quietClient.close()]);
      await Promise.all([loaded.close(), quiet.close()]);
    }
  }, 60_000);
});
