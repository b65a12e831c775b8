/**
 * The emulator compresses as a front end does: by Accept-Encoding, JSON and CSV only, with
 * Content-Encoding and Vary; every coding decodes to the identity bytes; off with `compression: false`
 * and `dqs serve --no-compression`; and `encoding` faults make it misbehave on purpose.
 */
import { request } from 'node:http';
import * as zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../src/core/errors.js';
import { AVAILABLE_CODINGS, chooseCoding } from '../src/emulator/compression.js';
import { type Emulator, type EmulatorOptions, startEmulator } from '../src/emulator/index.js';
import { ensureBuilt, finishCli, startCli, startServe } from './cli-helpers.js';
import { authHeaders, CSV, createQuery, TABLE, XLSX } from './emulator-helpers.js';

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** node:http never decodes: we see the bytes on the wire. */
function rawGet(url: string, path: string, headers: Record<string, string>): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const hasZstd = typeof (zlib as unknown as Record<string, unknown>).zstdDecompressSync === 'function';

function decode(coding: string, body: Buffer): Buffer {
  switch (coding) {
    case 'gzip':
      return zlib.gunzipSync(body);
    case 'deflate':
      return zlib.inflateSync(body);
    case 'br':
      return zlib.brotliDecompressSync(body);
    case 'zstd':
      return (zlib as unknown as { zstdDecompressSync(b: Buffer): Buffer }).zstdDecompressSync(body);
    default:
      throw new Error(`no decoder for ${coding}`);
  }
}

let emu: Emulator;
let pagePath: string;
beforeAll(async () => {
  emu = await startEmulator({ apiKey: 'z' });
  const { id } = await createQuery(emu, 'job_listings');
  pagePath = `/datasets/job_listings/query/${id}?start=1&limit=2000`;
});
afterAll(() => emu.close());

const get = (path: string, extra: Record<string, string>, on: Emulator = emu) =>
  rawGet(on.url, path, authHeaders(on, extra));

describe('compression by Accept-Encoding', () => {
  it.each([
    ['table JSON', TABLE],
    ['CSV', CSV],
  ])('%s: every coding this runtime has decodes to the identity bytes', async (_name, accept) => {
    const identity = await get(pagePath, { Accept: accept });
    expect(identity.headers['content-encoding']).toBeUndefined();
    expect(identity.headers.vary).toBe('Accept-Encoding');
    expect(identity.body.length).toBeGreaterThan(100_000);
    expect(AVAILABLE_CODINGS).toEqual(
      hasZstd ? ['gzip', 'br', 'zstd', 'deflate'] : ['gzip', 'br', 'deflate'],
    );
    for (const coding of AVAILABLE_CODINGS) {
      const res = await get(pagePath, { Accept: accept, 'Accept-Encoding': coding });
      expect(res.status).toBe(200);
      expect(res.headers['content-encoding']).toBe(coding);
      expect(res.headers.vary).toBe('Accept-Encoding');
      expect(Number(res.headers['content-length'])).toBe(res.body.length);
      expect(res.body.length).toBeLessThan(identity.body.length / 3);
      expect(decode(coding, res.body).equals(identity.body)).toBe(true);
    }
  });

  it('zstd: offered exactly where the runtime has it, refused as an option elsewhere', async () => {
    const res = await get(pagePath, { Accept: TABLE, 'Accept-Encoding': 'zstd' });
    if (hasZstd) {
      expect(res.headers['content-encoding']).toBe('zstd');
      await startEmulator({ compression: { codings: ['zstd'] } }).then((e) => e.close());
    } else {
      expect(res.headers['content-encoding']).toBeUndefined();
      await expect(startEmulator({ compression: { codings: ['zstd'] } })).rejects.toThrow(
        /compression\.codings\[0\].*zstd/,
      );
    }
  });

  it('no compression when not asked, asked for identity, or refused with q=0', async () => {
    const identity = await get(pagePath, { Accept: TABLE });
    for (const ae of ['identity', 'gzip;q=0', 'lz4, snappy', '', '*;q=0']) {
      const res = await get(pagePath, { Accept: TABLE, 'Accept-Encoding': ae });
      expect(res.headers['content-encoding'], ae).toBeUndefined();
      expect(res.body.equals(identity.body), ae).toBe(true);
    }
  });

  it('q-values choose, ties go to gzip, * and x-gzip count, identity competes only when weighed', () => {
    const offered = ['gzip', 'br', 'deflate'] as const;
    const cases: [string | undefined, string | undefined][] = [
      [undefined, undefined],
      ['gzip, deflate, br', 'gzip'],
      ['br, deflate', 'br'],
      ['br;q=1, gzip;q=0.5', 'br'],
      ['gzip;q=0.5', 'gzip'],
      ['gzip;q=0.5, identity;q=0.8', undefined],
      ['gzip;q=0.9, identity;q=0.8', 'gzip'],
      ['*', 'gzip'],
      ['*;q=0.5, gzip;q=0', 'br'],
      ['x-gzip', 'gzip'],
      ['GZIP;Q=0.7', 'gzip'],
      ['gzip;q=2', undefined],
      ['identity;q=0', undefined],
    ];
    for (const [header, expected] of cases) expect(chooseCoding(header, offered), header).toBe(expected);
  });

  it('XLSX (already a zip) and small bodies go out as they are', async () => {
    const xlsx = await get(pagePath, { Accept: XLSX, 'Accept-Encoding': 'gzip' });
    expect(xlsx.status).toBe(200);
    expect(xlsx.headers['content-encoding']).toBeUndefined();
    const small = await get('/datasets/nope', { 'Accept-Encoding': 'gzip' });
    expect(small.status).toBe(404);
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(small.body.toString()).message).toMatch(/nope/);
  });

  it('the compressed page is cached: the same bytes again, and the log says what was answered', async () => {
    emu.resetRequests();
    const a = await get(pagePath, { Accept: TABLE, 'Accept-Encoding': 'gzip' });
    const b = await get(pagePath, { Accept: TABLE, 'Accept-Encoding': 'gzip' });
    expect(a.body.equals(b.body)).toBe(true);
    expect(emu.requests.map((r) => [r.acceptEncoding, r.encoding])).toEqual([
      ['gzip', 'gzip'],
      ['gzip', 'gzip'],
    ]);
  });
});

