import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestampMs, parseDateDays, parseTimestampMs } from '../src/convert/dates.js';
import type { WireValue } from '../src/core/wire.js';
import { timestampText } from '../src/emulator/datasets/dataset.js';
import { CITY_STREETS } from '../src/emulator/datasets/store-locations.js';
import {
  COMPANIES,
  DATASET_IDS,
  datasetFields,
  type Emulator,
  queryInfo,
  queryRows,
  queryTotal,
  startEmulator,
} from '../src/emulator/index.js';
import { createQuery, page } from './emulator-helpers.js';

function column(datasetId: string, rows: WireValue[][], id: string): WireValue[] {
  const j = datasetFields(datasetId).findIndex((f) => f.id === id);
  if (j < 0) throw new Error(`no column ${id}`);
  return rows.map((r) => r[j] ?? null);
}

function tickerRows(datasetId: string, ticker: string, seed = 1): WireValue[][] {
  const body = { tickers: [ticker] };
  return queryRows(datasetId, body, { seed }, 1, queryTotal(datasetId, body, { seed }));
}

describe('determinism', () => {
  it('same seed, same rows; another seed, other rows', () => {
    for (const id of DATASET_IDS) {
      const a = queryRows(id, {}, { seed: 7 }, 1, 200);
      expect(queryRows(id, {}, { seed: 7 }, 1, 200)).toEqual(a);
      expect(queryRows(id, {}, { seed: 8 }, 1, 200)).not.toEqual(a);
    }
  });

  it('a row depends only on (dataset, ticker, index, seed): filtered results are slices of the whole', () => {
    const ds = 'app_reviews';
    const wmt = tickerRows(ds, 'nyse:wmt');
    const aapl = tickerRows(ds, 'nasdaq:aapl');
    // Result order is by ticker id, whatever order the body lists them in.
    const both = queryRows(ds, { tickers: ['nyse:wmt', 'nasdaq:aapl'] }, {}, 1, 100_000);
    expect(both).toEqual([...aapl, ...wmt]);
    const all = queryRows(ds, {}, {}, 1, 1_000_000);
    const firstAapl = all.findIndex((r) => r[0] === 'nasdaq:aapl');
    expect(all.slice(firstAapl, firstAapl + aapl.length)).toEqual(aapl);
  });

  it('the same seed serves the same bytes from two emulators; another seed differs', async () => {
    const emus = await Promise.all([
      startEmulator({ seed: 3 }),
      startEmulator({ seed: 3 }),
      startEmulator({ seed: 4 }),
    ]);
    try {
      const bodies = await Promise.all(
        emus.map(async (emu) => {
          const h = await createQuery(emu, 'job_listings', { tickers: ['lse:tsco'] });
          return (await page(emu, 'job_listings', h.id, '?start=100&limit=20')).text();
        }),
      );
      expect(bodies[1]).toBe(bodies[0]);
      expect(bodies[2]).not.toBe(bodies[0]);
      expect(JSON.parse(bodies[0]!).rows).toEqual(
        queryRows('job_listings', { tickers: ['lse:tsco'] }, { seed: 3 }, 100, 20),
      );
    } finally {
      await Promise.all(emus.map((e) => e.close()));
    }
  });
});

describe('values match their field descriptors', () => {
  it('in every dataset, at the start, across company boundaries and at the end', () => {
    for (const id of DATASET_IDS) {
      const fields = datasetFields(id);
      const { total } = queryInfo(id);
      const rows = [
        ...queryRows(id, {}, {}, 1, 3000),
        ...queryRows(id, {}, {}, Math.floor(total / 2), 3000),
        ...queryRows(id, {}, {}, total - 2999, 3000),
      ];
      // Plain checks collected into one assertion: 36,000 rows x 12 `expect`s would dominate the run.
      const bad: string[] = [];
      for (const row of rows) {
        if (row.length !== fields.length) bad.push(`${id}: row of ${row.length} values`);
        fields.forEach((f, j) => {
          const v = row[j] ?? null;
          if (v === null) return;
          const ok =
            f.type === 'string'
              ? typeof v === 'string'
              : f.type === 'number'
                ? typeof v === 'number' && Number.isFinite(v)
                : f.type === 'boolean'
                  ? typeof v === 'boolean'
                  : f.type === 'date'
                    ? typeof v === 'string' && !Number.isNaN(parseDateDays(v))
                    : typeof v === 'string' && !Number.isNaN(parseTimestampMs(v));
          if (!ok) bad.push(`${id}.${f.id} (${f.type}) = ${JSON.stringify(v)}`);
        });
      }
      expect(bad.slice(0, 10)).toEqual([]);
    }
  });
});

