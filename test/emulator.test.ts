import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  COMPANIES,
  DATASET_IDS,
  datasetFields,
  type Emulator,
  queryInfo,
  queryRows,
  startEmulator,
} from '../src/emulator/index.js';
import {
  authHeaders,
  CSV,
  createQuery,
  errorMessage,
  get,
  head,
  MAP,
  page,
  post,
  rawRequest,
  TABLE,
  XLS,
  XLSX,
} from './emulator-helpers.js';

const ALL_FORMATS = [TABLE, MAP, CSV, XLS, XLSX];
const HEX64 = /^[0-9a-f]{64}$/;

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ port: 0, apiKey: 'demo' });
});
afterAll(() => emu.close());

function expectFieldDescriptor(field: unknown): void {
  expect(Object.keys(field as object).sort()).toEqual(
    ['display_name', 'format', 'id', 'length', 'metric', 'options', 'summary', 'type'].sort(),
  );
  const f = field as Record<string, unknown>;
  expect(typeof f.id).toBe('string');
  expect(typeof f.display_name).toBe('string');
  expect(typeof f.summary).toBe('string');
  expect(['string', 'number', 'date', 'datetime', 'boolean']).toContain(f.type);
  expect(f.format === null || typeof f.format === 'string').toBe(true);
  expect(typeof f.metric).toBe('boolean');
  expect(Number.isInteger(f.length)).toBe(true);
  expect(f.options).toEqual([]);
}

