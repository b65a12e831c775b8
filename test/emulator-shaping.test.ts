/**
 * WAN shaping: latency (one more RTT on a new connection), page execution time, bandwidth per connection
 * and in total (on the bytes on the wire), and the gateway's limits (`maxInFlight`, `requestsPerMinute`)
 * answered 429 with Retry-After. Timing assertions are lower bounds with a margin, never upper bounds.
 */
import { Agent, request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../src/core/errors.js';
import { type EmulatorOptions, startEmulator } from '../src/emulator/index.js';
import { MinuteWindow } from '../src/emulator/shaping.js';
import { ensureBuilt, finishCli, startCli, startServe } from './cli-helpers.js';
import { authHeaders, createQuery, startTestEmulator, TABLE } from './emulator-helpers.js';

interface Timed {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bytes: number;
  ms: number;
}

/** A GET timed from sending to the last byte; `agent` false is a fresh connection. */
function timedGet(
  url: string,
  path: string,
  headers: Record<string, string>,
  agent: Agent | false = false,
): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request(`${url}${path}`, { headers, agent }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes, ms: performance.now() - t0 }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('latency and execution time', () => {
  it('latencyMs before every first byte, twice on a new connection', async () => {
    const emu = await startTestEmulator({ latencyMs: 100 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await timedGet(emu.url, '/datasets/', authHeaders(emu), agent);
      const second = await timedGet(emu.url, '/datasets/', authHeaders(emu), agent);
      expect(first.status).toBe(200);
      expect(first.ms).toBeGreaterThanOrEqual(195);
      expect(second.ms).toBeGreaterThanOrEqual(97);
    } finally {
      agent.destroy();
    }
  });

  it('pageTimeMs + rowTimeMs × rows before a page', async () => {
    const emu = await startTestEmulator({ pageTimeMs: 40, rowTimeMs: 0.05 });
    const { id } = await createQuery(emu, 'job_listings');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const path = `/datasets/job_listings/query/${id}`;
      const big = await timedGet(emu.url, `${path}?limit=3000`, authHeaders(emu, { Accept: TABLE }), agent);
      const small = await timedGet(emu.url, `${path}?limit=10`, authHeaders(emu, { Accept: TABLE }), agent);
      const list = await timedGet(emu.url, '/datasets/', authHeaders(emu), agent);
      expect(big.ms).toBeGreaterThanOrEqual(40 + 150 - 3);
      expect(small.ms).toBeGreaterThanOrEqual(40 + 0.5 - 3);
      // Not a page: no execution time. (An upper bound, but 40 ms above an idle loopback request.)
      expect(list.ms).toBeLessThan(big.ms);
    } finally {
      agent.destroy();
    }
  });
});

describe('bandwidth', () => {
  it('per connection, on the bytes on the wire: gzip goes faster', async () => {
    const rate = 4_000_000;
    const emu = await startTestEmulator({ connectionBytesPerSecond: rate });
    const { id } = await createQuery(emu, 'job_listings');
    const path = `/datasets/job_listings/query/${id}?limit=4000`;
    const plain = await timedGet(emu.url, path, authHeaders(emu, { Accept: TABLE }));
    const gzip = await timedGet(
      emu.url,
      path,
      authHeaders(emu, { Accept: TABLE, 'Accept-Encoding': 'gzip' }),
    );
    expect(plain.bytes).toBeGreaterThan(800_000);
    expect(plain.ms).toBeGreaterThanOrEqual(((plain.bytes / rate) * 1000 - 10) * 0.95);
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gzip.ms).toBeGreaterThanOrEqual(((gzip.bytes / rate) * 1000 - 10) * 0.95);
    expect(gzip.ms).toBeLessThan(plain.ms);
  });

  it('in total, shared by all connections', async () => {
    const rate = 4_000_000;
    const emu = await startTestEmulator({ totalBytesPerSecond: rate });
    const { id } = await createQuery(emu, 'job_listings');
    const headers = authHeaders(emu, { Accept: TABLE });
    const t0 = performance.now();
    const all = await Promise.all(
      [1, 2001, 4001].map((start) =>
        timedGet(emu.url, `/datasets/job_listings/query/${id}?start=${start}&limit=2000`, headers),
      ),
    );
    const ms = performance.now() - t0;
    const bytes = all.reduce((sum, r) => sum + r.bytes, 0);
    expect(bytes).toBeGreaterThan(1_000_000);
    expect(ms).toBeGreaterThanOrEqual(((bytes / rate) * 1000 - 10) * 0.95);
  });
});

