/**
 * Token refresh is single flight. The bug: a `token` provider was called once per request in flight
 * when a token expired (and once per request at start), so 16 concurrent requests made 32 calls of it.
 * Now one call per expiry, whatever the number of requests waiting; they all use its answer.
 */
import { describe, expect, it } from 'vitest';
import { DatasetClient } from '../src/index.js';
import { setup } from './helpers.js';

describe('token provider', () => {
  it('16 requests in flight: one call at start, one after the expiry (their 401s), all succeed', async () => {
    const { emu } = await setup();
    let calls = 0;
    const client = new DatasetClient({
      baseUrl: emu.url,
      // The first token has expired already: every request gets a 401 and needs a new one.
      token: async () => {
        calls++;
        await new Promise((r) => setTimeout(r, 30));
        return calls === 1 ? 'expired-token-0000' : emu.apiKey;
      },
    });
    try {
      const results = await Promise.all(Array.from({ length: 16 }, () => client.listDatasets()));
      expect(results.every((r) => r.length > 0)).toBe(true);
      expect(calls).toBe(2);
      // A later request reuses the fresh token: no further call.
      await client.listDatasets();
      expect(calls).toBe(2);
    } finally {
      await client.close();
    }
  });

  it('a provider that fails fails every waiting request once, and the next request asks again', async () => {
    const { emu } = await setup();
    let calls = 0;
    const client = new DatasetClient({
      baseUrl: emu.url,
      token: async () => {
        calls++;
        await new Promise((r) => setTimeout(r, 20));
        if (calls === 1) throw new Error('issuer down');
        return emu.apiKey;
      },
    });
    try {
      const settled = await Promise.allSettled(Array.from({ length: 8 }, () => client.listDatasets()));
      expect(settled.every((s) => s.status === 'rejected')).toBe(true);
      expect(calls).toBe(1);
      expect((await client.listDatasets()).length).toBeGreaterThan(0);
      expect(calls).toBe(2);
    } finally {
      await client.close();
    }
  });
});
