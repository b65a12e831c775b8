import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { Emulator, FaultContext } from '../src/emulator/index.js';
import {
  authHeaders,
  createQuery,
  errorMessage,
  get,
  page,
  startTestEmulator,
  TABLE,
} from './emulator-helpers.js';

const isPageGet = (r: FaultContext) => r.method === 'GET' && /\/query\/[0-9a-f]{64}$/.test(r.path);

/** A GET whose body may be cut: what arrived, and whether the response completed. */
function rawGet(
  emu: Emulator,
  path: string,
): Promise<{ status: number; contentLength: number; received: number; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: emu.port, path, headers: authHeaders(emu, { Accept: TABLE }), agent: false },
      (res) => {
        let received = 0;
        res.on('data', (c: Buffer) => {
          received += c.length;
        });
        res.on('error', () => {});
        res.on('close', () =>
          resolve({
            status: res.statusCode ?? 0,
            contentLength: Number(res.headers['content-length']),
            received,
            complete: res.complete,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('fault hook', () => {
  it('sees method, path without basePath, decoded query, headers and the request number', async () => {
    const seen: FaultContext[] = [];
    const emu = await startTestEmulator({
      basePath: '/api',
      fault: (r) => {
        seen.push(r);
        return undefined;
      },
    });
    await get(emu, '/datasets/?ticker=nasdaq%3Aaapl', { 'X-Trace': 'abc' });
    await get(emu, '/datasets/web_traffic');
    expect(seen).toHaveLength(2);
    expect(seen[0]).toMatchObject({
      method: 'GET',
      path: '/datasets/',
      query: { ticker: 'nasdaq:aapl' },
      requestNumber: 1,
    });
    expect(seen[0]!.headers['x-trace']).toBe('abc');
    expect(seen[1]).toMatchObject({ path: '/datasets/web_traffic', requestNumber: 2 });
  });

  it('delay: waits, then answers normally', async () => {
    const emu = await startTestEmulator({
      fault: async (r) => (r.path === '/datasets/' ? { kind: 'delay', ms: 200 } : undefined),
    });
    const t0 = performance.now();
    const res = await get(emu, '/datasets/');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(190);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { datasets: unknown[] }).datasets).toHaveLength(4);
  });

  it('status: 429 with Retry-After and the default {message}; custom JSON and text bodies', async () => {
    let n = 0;
    const emu = await startTestEmulator({
      fault: () => {
        n++;
        if (n === 1) return { kind: 'status', status: 429, headers: { 'Retry-After': '2' } };
        if (n === 2) return { kind: 'status', status: 503, body: { message: 'maintenance', eta: 5 } };
        if (n === 3) return { kind: 'status', status: 502, body: '<html>bad gateway</html>' };
        return undefined;
      },
    });
    const a = await get(emu, '/datasets/');
    expect(a.status).toBe(429);
    expect(a.headers.get('retry-after')).toBe('2');
    expect(await errorMessage(a)).toBe('injected fault: 429');
    const b = await get(emu, '/datasets/');
    expect(b.status).toBe(503);
    expect(await b.json()).toEqual({ message: 'maintenance', eta: 5 });
    const c = await get(emu, '/datasets/');
    expect(c.status).toBe(502);
    expect(c.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await c.text()).toBe('<html>bad gateway</html>');
    expect((await get(emu, '/datasets/')).status).toBe(200);
    expect(emu.requests.map((r) => r.status)).toEqual([429, 503, 502, 200]);
  });

  it('reset: the connection dies before any header; the emulator carries on', async () => {
    const emu = await startTestEmulator({
      fault: (r) => (r.requestNumber === 1 ? { kind: 'reset' } : undefined),
    });
    await expect(get(emu, '/datasets/')).rejects.toThrow();
    expect((await get(emu, '/datasets/')).status).toBe(200);
    expect(emu.requests[0]!.status).toBeNull();
    expect(emu.requests[1]!.status).toBe(200);
  });

  it('cut: real headers with the full Content-Length, then afterBytes of the body, then the close', async () => {
    const emu = await startTestEmulator({
      fault: (r) => (isPageGet(r) ? { kind: 'cut', afterBytes: 100 } : undefined),
    });
    const h = await createQuery(emu, 'web_traffic', { tickers: ['nasdaq:aapl'] });
    const cut = await rawGet(emu, `/datasets/web_traffic/query/${h.id}?limit=50`);
    expect(cut.status).toBe(200);
    expect(cut.contentLength).toBeGreaterThan(100);
    expect(cut.received).toBe(100);
    expect(cut.complete).toBe(false);
    // fetch sees it as a failed body read.
    const res = await get(emu, `/datasets/web_traffic/query/${h.id}?limit=50`, { Accept: TABLE });
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });

  it('cut: afterBytes beyond the body still cuts one byte short', async () => {
    const emu = await startTestEmulator({
      fault: (r) => (isPageGet(r) ? { kind: 'cut', afterBytes: 10_000_000 } : undefined),
    });
    const h = await createQuery(emu, 'web_traffic', { tickers: ['nasdaq:aapl'] });
    const cut = await rawGet(emu, `/datasets/web_traffic/query/${h.id}?limit=5`);
    expect(cut.received).toBe(cut.contentLength - 1);
    expect(cut.complete).toBe(false);
  });

  it('trickle: the real body, slowly', async () => {
    let trickle = false;
    const emu = await startTestEmulator({
      fault: (r) =>
        trickle && isPageGet(r) ? { kind: 'trickle', bytesPerChunk: 512, intervalMs: 15 } : undefined,
    });
    const h = await createQuery(emu, 'web_traffic', { tickers: ['nasdaq:aapl'] });
    const normal = await (await page(emu, 'web_traffic', h.id, '?limit=20&start=2')).text();
    trickle = true;
    const t0 = performance.now();
    // Served from the page cache this time, and trickled all the same: the fault acts on transmission.
    // Identity, so the chunks counted below are the bytes on the wire (fetch asks for gzip otherwise).
    const slowRes = await get(emu, `/datasets/web_traffic/query/${h.id}?limit=20&start=2`, {
      Accept: TABLE,
      'Accept-Encoding': 'identity',
    });
    const slow = await slowRes.text();
    const chunks = Math.ceil(Buffer.byteLength(slow) / 512);
    expect(chunks).toBeGreaterThan(3);
    expect(performance.now() - t0).toBeGreaterThanOrEqual((chunks - 1) * 15 - 5);
    expect(slow).toBe(normal);
  });

  it('answers 500 with a message when the hook throws or returns something invalid', async () => {
    let n = 0;
    const emu = await startTestEmulator({
      fault: () => {
        n++;
        if (n === 1) throw new Error('plan exhausted');
        if (n === 2) return { kind: 'explode' } as never;
        if (n === 3) return { kind: 'delay', ms: -1 } as never;
        return undefined;
      },
    });
    const a = await get(emu, '/datasets/');
    expect(a.status).toBe(500);
    expect(await errorMessage(a)).toMatch(/fault hook threw: plan exhausted/);
    const b = await get(emu, '/datasets/');
    expect(b.status).toBe(500);
    expect(await errorMessage(b)).toMatch(/kind.*explode/);
    const c = await get(emu, '/datasets/');
    expect(await errorMessage(c)).toMatch(/ms.*-1/);
    expect((await get(emu, '/datasets/')).status).toBe(200);
  });

  it('runs before routing and authentication: a fault hits even unknown paths', async () => {
    const emu = await startTestEmulator({ fault: () => ({ kind: 'status', status: 503 }) });
    const res = await fetch(`${emu.url}/no/such/path`);
    expect(res.status).toBe(503);
  });

  it('can fail exactly the second page GET (the shape of a seeded fault plan)', async () => {
    let pageGets = 0;
    const emu = await startTestEmulator({
      fault: (r) => (isPageGet(r) && ++pageGets === 2 ? { kind: 'status', status: 503 } : undefined),
    });
    const h = await createQuery(emu, 'web_traffic', {});
    const statuses: number[] = [];
    for (const start of [1, 11, 11, 21]) {
      statuses.push((await get(emu, `/datasets/web_traffic/query/${h.id}?start=${start}&limit=10`)).status);
    }
    expect(statuses).toEqual([200, 503, 200, 200]);
  });

  it('close() cancels pending delays instead of waiting for them', async () => {
    const emu = await startTestEmulator({ fault: () => ({ kind: 'delay', ms: 60_000 }) });
    const pending = get(emu, '/datasets/').catch((err: unknown) => err);
    await new Promise((r) => setTimeout(r, 50));
    const t0 = performance.now();
    await emu.close();
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(await pending).toBeInstanceOf(Error);
  });
});

describe('request log', () => {
  it('records every request on arrival, fills the status when answered, and counts page GETs', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const emu = await startTestEmulator({
      fault: async (r) => {
        if (r.path === '/datasets/slow') await gate;
        return undefined;
      },
    });
    const pending = get(emu, '/datasets/slow', { Accept: 'application/json' });
    await new Promise((r) => setTimeout(r, 50));
    expect(emu.requests).toHaveLength(1);
    expect(emu.requests[0]).toMatchObject({
      n: 1,
      method: 'GET',
      path: '/datasets/slow',
      query: {},
      accept: 'application/json',
      status: null,
    });
    expect(Math.abs(emu.requests[0]!.at - Date.now())).toBeLessThan(5000);
    release();
    expect((await pending).status).toBe(404);
    expect(emu.requests[0]!.status).toBe(404);

    const h = await createQuery(emu, 'web_traffic', {});
    for (let start = 1; start <= 30; start += 10)
      await page(emu, 'web_traffic', h.id, `?start=${start}&limit=10`);
    const pageGets = emu.requests.filter((r) => r.method === 'GET' && r.path.includes('/query/'));
    expect(pageGets.map((r) => r.query)).toEqual([
      { start: '1', limit: '10' },
      { start: '11', limit: '10' },
      { start: '21', limit: '10' },
    ]);
    expect(pageGets.every((r) => r.accept === TABLE && r.status === 200)).toBe(true);

    const log = emu.requests;
    emu.resetRequests();
    expect(log).toHaveLength(0); // the same array, emptied
    await get(emu, '/datasets/');
    expect(emu.requests).toHaveLength(1);
    expect(emu.requests[0]!.n).toBe(6); // numbering continues across resets
  });
});