describe('gateway limits', () => {
  it('maxInFlight: requests above the cap are answered 429 with Retry-After', async () => {
    const emu = await startTestEmulator({ maxInFlight: 2, latencyMs: 150 });
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => timedGet(emu.url, '/datasets/', authHeaders(emu))),
    );
    const refused = answers.filter((a) => a.status === 429);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(2);
    expect(refused).toHaveLength(3);
    for (const r of refused) expect(r.headers['retry-after']).toBe('1');
    // The slots come back.
    expect((await timedGet(emu.url, '/datasets/', authHeaders(emu))).status).toBe(200);
  });

  it('maxInFlight: a client that keeps within the cap is never refused', async () => {
    const emu = await startTestEmulator({ maxInFlight: 3 });
    const { id } = await createQuery(emu, 'web_traffic');
    const agent = new Agent({ keepAlive: true, maxSockets: 3 });
    try {
      const statuses: number[] = [];
      await Promise.all(
        [0, 1, 2].map(async (w) => {
          for (let i = 0; i < 15; i++) {
            const path = `/datasets/web_traffic/query/${id}?start=${(w * 15 + i) * 50 + 1}&limit=50`;
            statuses.push((await timedGet(emu.url, path, authHeaders(emu, { Accept: TABLE }), agent)).status);
          }
        }),
      );
      expect(statuses).toEqual(Array(45).fill(200));
    } finally {
      agent.destroy();
    }
  });

  it('requestsPerMinute: 429 past the limit, Retry-After until the oldest leaves the window', async () => {
    const emu = await startTestEmulator({ requestsPerMinute: 4 });
    const statuses: number[] = [];
    let retryAfter: unknown;
    for (let i = 0; i < 6; i++) {
      const r = await timedGet(emu.url, '/datasets/', authHeaders(emu));
      statuses.push(r.status);
      if (r.status === 429) retryAfter = r.headers['retry-after'];
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(50);
    expect(Number(retryAfter)).toBeLessThanOrEqual(60);
  });

  it('the sliding window counts admitted requests only and says honestly when one frees', () => {
    const w = new MinuteWindow(3);
    expect([w.admit(0), w.admit(10_000), w.admit(20_000)]).toEqual([0, 0, 0]);
    expect(w.admit(30_000)).toBe(30); // the one at 0 leaves at 60 s
    expect(w.admit(59_999)).toBe(1); // rounded up, never 0
    expect(w.admit(60_000)).toBe(0);
    expect(w.admit(60_001)).toBe(10); // now the one at 10 s is the oldest
    expect(w.admit(70_000)).toBe(0);
  });
});

describe('options and flags', () => {
  it.each([
    [{ latencyMs: -1 }, 'latencyMs'],
    [{ rowTimeMs: Number.NaN }, 'rowTimeMs'],
    [{ pageTimeMs: '30' }, 'pageTimeMs'],
    [{ maxInFlight: 1.5 }, 'maxInFlight'],
    [{ connectionBytesPerSecond: -5 }, 'connectionBytesPerSecond'],
    [{ requestsPerMinute: '20' }, 'requestsPerMinute'],
  ])('rejects %j', async (options, name) => {
    const err = await startEmulator(options as EmulatorOptions).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(String((err as Error).message)).toContain(`\`${name}\``);
  });

  it('dqs serve --latency-ms --requests-per-minute --connection-bandwidth are applied', async () => {
    const serve = await startServe([
      '--latency-ms',
      '100',
      '--requests-per-minute',
      '1',
      '--connection-bandwidth',
      '8Mbit',
    ]);
    const url = serve.url;
    try {
      const headers = { Authorization: 'token demo' };
      const first = await timedGet(url, '/datasets/', headers);
      const second = await timedGet(url, '/datasets/', headers);
      expect(first.status).toBe(200);
      expect(first.ms).toBeGreaterThanOrEqual(195);
      expect(second.status).toBe(429);
      expect(Number(second.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      expect((await serve.stop()).code).toBe(0);
    }
  });

  it.each([
    ['--connection-bandwidth', 'fast'],
    ['--total-bandwidth', '0'],
    ['--latency-ms', '-3'],
  ])('dqs serve %s %s is a usage error', async (flag, value) => {
    ensureBuilt();
    const run = await finishCli(startCli(['serve', flag, value], { cwd: process.cwd() }));
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(flag);
  });
});
