import { readFileSync } from 'node:fs';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  API_VERSION,
  AuthenticationError,
  BadRequestError,
  DatasetClient,
  type DqsError,
  InvalidArgumentError,
  MediaType,
  NotAcceptableError,
  NotFoundError,
  ProtocolError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  VERSION,
} from '../src/index.js';
import { expectRejects, setup } from './helpers.js';

const KEY = 'test-key-123';

describe('DatasetClient endpoints over HTTP against the emulator', () => {
  it('lists datasets, and only those of a ticker when asked', async () => {
    const { client } = await setup();
    const all = await client.listDatasets();
    const ids = all.map((d) => d.id);
    expect(ids).toEqual(
      expect.arrayContaining(['job_listings', 'store_locations', 'web_traffic', 'app_reviews']),
    );
    for (const d of all) {
      expect(d).toMatchObject({ id: expect.any(String), display_name: expect.any(String), state: 'ready' });
      expect(d.blog_url === null || typeof d.blog_url === 'string').toBe(true);
    }
    const privateOnly = await client.listDatasets({ ticker: 'private:stripe' });
    expect(privateOnly.length).toBeGreaterThan(0);
    expect(privateOnly.length).toBeLessThan(all.length);
  });

  it('reads a dataset with its field descriptors', async () => {
    const { client } = await setup();
    const meta = await client.getDataset('job_listings');
    expect(meta.id).toBe('job_listings');
    expect(meta.truncate_limit).toBe(500_000);
    const ticker = meta.fields.find((f) => f.format === 'ticker');
    expect(ticker).toBeDefined();
    for (const f of meta.fields) {
      expect(['string', 'number', 'date', 'datetime', 'boolean']).toContain(f.type);
      expect(f).toMatchObject({ id: expect.any(String), metric: expect.any(Boolean), options: [] });
    }
  });

  it('searches tickers by text', async () => {
    const { client } = await setup();
    const found = await client.searchTickers('job_listings', 'apple');
    expect(found.map((t) => t.id)).toContain('nasdaq:aapl');
    const entry = found.find((t) => t.id === 'nasdaq:aapl')!;
    expect(entry.entities.length).toBeGreaterThan(0);
    expect(entry.entities[0]!.id).toMatch(/@nasdaq:aapl$/);
    expect(await client.searchTickers('job_listings', 'zzzz-no-such-company')).toEqual([]);
  });

  it('creates a query, checks it, and reads a page', async () => {
    const { client } = await setup();
    const handle = await client.createQuery('job_listings', { tickers: ['nasdaq:aapl'] });
    expect(handle.id).toMatch(/^[0-9a-f]{64}$/);
    expect(handle.formats).toContain(MediaType.table);
    const again = await client.createQuery('job_listings', { tickers: ['nasdaq:aapl'] });
    expect(again.id).toBe(handle.id);
    const status = await client.checkQuery('job_listings', handle.id);
    expect(status).toMatchObject({ state: 'complete', truncated: false, httpStatus: 200 });
    expect(status.total).toBeGreaterThan(100);
    expect(status.formats).toEqual(expect.arrayContaining(Object.values(MediaType)));
    const page = await client.readPage('job_listings', handle.id, { start: 1, limit: 10 });
    expect(page).toMatchObject({ id: handle.id, start: 1, limit: 10, count: 10, total: status.total });
    expect(page.rows).toHaveLength(10);
    expect(page.rows[0]).toHaveLength(page.fields.length);
  });

  it('keeps a base URL path: every request goes below it', async () => {
    const { emu, client } = await setup({ basePath: '/api/v1' });
    expect(emu.url).toMatch(/\/api\/v1$/);
    const withSlash = new DatasetClient({ baseUrl: `${emu.url}/`, apiKey: KEY });
    try {
      expect((await client.listDatasets()).length).toBeGreaterThan(3);
      expect((await withSlash.listDatasets()).length).toBeGreaterThan(3);
      const h = await client.createQuery('web_traffic', { tickers: ['nasdaq:aapl'] });
      expect((await client.checkQuery('web_traffic', h.id)).state).toBe('complete');
    } finally {
      await withSlash.close();
    }
  });

  for (const runningStatus of [200, 202] as const) {
    it(`sees a running query through HEAD answering ${runningStatus}, then waits for completion`, async () => {
      const { client } = await setup({ queryDelayMs: 300, runningStatus });
      const handle = await client.createQuery('store_locations', { tickers: ['nyse:wmt'] });
      expect(handle.state).toBe('running');
      const running = await client.checkQuery('store_locations', handle.id);
      expect(running).toMatchObject({ state: 'running', httpStatus: runningStatus });
      const t0 = Date.now();
      const result = await client.query('store_locations', { tickers: ['nyse:wmt'] }, { pollMinMs: 20 });
      expect(Date.now() - t0).toBeLessThan(2000);
      expect(result.total).toBeGreaterThan(0);
      expect(result.fields.length).toBeGreaterThan(5);
    });
  }

  it('reports truncation at the row cap for an unfiltered query', async () => {
    const { client } = await setup();
    const handle = await client.createQuery('job_listings', {});
    const status = await client.checkQuery('job_listings', handle.id);
    expect(status).toMatchObject({ state: 'complete', total: 500_000, truncated: true });
  });

  it('sends the auth, version, user-agent and accept headers', async () => {
    const seen: Record<string, string | string[] | undefined>[] = [];
    const { client } = await setup({
      fault: (req) => {
        seen.push(req.headers);
        return undefined;
      },
    });
    await client.listDatasets();
    const h = seen[0]!;
    expect(h.authorization).toBe(`token ${KEY}`);
    expect(h['x-api-version']).toBe(API_VERSION);
    expect(h['user-agent']).toBe(`dqs-client/${VERSION} node/${process.versions.node}`);
    expect(h.accept).toBe('application/json');
  });

  it('keeps VERSION equal to package.json', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(VERSION).toBe(pkg.version);
  });
});