describe('dataset contents', () => {
  it('job_listings: big enough to truncate, dates in order, awkward text present', () => {
    const info = queryInfo('job_listings');
    expect(info.rowsBeforeCap).toBeGreaterThanOrEqual(600_000);
    expect(info).toMatchObject({ total: 500_000, truncated: true });
    for (const seed of [0, 2, 99])
      expect(queryInfo('job_listings', {}, { seed }).rowsBeforeCap).toBeGreaterThan(600_000);
    for (const c of COMPANIES) {
      const n = queryTotal('job_listings', { tickers: [c.id] });
      expect(n).toBeGreaterThanOrEqual(2000);
      expect(n).toBeLessThanOrEqual(21_000);
    }
    const rows = tickerRows('job_listings', 'nyse:wmt');
    const posted = column('job_listings', rows, 'posted_date') as string[];
    const removed = column('job_listings', rows, 'removed_date');
    expect(posted).toEqual([...posted].sort());
    expect(posted).toContain('20240229');
    removed.forEach((r, i) => {
      if (r !== null) expect(r >= posted[i]!).toBe(true);
    });
    const nullShare = removed.filter((r) => r === null).length / removed.length;
    expect(nullShare).toBeGreaterThan(0.35);
    expect(nullShare).toBeLessThan(0.5);
    const min = column('job_listings', rows, 'salary_min');
    const max = column('job_listings', rows, 'salary_max');
    expect(min).toContain(null);
    min.forEach((m, i) => {
      if (m !== null) expect(Number.isInteger(m)).toBe(true);
      if (m !== null && max[i] !== null) expect(max[i]! >= m).toBe(true);
    });
    const titles = column('job_listings', rows, 'title') as string[];
    for (const pattern of [/,/, /"/, /Ingénieur Données – Zürich/, /\p{Extended_Pictographic}/u]) {
      expect(
        titles.some((t) => pattern.test(t)),
        String(pattern),
      ).toBe(true);
    }
    const urls = column('job_listings', rows, 'url');
    expect(urls).toContain('');
    expect(urls).toContain(null);
    const descriptions = column('job_listings', rows, 'description') as string[];
    expect(descriptions.every((d) => d.includes('\n'))).toBe(true);
    expect(descriptions.some((d) => d.includes('\r\n'))).toBe(true);
    expect(column('job_listings', rows, 'remote')).toContain(null);
    expect(column('job_listings', rows, 'location')).toContain('Austin, TX');
  });

  it('store_locations: tens to hundreds per company, mostly open, float coordinates', () => {
    const withStores = COMPANIES.filter((c) => queryTotal('store_locations', { tickers: [c.id] }) > 0);
    expect(withStores.length).toBeGreaterThan(20);
    expect(withStores.length).toBeLessThan(COMPANIES.length);
    for (const c of withStores) {
      const n = queryTotal('store_locations', { tickers: [c.id] });
      expect(n).toBeGreaterThanOrEqual(10);
      expect(n).toBeLessThan(1000);
    }
    const rows = tickerRows('store_locations', 'nyse:wmt');
    const closed = column('store_locations', rows, 'closed_date');
    expect(closed.filter((v) => v === null).length / closed.length).toBeGreaterThan(0.7);
    expect(column('store_locations', rows, 'is_open')).toEqual(closed.map((v) => v === null));
    expect(column('store_locations', rows, 'latitude').some((v) => !Number.isInteger(v))).toBe(true);
    const opened = column('store_locations', rows, 'opened_date') as string[];
    expect(opened).toEqual([...opened].sort());
    const addresses = column(
      'store_locations',
      queryRows('store_locations', {}, {}, 1, 5000),
      'address',
    ) as string[];
    expect(addresses.some((a) => a.includes(','))).toBe(true);
    expect(addresses.some((a) => a.includes('\n'))).toBe(true);
  });

  it('store_locations: every address is on a street of its city, in its country', () => {
    const rows = queryRows('store_locations', {}, {}, 1, 5000);
    const [address, city, country] = ['address', 'city', 'country'].map(
      (f) => column('store_locations', rows, f) as string[],
    );
    const cities = new Set<string>();
    rows.forEach((_, i) => {
      const known = CITY_STREETS.get(city![i]!);
      expect(known, city![i]).toBeDefined();
      expect(country![i]).toBe(known!.country);
      const streetsHere = known!.streets.filter((s) => address![i]!.includes(s));
      expect(streetsHere, `${address![i]} in ${city![i]}`).not.toHaveLength(0);
      cities.add(city![i]!);
    });
    expect(cities.size).toBeGreaterThan(10);
  });

  it('web_traffic: consecutive days, public companies only, integers up to exactly 2^53 - 1', () => {
    expect(queryTotal('web_traffic', { tickers: ['private:stripe'] })).toBe(0);
    const rows = tickerRows('web_traffic', 'nasdaq:aapl');
    expect(rows.length).toBeGreaterThanOrEqual(1000);
    expect(rows.length).toBeLessThanOrEqual(3000);
    const days = (column('web_traffic', rows, 'date') as string[]).map(parseDateDays);
    days.forEach((d, i) => {
      if (i > 0) expect(d - days[i - 1]!).toBe(1);
    });
    const all = queryRows('web_traffic', {}, {}, 1, 200_000);
    const bytes = column('web_traffic', all, 'total_bytes') as number[];
    expect(bytes.every((b) => Number.isSafeInteger(b) && b >= 0)).toBe(true);
    expect(bytes).toContain(Number.MAX_SAFE_INTEGER);
    const bounce = column('web_traffic', rows, 'bounce_rate') as number[];
    expect(bounce.every((b) => /^0\.\d{1,4}$/.test(String(b)))).toBe(true);
    expect(bounce.some((b) => !Number.isInteger(b))).toBe(true);
  });

  it('app_reviews: ratings 1-5, several scripts, "" and null bodies, time in order', () => {
    const rows = tickerRows('app_reviews', 'nyse:wmt');
    expect(rows.length).toBeGreaterThanOrEqual(1000);
    const ratings = column('app_reviews', rows, 'rating');
    expect(new Set(ratings)).toEqual(new Set([1, 2, 3, 4, 5]));
    const bodies = column('app_reviews', rows, 'body');
    expect(bodies).toContain('');
    expect(bodies).toContain(null);
    const text = bodies.filter((b): b is string => typeof b === 'string');
    for (const pattern of [
      /\p{Script=Han}|\p{Script=Hiragana}/u,
      /\p{Script=Greek}/u,
      /👍/,
      /"/,
      /,/,
      /\n/,
    ]) {
      expect(
        text.some((t) => pattern.test(t)),
        String(pattern),
      ).toBe(true);
    }
    const at = column('app_reviews', rows, 'reviewed_at') as string[];
    expect(at).toEqual([...at].sort());
    expect(column('app_reviews', rows, 'helpful_count')).toContain(null);
  });
});

describe('paging property', () => {
  const datasets = fc.constantFrom(...DATASET_IDS);
  const tickers = fc.subarray([
    'nasdaq:aapl',
    'nyse:wmt',
    'private:stripe',
    'lse:tsco',
    'tyo:7203',
    'nasdaq:zzzz',
  ]);

  it('any split of a range into pages concatenates to the range', () => {
    fc.assert(
      fc.property(
        datasets,
        tickers,
        fc.integer({ min: 1, max: 40_000 }),
        fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 8 }),
        (ds, t, start, sizes) => {
          const body = { tickers: t };
          const total = queryTotal(ds, body);
          const span = sizes.reduce((a, b) => a + b, 0);
          const whole = queryRows(ds, body, {}, start, span);
          expect(whole.length).toBe(Math.max(0, Math.min(span, total - start + 1)));
          let at = start;
          const pieces: WireValue[][] = [];
          for (const size of sizes) {
            pieces.push(...queryRows(ds, body, {}, at, size));
            at += size;
          }
          expect(pieces).toEqual(whole);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('over HTTP, pages of any size concatenate to queryRows', async () => {
    const emu: Emulator = await startEmulator({ maxPageSize: 300, pageCacheSize: 4 });
    try {
      await fc.assert(
        fc.asyncProperty(
          datasets,
          tickers,
          fc.array(fc.integer({ min: 1, max: 500 }), { minLength: 1, maxLength: 5 }),
          async (ds, t, limits) => {
            const body = { tickers: t };
            const h = await createQuery(emu, ds, body);
            const rows: WireValue[][] = [];
            let start = 1;
            for (const limit of limits) {
              const p = (await (await page(emu, ds, h.id, `?start=${start}&limit=${limit}`)).json()) as {
                rows: WireValue[][];
                count: number;
                limit: number;
              };
              expect(p.limit).toBe(limit);
              expect(p.count).toBe(p.rows.length);
              rows.push(...p.rows);
              start += p.count;
            }
            expect(rows).toEqual(queryRows(ds, body, {}, 1, start - 1));
          },
        ),
        { numRuns: 25 },
      );
    } finally {
      await emu.close();
    }
  });
});

describe('query id', () => {
  it('is sha256 of dataset id, newline, canonical JSON', () => {
    const body = { z: 1, tickers: ['nyse:wmt', 'nasdaq:aapl', 'nyse:wmt'], a: { d: [2, 1], c: null } };
    const canonical = '{"a":{"c":null,"d":[2,1]},"tickers":["nasdaq:aapl","nyse:wmt"],"z":1}';
    const expected = createHash('sha256').update(`web_traffic\n${canonical}`).digest('hex');
    expect(queryInfo('web_traffic', body).id).toBe(expected);
    const none = createHash('sha256').update('web_traffic\n{"tickers":[]}').digest('hex');
    expect(queryInfo('web_traffic', {}).id).toBe(none);
  });
});

describe('timestamps', () => {
  it('the memoised formatter agrees with formatTimestampMs', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2_000_000_000 }), (seconds) => {
        expect(timestampText(seconds * 1000)).toBe(formatTimestampMs(seconds * 1000));
      }),
    );
  });
});