describe('compression options', () => {
  async function withEmulator<T>(options: EmulatorOptions, body: (e: Emulator) => Promise<T>): Promise<T> {
    const e = await startEmulator(options);
    try {
      return await body(e);
    } finally {
      await e.close();
    }
  }

  it('compression: false sends identity even when gzip is asked', async () => {
    await withEmulator({ compression: false }, async (e) => {
      const { id } = await createQuery(e, 'job_listings');
      const res = await get(
        `/datasets/job_listings/query/${id}?limit=2000`,
        { 'Accept-Encoding': 'gzip' },
        e,
      );
      expect(res.headers['content-encoding']).toBeUndefined();
      expect(res.headers.vary).toBeUndefined();
      expect(JSON.parse(res.body.toString()).count).toBe(2000);
    });
  });

  it('level is applied (9 is smaller than 1) and codings restrict and order what is offered', async () => {
    const sizes: number[] = [];
    for (const level of [1, 9]) {
      await withEmulator({ compression: { level, codings: ['deflate', 'gzip'] } }, async (e) => {
        const { id } = await createQuery(e, 'job_listings');
        const path = `/datasets/job_listings/query/${id}?limit=5000`;
        const both = await get(path, { 'Accept-Encoding': 'gzip, deflate' }, e);
        expect(both.headers['content-encoding']).toBe('deflate');
        const br = await get(path, { 'Accept-Encoding': 'br' }, e);
        expect(br.headers['content-encoding']).toBeUndefined();
        sizes.push(both.body.length);
      });
    }
    expect(sizes[1]).toBeLessThan(sizes[0]!);
  });

  it.each([
    [{ compression: 'yes' }, /`compression`.*a boolean or an object/],
    [{ compression: { level: 0 } }, /compression\.level/],
    [{ compression: { codings: ['lz4'] } }, /compression\.codings\[0\]/],
    [{ compression: { speed: 1 } }, /compression\.speed/],
  ])('rejects %j', async (options, message) => {
    await expect(startEmulator(options as EmulatorOptions)).rejects.toThrow(InvalidArgumentError);
    await expect(startEmulator(options as EmulatorOptions)).rejects.toThrow(message);
  });
});

describe('encoding faults', () => {
  async function faulty(fault: unknown): Promise<{ res: Raw; identity: Buffer }> {
    const e = await startEmulator({ fault: (r) => (r.method === 'GET' ? (fault as never) : undefined) });
    try {
      const { id } = await createQuery(e, 'job_listings');
      const path = `/datasets/job_listings/query/${id}?limit=500`;
      const res = await get(path, {}, e);
      const clean = await startEmulator({});
      try {
        const { id: same } = await createQuery(clean, 'job_listings');
        expect(same).toBe(id);
        return { res, identity: (await get(path, {}, clean)).body };
      } finally {
        await clean.close();
      }
    } finally {
      await e.close();
    }
  }

  it('compresses although not asked', async () => {
    const { res, identity } = await faulty({ kind: 'encoding', encodeWith: 'gzip' });
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(zlib.gunzipSync(res.body).equals(identity)).toBe(true);
  });

  it('lies: says gzip, sends plain', async () => {
    const { res, identity } = await faulty({
      kind: 'encoding',
      encodeWith: 'identity',
      contentEncoding: 'gzip',
    });
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.body.equals(identity)).toBe(true);
  });

  it('names a coding nobody knows', async () => {
    const { res, identity } = await faulty({
      kind: 'encoding',
      encodeWith: 'identity',
      contentEncoding: 'x-snappy',
    });
    expect(res.headers['content-encoding']).toBe('x-snappy');
    expect(res.body.equals(identity)).toBe(true);
  });

  it('a malformed encoding fault is a clear 500', async () => {
    const { res } = await faulty({ kind: 'encoding', encodeWith: 'lz4' });
    expect(res.status).toBe(500);
    expect(res.body.toString()).toMatch(/encodeWith/);
  });
});

describe('dqs serve', () => {
  async function served(args: string[]): Promise<Raw> {
    const serve = await startServe(args);
    try {
      return await rawGet(serve.url, '/datasets/', {
        Authorization: 'token demo',
        'Accept-Encoding': 'gzip',
      });
    } finally {
      expect((await serve.stop()).code).toBe(0);
    }
  }

  it('compresses by default; --no-compression sends identity', async () => {
    const [on, off] = await Promise.all([served([]), served(['--no-compression'])]);
    expect(on.headers['content-encoding']).toBe('gzip');
    expect(off.headers['content-encoding']).toBeUndefined();
    expect(zlib.gunzipSync(on.body).equals(off.body)).toBe(true);
  });

  it('--compression-level is validated', async () => {
    ensureBuilt();
    const run = await finishCli(startCli(['serve', '--compression-level', '12'], { cwd: process.cwd() }));
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--compression-level/);
  });
});