describe('GET /datasets/', () => {
  it('lists the four datasets with the list item members', async () => {
    const res = await get(emu, '/datasets/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const { datasets } = (await res.json()) as { datasets: Record<string, unknown>[] };
    expect(datasets.map((d) => d.id)).toEqual(DATASET_IDS);
    expect(DATASET_IDS).toEqual(['job_listings', 'store_locations', 'web_traffic', 'app_reviews']);
    for (const d of datasets) {
      expect(Object.keys(d).sort()).toEqual(
        ['blog_url', 'companies_count', 'display_name', 'id', 'state', 'summary'].sort(),
      );
      expect(d.state).toBe('ready');
      expect(d.blog_url === null || typeof d.blog_url === 'string').toBe(true);
      expect(Number.isInteger(d.companies_count)).toBe(true);
    }
    const count = Object.fromEntries(datasets.map((d) => [d.id, d.companies_count]));
    expect(count.job_listings).toBe(COMPANIES.length);
    expect(count.web_traffic).toBe(COMPANIES.filter((c) => !c.id.startsWith('private:')).length);
    expect(count.store_locations).toBeLessThan(COMPANIES.length);
  });

  it('filters by ticker: a private company has no web traffic; an unknown ticker has nothing', async () => {
    const ids = async (ticker: string) => {
      const res = await get(emu, `/datasets/?ticker=${encodeURIComponent(ticker)}`);
      expect(res.status).toBe(200);
      return ((await res.json()) as { datasets: { id: string }[] }).datasets.map((d) => d.id);
    };
    expect(await ids('nasdaq:aapl')).toEqual(DATASET_IDS);
    const stripe = await ids('private:stripe');
    expect(stripe).toContain('job_listings');
    expect(stripe).not.toContain('web_traffic');
    expect(await ids('nasdaq:zzzz')).toEqual([]);
  });

  it('answers 400 for a malformed ticker filter', async () => {
    const res = await get(emu, '/datasets/?ticker=AAPL');
    expect(res.status).toBe(400);
    expect(await errorMessage(res)).toMatch(/ticker/);
  });

  it('is served with or without the trailing slash, and to HEAD', async () => {
    expect((await get(emu, '/datasets')).status).toBe(200);
    const res = await head(emu, '/datasets/');
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
  });
});

describe('GET /datasets/<id>', () => {
  it('answers the list item plus fields, truncate_limit and formats, with or without the slash', async () => {
    for (const path of ['/datasets/job_listings', '/datasets/job_listings/']) {
      const res = await get(emu, path);
      expect(res.status).toBe(200);
      const meta = (await res.json()) as Record<string, unknown>;
      expect(meta.id).toBe('job_listings');
      expect(meta.state).toBe('ready');
      expect(meta.truncate_limit).toBe(500_000);
      expect(meta.formats).toEqual(ALL_FORMATS);
      expect(meta.fields).toEqual(datasetFields('job_listings'));
      for (const f of meta.fields as unknown[]) expectFieldDescriptor(f);
    }
  });

  it('describes every dataset with realistic columns, a ticker-formatted ticker column first', async () => {
    for (const id of DATASET_IDS) {
      const meta = (await (await get(emu, `/datasets/${id}`)).json()) as {
        fields: Record<string, unknown>[];
      };
      expect(meta.fields[0]).toMatchObject({ id: 'ticker', type: 'string', format: 'ticker' });
      expect(new Set(meta.fields.map((f) => f.id)).size).toBe(meta.fields.length);
    }
    const store = (await (await get(emu, '/datasets/store_locations')).json()) as { formats: string[] };
    expect(store.formats).toEqual([TABLE, MAP, CSV]);
    expect(datasetFields('job_listings')).toHaveLength(13);
  });

  it('answers 404 for unknown or malformed dataset ids', async () => {
    for (const id of ['nope', 'Job_Listings', 'a'.repeat(65), 'job-listings', '%2e%2e']) {
      const res = await get(emu, `/datasets/${id}`);
      expect(res.status, id).toBe(404);
      expect(await errorMessage(res)).toMatch(/unknown dataset|no endpoint/);
    }
  });
});

describe('GET /datasets/<id>/tickers/?query=', () => {
  it('finds tickers by id, name or entity, case-insensitively, without an Authorization header', async () => {
    const res = await fetch(`${emu.url}/datasets/job_listings/tickers/?query=WHOLE%20foods`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { tickers: object; queries: Record<string, { id: string }[]> };
    expect(body.tickers).toEqual({});
    expect(Object.keys(body.queries)).toEqual(['WHOLE foods']);
    expect(body.queries['WHOLE foods']!.map((t) => t.id)).toEqual(['nasdaq:amzn']);
  });

  it('answers full ticker entries; an empty text lists every ticker of the dataset', async () => {
    const res = await get(emu, '/datasets/web_traffic/tickers/?query=');
    const entries = ((await res.json()) as { queries: Record<string, Record<string, unknown>[]> }).queries[
      ''
    ]!;
    expect(entries.length).toBe(COMPANIES.filter((c) => !c.id.startsWith('private:')).length);
    const aapl = entries.find((e) => e.id === 'nasdaq:aapl')!;
    expect(Object.keys(aapl).sort()).toEqual(
      ['country', 'display_name', 'entities', 'id', 'industry', 'sector', 'url'].sort(),
    );
    expect(aapl.entities).toContainEqual({ id: 'apple@nasdaq:aapl', display_name: 'Apple' });
    for (const e of entries) expect(e.id).toMatch(/^[a-z0-9_.-]+:[a-z0-9_.&-]+$/);
  });

  it('still rejects a wrong key', async () => {
    const res = await fetch(`${emu.url}/datasets/job_listings/tickers/?query=a`, {
      headers: { Authorization: 'token wrong' },
    });
    expect(res.status).toBe(401);
  });
});

describe('companies', () => {
  it('are ~50 realistic companies, public and private, some with an empty url', () => {
    expect(COMPANIES.length).toBeGreaterThanOrEqual(45);
    expect(COMPANIES.filter((c) => c.id.startsWith('private:')).length).toBeGreaterThanOrEqual(5);
    expect(COMPANIES.some((c) => c.url === '')).toBe(true);
    for (const c of COMPANIES) {
      expect(c.entities.length).toBeGreaterThanOrEqual(1);
      expect(c.entities.length).toBeLessThanOrEqual(3);
      for (const e of c.entities) expect(e.id.endsWith(`@${c.id}`)).toBe(true);
    }
    expect([...COMPANIES.map((c) => c.id)]).toEqual(COMPANIES.map((c) => c.id).sort());
  });
});

describe('POST /datasets/<id>/query/', () => {
  it('answers a handle: 64-hex id stable for the same body, complete at once with queryDelayMs 0', async () => {
    const a = await createQuery(emu, 'web_traffic', { tickers: ['nasdaq:aapl', 'nyse:wmt'] });
    expect(Object.keys(a).sort()).toEqual(['formats', 'id', 'state', 'total']);
    expect(a.id).toMatch(HEX64);
    expect(a.state).toBe('complete');
    expect(a.total).toBe(queryInfo('web_traffic', { tickers: ['nasdaq:aapl', 'nyse:wmt'] }).total);
    expect(a.formats).toEqual(ALL_FORMATS);
    // Canonical form: order and duplicates of tickers do not matter, nor key order.
    const b = await createQuery(emu, 'web_traffic', { tickers: ['nyse:wmt', 'nasdaq:aapl', 'nyse:wmt'] });
    expect(b.id).toBe(a.id);
    expect((await createQuery(emu, 'job_listings', { tickers: ['nasdaq:aapl', 'nyse:wmt'] })).id).not.toBe(
      a.id,
    );
  });

  it('treats a missing tickers member and [] as the same query; other members change the id', async () => {
    const none = await createQuery(emu, 'app_reviews', {});
    expect((await createQuery(emu, 'app_reviews', { tickers: [] })).id).toBe(none.id);
    const filtered = await createQuery(emu, 'app_reviews', { filters: [{ column: 'rating', value: 5 }] });
    expect(filtered.id).not.toBe(none.id);
    const reordered = await createQuery(emu, 'app_reviews', { sorts: { b: 1, a: 2 } });
    expect((await createQuery(emu, 'app_reviews', { sorts: { a: 2, b: 1 } })).id).toBe(reordered.id);
    expect(queryInfo('app_reviews', { sorts: { a: 2, b: 1 } }).id).toBe(reordered.id);
  });

  it('keeps only the store_locations formats for its queries', async () => {
    const h = await createQuery(emu, 'store_locations', { tickers: ['nyse:wmt'] });
    expect(h.formats).toEqual([TABLE, MAP, CSV]);
  });

  it('gives a ticker the dataset lacks no rows', async () => {
    const h = await createQuery(emu, 'web_traffic', { tickers: ['private:stripe'] });
    expect(h.total).toBe(0);
    const body = await (await page(emu, 'web_traffic', h.id, '')).json();
    expect(body).toMatchObject({ total: 0, count: 0, rows: [] });
  });
});

describe('HEAD /datasets/<id>/query/<qid>', () => {
  it('answers 200, no body, and X-State, X-Total, X-Truncated, X-Formats, HSTS, Content-Type', async () => {
    const h = await createQuery(emu, 'job_listings', { tickers: ['nasdaq:aapl'] });
    const res = await head(emu, `/datasets/job_listings/query/${h.id}`, { Accept: TABLE });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
    expect(res.headers.get('x-state')).toBe('complete');
    expect(res.headers.get('x-total')).toBe(String(h.total));
    expect(res.headers.get('x-truncated')).toBe('false');
    expect(res.headers.get('x-formats')).toBe(ALL_FORMATS.join(','));
    expect(res.headers.get('strict-transport-security')).toBe('max-age=15768000');
    expect(res.headers.get('content-type')).toBe('application/json');
  });
});

describe('GET /datasets/<id>/query/<qid>', () => {
  it('answers a table page with every member, the HEAD headers, rows lined up with fields', async () => {
    const h = await createQuery(emu, 'job_listings', { tickers: ['nasdaq:aapl'] });
    const res = await page(emu, 'job_listings', h.id, '?start=1&limit=10');
    expect(res.headers.get('content-type')).toBe(TABLE);
    expect(res.headers.get('x-state')).toBe('complete');
    expect(res.headers.get('x-total')).toBe(String(h.total));
    expect(res.headers.get('x-truncated')).toBe('false');
    expect(res.headers.get('x-formats')).toBe(ALL_FORMATS.join(','));
    expect(res.headers.get('strict-transport-security')).toBe('max-age=15768000');
    const body = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual([
      'id',
      'state',
      'total',
      'count',
      'start',
      'limit',
      'rows',
      'fields',
      'group_fields',
      'sort_fields',
      'last_date_updated',
    ]);
    expect(body).toMatchObject({
      id: h.id,
      state: 'complete',
      total: h.total,
      count: 10,
      start: 1,
      limit: 10,
    });
    expect(body.rows).toEqual(queryRows('job_listings', { tickers: ['nasdaq:aapl'] }, {}, 1, 10));
    expect(body.fields).toEqual(datasetFields('job_listings'));
    expect(body.group_fields).toEqual([]);
    expect(body.sort_fields).toEqual([]);
    expect(body.last_date_updated).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    for (const row of body.rows as unknown[][]) expect(row).toHaveLength(13);
  });

  it('negotiates Accept: missing, */* and application/json mean table JSON', async () => {
    const h = await createQuery(emu, 'web_traffic', { tickers: ['nasdaq:msft'] });
    const path = `${emu.url}/datasets/web_traffic/query/${h.id}?limit=2`;
    for (const accept of [undefined, '*/*', 'application/json', 'text/html;q=0.5, application/json']) {
      const headers = authHeaders(emu);
      if (accept !== undefined) headers.Accept = accept;
      // undici adds `accept: */*` when none is given; send a raw request for the missing case.
      const res =
        accept === undefined
          ? await rawRequest(emu, 'GET', new URL(path).pathname + new URL(path).search, headers)
          : await fetch(path, { headers }).then(async (r) => ({
              status: r.status,
              headers: { 'content-type': r.headers.get('content-type') ?? undefined },
              body: await r.text(),
            }));
      expect(res.status, String(accept)).toBe(200);
      expect(res.headers['content-type']).toBe(TABLE);
      expect(JSON.parse(res.body).rows).toHaveLength(2);
    }
    const csv = await get(emu, `/datasets/web_traffic/query/${h.id}?limit=2`, { Accept: 'text/*' });
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
  });

  it('answers 406 naming the offered types when Accept asks for one the query lacks', async () => {
    const h = await createQuery(emu, 'store_locations', { tickers: ['nyse:wmt'] });
    const res = await get(emu, `/datasets/store_locations/query/${h.id}`, { Accept: XLSX });
    expect(res.status).toBe(406);
    expect(res.headers.get('x-formats')).toBe([TABLE, MAP, CSV].join(','));
    const message = await errorMessage(res);
    for (const type of [TABLE, MAP, CSV]) expect(message).toContain(type);
  });

  it('pages: default start 1 and limit 1000, echoes start/limit, clamps at maxPageSize, empty past the end', async () => {
    const body = { tickers: ['nasdaq:aapl'] };
    const h = await createQuery(emu, 'job_listings', body);
    const first = (await (await page(emu, 'job_listings', h.id, '')).json()) as Record<string, unknown>;
    expect(first).toMatchObject({ start: 1, limit: 1000, count: 1000 });
    const last = (await (await page(emu, 'job_listings', h.id, `?start=${h.total - 4}&limit=10`)).json()) as {
      count: number;
      rows: unknown[];
    };
    expect(last).toMatchObject({ start: h.total - 4, limit: 10, count: 5 });
    expect(last.rows).toEqual(queryRows('job_listings', body, {}, h.total - 4, 10));
    const past = (await (
      await page(emu, 'job_listings', h.id, `?start=${h.total + 1}&limit=10`)
    ).json()) as object;
    expect(past).toMatchObject({ count: 0, rows: [], start: h.total + 1, total: h.total });
  });

  it('clamps a limit above maxPageSize: the page echoes the limit, count is smaller', async () => {
    const small = await startEmulator({ maxPageSize: 50, defaultPageSize: 20 });
    try {
      const h = await createQuery(small, 'web_traffic', {});
      const p = (await (await page(small, 'web_traffic', h.id, '?start=3&limit=500')).json()) as Record<
        string,
        unknown
      >;
      expect(p).toMatchObject({ start: 3, limit: 500, count: 50 });
      expect(p.rows).toEqual(queryRows('web_traffic', {}, {}, 3, 50));
      const d = (await (await page(small, 'web_traffic', h.id, '')).json()) as Record<string, unknown>;
      expect(d).toMatchObject({ start: 1, limit: 20, count: 20 });
    } finally {
      await small.close();
    }
  });

  it('answers 400 for start/limit that are not integers >= 1', async () => {
    const h = await createQuery(emu, 'web_traffic', {});
    for (const params of [
      '?start=0',
      '?limit=0',
      '?start=-1',
      '?start=1.5',
      '?limit=abc',
      '?start=',
      '?limit=1e3',
    ]) {
      const res = await get(emu, `/datasets/web_traffic/query/${h.id}${params}`);
      expect(res.status, params).toBe(400);
      expect(await errorMessage(res)).toMatch(/start|limit/);
    }
  });
});

describe('row cap', () => {
  it('truncates unfiltered job_listings at 500000: X-Truncated true, total 500000', async () => {
    const info = queryInfo('job_listings');
    expect(info.rowsBeforeCap).toBeGreaterThanOrEqual(600_000);
    const h = await createQuery(emu, 'job_listings', {});
    expect(h.total).toBe(500_000);
    const res = await head(emu, `/datasets/job_listings/query/${h.id}`);
    expect(res.headers.get('x-truncated')).toBe('true');
    expect(res.headers.get('x-total')).toBe('500000');
    const last = (await (await page(emu, 'job_listings', h.id, '?start=499999&limit=5')).json()) as {
      count: number;
      total: number;
    };
    expect(last).toMatchObject({ count: 2, total: 500_000 });
  });

  it('follows a custom rowCap', async () => {
    const capped = await startEmulator({ rowCap: 1234 });
    try {
      const h = await createQuery(capped, 'app_reviews', { tickers: ['nasdaq:aapl'] });
      expect(h.total).toBe(1234);
      const res = await head(capped, `/datasets/app_reviews/query/${h.id}`);
      expect(res.headers.get('x-truncated')).toBe('true');
      const meta = (await (await get(capped, '/datasets/app_reviews')).json()) as { truncate_limit: number };
      expect(meta.truncate_limit).toBe(1234);
    } finally {
      await capped.close();
    }
  });
});

describe('query lifecycle with queryDelayMs', () => {
  for (const runningStatus of [200, 202] as const) {
    it(`is running, then complete (HEAD while running answers ${runningStatus})`, async () => {
      const slow = await startEmulator({ queryDelayMs: 300, runningStatus });
      try {
        const body = { tickers: ['nyse:wmt'] };
        const h = await createQuery(slow, 'web_traffic', body);
        expect(h).toMatchObject({ state: 'running', total: 0 });
        const path = `/datasets/web_traffic/query/${h.id}`;
        const check = await head(slow, path);
        expect(check.status).toBe(runningStatus);
        expect(check.headers.get('x-state')).toBe('running');
        expect(check.headers.get('x-formats')).toBe(ALL_FORMATS.join(','));
        const early = await get(slow, path);
        expect(early.status).toBe(409);
        expect(early.headers.get('x-state')).toBe('running');
        expect(await errorMessage(early)).toMatch(/running/);
        // Re-posting does not restart the clock.
        expect((await createQuery(slow, 'web_traffic', body)).id).toBe(h.id);
        await new Promise((r) => setTimeout(r, 350));
        const done = await head(slow, path);
        expect(done.status).toBe(200);
        expect(done.headers.get('x-state')).toBe('complete');
        expect(done.headers.get('x-total')).toBe(String(queryInfo('web_traffic', body).total));
        expect(await createQuery(slow, 'web_traffic', body)).toMatchObject({ state: 'complete' });
        expect((await get(slow, path)).status).toBe(200);
      } finally {
        await slow.close();
      }
    });
  }
});

describe('basePath', () => {
  it('serves under the prefix and answers 404 outside it', async () => {
    const api = await startEmulator({ basePath: '/api/v1' });
    try {
      expect(api.url).toBe(`http://127.0.0.1:${api.port}/api/v1`);
      expect((await get(api, '/datasets/')).status).toBe(200);
      const outside = await fetch(`http://127.0.0.1:${api.port}/datasets/`, { headers: authHeaders(api) });
      expect(outside.status).toBe(404);
      expect(await errorMessage(outside)).toMatch(/api\/v1/);
      const h = await createQuery(api, 'web_traffic', { tickers: ['nasdaq:aapl'] });
      expect((await page(api, 'web_traffic', h.id, '?limit=1')).status).toBe(200);
      // `..` is data, not navigation: it cannot climb out of (or back into) the prefix.
      const climb = await rawRequest(api, 'GET', '/api/v1/../v1/datasets/', authHeaders(api));
      expect(climb.status).toBe(404);
      const sneak = await rawRequest(api, 'GET', '/elsewhere/../api/v1/datasets/', authHeaders(api));
      expect(sneak.status).toBe(404);
    } finally {
      await api.close();
    }
  });
});

describe('errors', () => {
  it('401 for a missing key, a wrong key or another scheme; the key is never echoed', async () => {
    const url = `${emu.url}/datasets/`;
    const cases: [Record<string, string>, RegExp][] = [
      [{}, /missing Authorization/],
      [{ Authorization: 'token s3cr3t-wrong' }, /invalid API key/],
      [{ Authorization: 'Bearer demo' }, /token scheme/],
      [{ Authorization: 'token' }, /token scheme/],
    ];
    for (const [headers, pattern] of cases) {
      const res = await fetch(url, { headers });
      expect(res.status).toBe(401);
      const message = await errorMessage(res);
      expect(message).toMatch(pattern);
      expect(message).not.toContain('s3cr3t');
      expect(message).not.toContain('demo');
    }
  });

  it('400 for an unsupported X-API-Version; absent is fine', async () => {
    const bad = await fetch(`${emu.url}/datasets/`, {
      headers: { Authorization: 'token demo', 'X-API-Version': '20990101' },
    });
    expect(bad.status).toBe(400);
    expect(await errorMessage(bad)).toMatch(/X-API-Version "20990101".*20151130/);
    const absent = await fetch(`${emu.url}/datasets/`, { headers: { Authorization: 'token demo' } });
    expect(absent.status).toBe(200);
  });

  it('404 for unknown paths, datasets and queries; 400 for malformed query ids', async () => {
    expect((await get(emu, '/nothing')).status).toBe(404);
    expect((await get(emu, '/datasets/job_listings/other/')).status).toBe(404);
    const unknown = await get(emu, `/datasets/job_listings/query/${'0'.repeat(64)}`);
    expect(unknown.status).toBe(404);
    expect(await errorMessage(unknown)).toMatch(/unknown query/);
    for (const id of ['abc', 'A'.repeat(64), `${'0'.repeat(63)}g`, '0'.repeat(65)]) {
      const res = await get(emu, `/datasets/job_listings/query/${id}`);
      expect(res.status, id).toBe(400);
      expect(await errorMessage(res)).toBe('query id must be 64 lower-case hex characters');
    }
    // A query of another dataset is unknown here.
    const h = await createQuery(emu, 'web_traffic', {});
    expect((await get(emu, `/datasets/app_reviews/query/${h.id}`)).status).toBe(404);
  });

  it('400 for bodies that are not JSON objects or carry bad tickers, saying which element', async () => {
    const cases: [string, RegExp][] = [
      ['not json', /not valid JSON/],
      ['', /not valid JSON/],
      ['[]', /JSON object, got array/],
      ['null', /JSON object, got null/],
      ['"x"', /JSON object/],
      ['{"tickers":"nasdaq:aapl"}', /tickers must be an array/],
      ['{"tickers":["nasdaq:aapl",42]}', /tickers\[1\].*42/],
      ['{"tickers":["nasdaq:aapl","NASDAQ:MSFT"]}', /tickers\[1\].*NASDAQ:MSFT/],
      ['{"tickers":["aapl"]}', /tickers\[0\]/],
      [`{"tickers":["${'x'.repeat(500)}"]}`, /tickers\[0\]/],
      [`{"a":${'['.repeat(100)}${']'.repeat(100)}}`, /nest/],
    ];
    for (const [body, pattern] of cases) {
      const res = await post(emu, '/datasets/job_listings/query/', body);
      expect(res.status, body.slice(0, 40)).toBe(400);
      const message = await errorMessage(res);
      expect(message).toMatch(pattern);
      expect(message.length).toBeLessThan(250);
    }
  });

  it('405 with Allow for a wrong method', async () => {
    const a = await fetch(`${emu.url}/datasets/`, { method: 'POST', headers: authHeaders(emu), body: '{}' });
    expect(a.status).toBe(405);
    expect(a.headers.get('allow')).toBe('GET, HEAD');
    await errorMessage(a);
    const b = await get(emu, '/datasets/job_listings/query/');
    expect(b.status).toBe(405);
    expect(b.headers.get('allow')).toBe('POST');
    const h = await createQuery(emu, 'web_traffic', {});
    const c = await fetch(`${emu.url}/datasets/web_traffic/query/${h.id}`, {
      method: 'DELETE',
      headers: authHeaders(emu),
    });
    expect(c.status).toBe(405);
    expect(c.headers.get('allow')).toBe('GET, HEAD');
  });

  it('413 for a body over maxBodyBytes, declared or streamed', async () => {
    const tiny = await startEmulator({ maxBodyBytes: 100 });
    try {
      const body = JSON.stringify({ tickers: Array.from({ length: 20 }, (_, i) => `nasdaq:t${i}`) });
      const res = await post(tiny, '/datasets/job_listings/query/', body);
      expect(res.status).toBe(413);
      expect(await errorMessage(res)).toMatch(/100 bytes/);
      const chunked = await fetch(`${tiny.url}/datasets/job_listings/query/`, {
        method: 'POST',
        headers: authHeaders(tiny, { 'Content-Type': 'application/json' }),
        body: new Blob([body]).stream(),
        duplex: 'half',
      } as RequestInit);
      expect(chunked.status).toBe(413);
      // The emulator is still fine afterwards.
      expect((await post(tiny, '/datasets/job_listings/query/', '{}')).status).toBe(200);
    } finally {
      await tiny.close();
    }
  });

  it('400 for malformed percent-encoding in path or query; encoded slashes and dots stay data', async () => {
    const h = authHeaders(emu);
    expect((await rawRequest(emu, 'GET', '/datasets/%zz', h)).status).toBe(400);
    expect((await rawRequest(emu, 'GET', '/datasets/?ticker=%E0%A4%A', h)).status).toBe(400);
    expect((await rawRequest(emu, 'GET', '/datasets/%ff', h)).status).toBe(400);
    expect((await rawRequest(emu, 'GET', '/datasets%2Fjob_listings', h)).status).toBe(404);
    expect((await rawRequest(emu, 'GET', '/datasets/job_listings%2Fquery%2F', h)).status).toBe(404);
    expect((await rawRequest(emu, 'GET', '/datasets/job_listings/../job_listings', h)).status).toBe(404);
    const encoded = await rawRequest(emu, 'GET', '/%64atasets/%6aob_listings', h);
    expect(encoded.status).toBe(200);
  });

  it('survives hostile input: it keeps answering', async () => {
    const h = authHeaders(emu);
    const hostile = [
      rawRequest(emu, 'GET', `/datasets/${'%00'.repeat(50)}`, h),
      rawRequest(emu, 'GET', '/datasets/?__proto__=x&constructor=y', h),
      rawRequest(emu, 'POST', '/datasets/job_listings/query/', h, '{"__proto__":{"tickers":1},"tickers":[]}'),
      rawRequest(emu, 'POST', '/datasets/job_listings/query/', h, Buffer.from([0xff, 0xfe, 0x00])),
      rawRequest(emu, 'GET', `/datasets/web_traffic/tickers/?query=${'%F0%9F%91%8D'.repeat(200)}`, h),
      rawRequest(emu, 'OPTIONS', '/datasets/', h),
    ];
    const statuses = (await Promise.all(hostile)).map((r) => r.status);
    expect(statuses).toEqual([404, 200, 200, 400, 200, 405]);
    expect((await get(emu, '/datasets/')).status).toBe(200);
  });
  it('answers malformed HTTP with 400 {message} and shrugs off a client that hangs up mid-body', async () => {
    const talk = (bytes: string, hangUp: boolean) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(emu.port, '127.0.0.1', () => {
          socket.write(bytes);
          if (hangUp) setTimeout(() => socket.destroy(), 50);
        });
        let text = '';
        socket.on('data', (c: Buffer) => {
          text += c.toString('utf8');
        });
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
      });
    const garbage = await talk('HELLO THERE\r\n\r\n', false);
    expect(garbage).toMatch(/^HTTP\/1\.1 400 /);
    expect(garbage).toContain('{"message":"malformed HTTP request"}');
    const partial = await talk(
      'POST /datasets/job_listings/query/ HTTP/1.1\r\nHost: x\r\nAuthorization: token demo\r\n' +
        'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"tickers":',
      true,
    );
    expect(partial).toBe('');
    expect((await get(emu, '/datasets/')).status).toBe(200);
  });
});