describe('DatasetClient errors', () => {
  it('a wrong key is an AuthenticationError that never shows the key', async () => {
    const { emu } = await setup();
    const client = new DatasetClient({ baseUrl: emu.url, apiKey: 'wrong-secret-key' });
    try {
      const err = await expectRejects<AuthenticationError>(client.listDatasets(), (e) => {
        expect(e).toBeInstanceOf(AuthenticationError);
      });
      expect(err).toMatchObject({ code: 'DQS_AUTH', status: 401, method: 'GET' });
      expect(err.url).toBe(`${emu.url}/datasets/`);
      expect(err.serverMessage).toBeTruthy();
      expect(`${err.message} ${err.stack} ${inspect(err)} ${inspect(client)}`).not.toContain(
        'wrong-secret-key',
      );
    } finally {
      await client.close();
    }
  });

  it('asks a token provider again once after a 401', async () => {
    const { emu } = await setup();
    const tokens = ['expired-token', KEY];
    let calls = 0;
    const client = new DatasetClient({ baseUrl: emu.url, token: async () => tokens[calls++]! });
    try {
      expect((await client.listDatasets()).length).toBeGreaterThan(0);
      expect(calls).toBe(2);
    } finally {
      await client.close();
    }
  });

  it('maps 404, 406, 400, 429 and 5xx to typed errors (retries off)', async () => {
    const { client, emu } = await setup(
      {
        fault: (req) => {
          if (req.query.fault === undefined && req.path.endsWith('/tickers/')) {
            const q = req.query.query;
            if (q === 'ratelimit')
              return {
                kind: 'status',
                status: 429,
                headers: { 'retry-after': '2' },
                body: '{"message":"slow down"}',
              };
            if (q === 'boom') return { kind: 'status', status: 503, body: '{"message":"maintenance"}' };
          }
          return undefined;
        },
      },
      { retry: false },
    );
    await expectRejects<NotFoundError>(client.getDataset('no_such_dataset'), (e) => {
      expect(e).toBeInstanceOf(NotFoundError);
      expect(e).toMatchObject({ code: 'DQS_NOT_FOUND', status: 404 });
    });
    await expectRejects<NotFoundError>(client.checkQuery('job_listings', 'a'.repeat(64)), (e) => {
      expect(e.code).toBe('DQS_NOT_FOUND');
    });
    const h = await client.createQuery('store_locations', { tickers: ['nyse:wmt'] });
    await expectRejects<NotAcceptableError>(
      client.openPage('store_locations', h.id, { start: 1, limit: 5, mediaType: MediaType.xlsx }),
      (e) => {
        expect(e).toBeInstanceOf(NotAcceptableError);
        expect(e.status).toBe(406);
      },
    );
    const rl = await expectRejects<RateLimitedError>(
      client.searchTickers('job_listings', 'ratelimit'),
      (e) => {
        expect(e).toBeInstanceOf(RateLimitedError);
      },
    );
    expect(rl.retryAfterMs).toBe(2000);
    expect(rl.serverMessage).toBe('slow down');
    await expectRejects<ServerError>(client.searchTickers('job_listings', 'boom'), (e) => {
      expect(e).toBeInstanceOf(ServerError);
      expect(e).toMatchObject({ code: 'DQS_SERVER', status: 503, serverMessage: 'maintenance' });
    });
    const versioned = new DatasetClient({ baseUrl: emu.url, apiKey: KEY, apiVersion: '20990101' });
    try {
      await expectRejects<BadRequestError>(versioned.listDatasets(), (e) => {
        expect(e).toBeInstanceOf(BadRequestError);
        expect(e.status).toBe(400);
        expect(e.serverMessage).toMatch(/version/i);
      });
    } finally {
      await versioned.close();
    }
  });

  it('validates arguments before sending anything', async () => {
    const { client, emu } = await setup();
    const before = emu.requests.length;
    const bad: [string, () => Promise<unknown>][] = [
      ['body.tickers[0]', () => client.createQuery('job_listings', { tickers: ['AAPL'] })],
      ['body.tickers[1]', () => client.createQuery('job_listings', { tickers: ['nasdaq:aapl', 'aapl'] })],
      ['body', () => client.createQuery('job_listings', [] as never)],
      ['datasetId', () => client.getDataset('../etc/passwd')],
      ['datasetId', () => client.getDataset('')],
      ['queryId', () => client.checkQuery('job_listings', 'not-hex')],
      ['queryId', () => client.readPage('job_listings', 'A'.repeat(64), { start: 1, limit: 1 })],
      ['start', () => client.readPage('job_listings', 'a'.repeat(64), { start: 0, limit: 1 })],
      ['limit', () => client.readPage('job_listings', 'a'.repeat(64), { start: 1, limit: -1 })],
      ['ticker', () => client.listDatasets({ ticker: 'nasdaq aapl' })],
      ['text', () => client.searchTickers('job_listings', 'x'.repeat(5000))],
    ];
    for (const [argument, call] of bad) {
      await expectRejects<InvalidArgumentError>(call(), (e) => {
        expect(e).toBeInstanceOf(InvalidArgumentError);
        expect(e.code).toBe('DQS_INVALID_ARGUMENT');
        expect(e.argument).toBe(argument);
        expect(e.message).toMatch(/Expected/);
      });
    }
    expect(emu.requests.length).toBe(before);
  });

  it('turns responses that break the spec into ProtocolErrors', async () => {
    const { client } = await setup({
      fault: (req) => {
        if (req.method === 'GET' && req.path === '/datasets/')
          return { kind: 'status', status: 200, body: 'not json' };
        if (req.method === 'POST')
          return { kind: 'status', status: 200, body: '{"id":"XYZ","state":"complete"}' };
        if (req.method === 'HEAD') return { kind: 'status', status: 200, headers: { 'x-total': '5' } };
        return undefined;
      },
    });
    await expectRejects<ProtocolError>(client.listDatasets(), (e) => expect(e).toBeInstanceOf(ProtocolError));
    await expectRejects<ProtocolError>(client.createQuery('job_listings', {}), (e) => {
      expect(e).toBeInstanceOf(ProtocolError);
      expect(e.message).toMatch(/64 lower-case hex/);
    });
    await expectRejects<ProtocolError>(client.checkQuery('job_listings', 'b'.repeat(64)), (e) => {
      expect(e.message).toMatch(/X-State/);
    });
  });

  it('honours AbortSignal and per-request timeouts', async () => {
    const { client } = await setup({ fault: () => ({ kind: 'delay', ms: 400 }) }, { retry: false });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const t0 = Date.now();
    await expectRejects<DqsError>(client.listDatasets({ signal: ac.signal }), (e) =>
      expect(e.code).toBe('DQS_ABORTED'),
    );
    await expectRejects<DqsError>(client.listDatasets({ signal: AbortSignal.abort() }), (e) =>
      expect(e.code).toBe('DQS_ABORTED'),
    );
    await expectRejects<TimeoutError>(client.listDatasets({ timeoutMs: 60 }), (e) => {
      expect(e).toBeInstanceOf(TimeoutError);
      expect(e.code).toBe('DQS_TIMEOUT');
    });
    expect(Date.now() - t0).toBeLessThan(350);
  });

  it('reads baseUrl and key from the environment, and refuses plain http to remote hosts', async () => {
    const { emu } = await setup();
    process.env.DQS_BASE_URL = emu.url;
    process.env.DQS_API_KEY = KEY;
    const client = new DatasetClient();
    try {
      expect((await client.listDatasets()).length).toBeGreaterThan(0);
    } finally {
      delete process.env.DQS_BASE_URL;
      delete process.env.DQS_API_KEY;
      await client.close();
    }
    expect(() => new DatasetClient({ baseUrl: 'http://example.com', apiKey: 'k' })).toThrow(/plain http/);
    expect(
      () => new DatasetClient({ baseUrl: 'http://example.com', apiKey: 'k', allowInsecureHttp: true }),
    ).not.toThrow();
    expect(() => new DatasetClient({ apiKey: 'k' })).toThrow(InvalidArgumentError);
    expect(() => new DatasetClient({ baseUrl: 'ftp://x', apiKey: 'k' })).toThrow(/http/);
    expect(() => new DatasetClient({ baseUrl: 'https://u:p@x', apiKey: 'k' })).toThrow(/credentials/);
  });
});