describe('options', () => {
  const invalid: [Record<string, unknown>, RegExp][] = [
    [{ port: 70_000 }, /`port`.*an integer from 0 to 65535, got 70000 \(number\)/],
    [{ port: '80' }, /`port`.*got "80"/],
    [{ seed: -1 }, /`seed`/],
    [{ seed: 1.5 }, /`seed`/],
    [{ rowCap: 0 }, /`rowCap`/],
    [{ maxPageSize: 10, defaultPageSize: 20 }, /`defaultPageSize`.*from 1 to 10/],
    [{ queryDelayMs: -5 }, /`queryDelayMs`/],
    [{ runningStatus: 201 }, /`runningStatus`.*200 or 202/],
    [{ basePath: 'api' }, /`basePath`/],
    [{ basePath: '/a/../b' }, /`basePath`/],
    [{ maxBodyBytes: 0 }, /`maxBodyBytes`/],
    [{ pageCacheSize: -1 }, /`pageCacheSize`/],
    [{ fault: 'reset' }, /`fault`.*function/],
    [{ host: '' }, /`host`/],
    [{ rowcap: 5 }, /`rowcap`: did you mean `rowCap`\?/],
  ];
  for (const [options, pattern] of invalid) {
    it(`rejects ${JSON.stringify(options)}`, async () => {
      await expect(startEmulator(options as never)).rejects.toThrow(pattern);
    });
  }

  it('never shows a rejected key', async () => {
    await expect(startEmulator({ apiKey: 'my secret' })).rejects.toThrow(/not shown/);
    await expect(startEmulator({ apiKey: 'my secret' })).rejects.not.toThrow(/secret/);
  });

  it('normalises a trailing slash of basePath; close() is idempotent', async () => {
    const emu = await startEmulator({ basePath: '/api/' });
    expect(emu.url).toBe(`http://127.0.0.1:${emu.port}/api`);
    expect(emu.port).toBeGreaterThan(0);
    await Promise.all([emu.close(), emu.close()]);
    await emu.close();
  });
});

describe('helpers', () => {
  it('reject unknown datasets and invalid bodies', () => {
    expect(() => queryRows('nope', {}, {}, 1, 1)).toThrow(/job_listings/);
    expect(() => queryTotal('web_traffic', { tickers: ['AAPL'] })).toThrow(/tickers\[0\]/);
    expect(() => queryRows('web_traffic', {}, {}, 0, 1)).toThrow(/start/);
  });
});

describe('a shared emulator', () => {
  let emu: Emulator;
  beforeAll(async () => {
    emu = await startEmulator();
  });
  afterAll(() => emu.close());

  it('serves unfiltered web_traffic in ticker order across company boundaries', async () => {
    const h = await createQuery(emu, 'web_traffic', {});
    const first = queryTotal('web_traffic', { tickers: [COMPANIES[0]!.id] });
    const p = (await (await page(emu, 'web_traffic', h.id, `?start=${first - 1}&limit=4`)).json()) as {
      rows: WireValue[][];
    };
    expect(p.rows.map((r) => r[0])).toEqual([
      COMPANIES[0]!.id,
      COMPANIES[0]!.id,
      COMPANIES[1]!.id,
      COMPANIES[1]!.id,
    ]);
  });
});
