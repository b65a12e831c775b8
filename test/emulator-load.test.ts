/**
 * The emulator under load: big pages are built in slices (a small request does not wait for them), pages
 * beyond the in-flight bound are shed with 503 + Retry-After, builds stop when their client goes away,
 * cached pages expire when idle, and slow requests get 408. Assertions are on order and counts, not on
 * durations.
 */
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { Emulator } from '../src/emulator/index.js';
import { authHeaders, createQuery, startTestEmulator, TABLE } from './emulator-helpers.js';

function pageUrl(emu: Emulator, id: string, start: number, limit: number): string {
  return `${emu.url}/datasets/job_listings/query/${id}?start=${start}&limit=${limit}`;
}

async function timed(name: string, url: string, emu: Emulator, order: string[], init: RequestInit = {}) {
  const res = await fetch(url, {
    ...init,
    headers: authHeaders(emu, { Accept: TABLE, 'Accept-Encoding': 'identity' }),
  });
  const body = await res.arrayBuffer();
  order.push(name);
  return { res, bytes: body.byteLength };
}

async function until(condition: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('responsive under a big page', () => {
  it('a 10-row page and the dataset list are answered while a 60,000-row page is being built', async () => {
    const emu = await startTestEmulator();
    const { id } = await createQuery(emu, 'job_listings');
    const order: string[] = [];
    const big = timed('big', pageUrl(emu, id, 1, 60_000), emu, order);
    await until(() => emu.stats().pagesBuilding === 1);
    const [small, list] = await Promise.all([
      timed('small', pageUrl(emu, id, 200_001, 10), emu, order),
      timed('list', `${emu.url}/datasets/`, emu, order),
    ]);
    // Answered while the big page is still being built: it did not wait for it.
    expect(emu.stats().pagesBuilding).toBe(1);
    const done = await big;
    expect(order.indexOf('small')).toBeLessThan(order.indexOf('big'));
    expect(order.indexOf('list')).toBeLessThan(order.indexOf('big'));
    expect(small.res.status).toBe(200);
    expect(list.res.status).toBe(200);
    expect(done.res.status).toBe(200);
    expect(done.bytes).toBeGreaterThan(4_000_000);
  });
});

describe('load shedding', () => {
  it('pages beyond maxPageRowsInFlight get 503 with Retry-After; small pages are never shed', async () => {
    const emu = await startTestEmulator({ maxPageRowsInFlight: 25_000, pageCacheSize: 0 });
    const { id } = await createQuery(emu, 'job_listings');
    const order: string[] = [];
    const bigs = [0, 1, 2, 3, 4].map((i) =>
      timed(`big${i}`, pageUrl(emu, id, i * 10_000 + 1, 10_000), emu, order),
    );
    const smalls = [0, 1, 2, 3].map((i) =>
      timed(`small${i}`, pageUrl(emu, id, 300_001 + i * 10, 10), emu, order),
    );
    const answers = await Promise.all(bigs);
    const shed = answers.filter((a) => a.res.status === 503);
    expect(answers.filter((a) => a.res.status === 200)).toHaveLength(2);
    expect(shed).toHaveLength(3);
    for (const a of shed) expect(Number(a.res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    for (const s of await Promise.all(smalls)) expect(s.res.status).toBe(200);
    expect(emu.stats().shed).toBe(3);
    // Everything answered, nothing left in flight.
    await until(() => emu.stats().pageRowsInFlight === 0);
  });

  it('a page larger than the bound is served when nothing else is in flight', async () => {
    const emu = await startTestEmulator({ maxPageRowsInFlight: 5000 });
    const { id } = await createQuery(emu, 'job_listings');
    const { res } = await timed('alone', pageUrl(emu, id, 1, 20_000), emu, []);
    expect(res.status).toBe(200);
  });
});

describe('cancellation and bounded caches', () => {
  it('a build stops when its only client goes away, and nothing is cached', async () => {
    const emu = await startTestEmulator();
    const { id } = await createQuery(emu, 'job_listings');
    const abort = new AbortController();
    const gone = timed('gone', pageUrl(emu, id, 1, 60_000), emu, [], { signal: abort.signal }).catch(
      (e: unknown) => e,
    );
    await until(() => emu.stats().pagesBuilding === 1);
    abort.abort();
    expect(await gone).toBeInstanceOf(Error);
    await until(() => emu.stats().pagesBuilding === 0 && emu.stats().pageRowsInFlight === 0, 2000);
    expect(emu.stats().rowsQueued).toBe(0);
    expect(emu.stats().cachedPages).toBe(0);
  });

  it('a build shared by two clients goes on when one of them leaves', async () => {
    const emu = await startTestEmulator();
    const { id } = await createQuery(emu, 'job_listings');
    const abort = new AbortController();
    const url = pageUrl(emu, id, 1, 20_000);
    const leaving = timed('a', url, emu, [], { signal: abort.signal }).catch((e: unknown) => e);
    const staying = timed('b', url, emu, []);
    await until(() => emu.stats().pagesBuilding === 1);
    abort.abort();
    await leaving;
    const { res, bytes } = await staying;
    expect(res.status).toBe(200);
    expect(bytes).toBeGreaterThan(2_000_000);
  });

  it('cached pages unused for pageCacheIdleMs are dropped', async () => {
    const emu = await startTestEmulator({ pageCacheIdleMs: 150 });
    const { id } = await createQuery(emu, 'job_listings');
    await timed('p', pageUrl(emu, id, 1, 2000), emu, []);
    expect(emu.stats().cachedPages).toBe(1);
    expect(emu.stats().cachedBytes).toBeGreaterThan(100_000);
    await until(() => emu.stats().cachedPages === 0, 3000);
    expect(emu.stats().cachedBytes).toBe(0);
  });
});

describe('timeouts', () => {
  /** Sends `text` on a raw socket and returns what came back before the close. */
  function raw(emu: Emulator, text: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(emu.port, '127.0.0.1', () => socket.write(text));
      let got = '';
      socket.on('data', (c: Buffer) => {
        got += c.toString();
      });
      socket.on('close', () => resolve(got));
      socket.on('error', reject);
    });
  }

  it('headers too slow: 408', async () => {
    const emu = await startTestEmulator({ headersTimeoutMs: 200 });
    const answer = await raw(emu, 'GET /datasets/ HTTP/1.1\r\nHost: x\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('body too slow: 408', async () => {
    const emu = await startTestEmulator({ headersTimeoutMs: 200, requestTimeoutMs: 300 });
    const answer = await raw(
      emu,
      `POST /datasets/job_listings/query/ HTTP/1.1\r\nHost: x\r\nAuthorization: token ${emu.apiKey}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"tickers":',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });
});
