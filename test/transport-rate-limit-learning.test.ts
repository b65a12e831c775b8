/**
 * A service's rate limit, learned from its first 429 (Retry-After >= 2 s): the client then keeps to the
 * rate the service accepted, so it is not over the limit again. A 429 with `Retry-After: 1` (a cap on
 * requests in flight) teaches nothing: the concurrency controller handles that one.
 */
import { describe, expect, it } from 'vitest';
import type { RateLimitedError } from '../src/index.js';
import { expectRejects, setup } from './helpers.js';

describe('learned rate limit', () => {
  it('after a 429 with a long Retry-After, waits instead of sending: no second refusal', async () => {
    const { emu, client } = await setup({ requestsPerMinute: 3 }, { retry: false });
    for (let i = 0; i < 3; i++) await client.listDatasets();
    await expectRejects<RateLimitedError>(client.listDatasets(), (e) => {
      expect(e.code).toBe('DQS_RATE_LIMITED');
      expect(e.retryAfterMs).toBeGreaterThanOrEqual(2000);
    });
    expect(client.http.learnedRateLimit).toBe(3);
    const seen = emu.requests.length;
    // The window is full (3 sent in the last minute): the next request waits for its turn, unsent.
    await expectRejects(client.listDatasets({ signal: AbortSignal.timeout(400) }), (e: { code: string }) =>
      expect(e.code).toBe('DQS_ABORTED'),
    );
    expect(emu.requests.length).toBe(seen);
    expect(emu.requests.filter((r) => r.status === 429)).toHaveLength(1);
  });

  it('a 429 with Retry-After: 1 (too many in flight) does not slow the client down', async () => {
    const { emu, client } = await setup({ maxInFlight: 1, latencyMs: 50 }, { retry: false });
    const results = await Promise.allSettled([client.listDatasets(), client.listDatasets()]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(client.http.learnedRateLimit).toBeUndefined();
    await client.listDatasets();
    expect(emu.requests.filter((r) => r.status === 200)).toHaveLength(2);
  });
});
