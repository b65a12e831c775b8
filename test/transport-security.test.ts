/**
 * The key stays secret: never in an error (message, stack, JSON, inspect), an event, a URL or
 * `util.inspect(client)`; never sent over plain http:// to a remote host without an opt-in; never carried
 * by a redirect to another host.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { faultPlan, startEmulator } from '../src/emulator/index.js';
import {
  DatasetClient,
  type DqsError,
  HttpError,
  InvalidArgumentError,
  MediaType,
  type RetryEvent,
} from '../src/index.js';
import { expectRejects, setup } from './helpers.js';

const SECRET = 'sk-live-7f3a9c1e55d24b0c8e6aSECRET';

/** Every way an error or event might be shown or logged. */
function renderings(value: unknown): string[] {
  const out = [
    inspect(value, { depth: Number.POSITIVE_INFINITY, showHidden: true }),
    JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? String(v) : v)) ?? '',
    String(value),
  ];
  if (value instanceof Error) {
    out.push(value.message, value.stack ?? '');
    let cause: unknown = value.cause;
    while (cause instanceof Error) {
      out.push(cause.message, cause.stack ?? '', inspect(cause, { depth: 8, showHidden: true }));
      cause = cause.cause;
    }
  }
  return out;
}

function expectNoSecret(value: unknown, secret = SECRET): void {
  for (const text of renderings(value)) expect(text).not.toContain(secret);
}

async function failure(promise: Promise<unknown>): Promise<DqsError> {
  return expectRejects<DqsError>(promise, () => {});
}

describe('the key never shows', () => {
  it('not in util.inspect, JSON or String of the client, with a key or a token provider', async () => {
    const { emu } = await setup({ apiKey: SECRET });
    for (const client of [
      new DatasetClient({ baseUrl: emu.url, apiKey: SECRET }),
      new DatasetClient({ baseUrl: emu.url, token: () => SECRET }),
    ]) {
      await client.listDatasets(); // a token provider has been asked by now
      expectNoSecret(client);
      expectNoSecret(client.http);
      expect(inspect(client)).toBe(`DatasetClient { baseUrl: '${emu.url}/' }`);
      expect(
        Object.values(client)
          .map((v) => inspect(v, { depth: 8 }))
          .join(),
      ).not.toContain(SECRET);
      await client.close();
    }
  });

  it('not in any error or retry event, whatever failed, nor in a URL the server saw', async () => {
    const plan = faultPlan({
      seed: 1,
      rate: 0,
      retryAfter: '0',
      at: { 1: '429', 2: '503', 3: 'reset', 4: 'cut', 5: { kind: 'delay', ms: 1000 } },
    });
    const { emu } = await setup({ apiKey: SECRET, fault: plan });
    const client = new DatasetClient({
      baseUrl: emu.url,
      apiKey: SECRET,
      retry: { retries: 0 },
      timeoutMs: 200,
      maxResponseBytes: 2000,
      // Plain bodies: the too-large page fails on its Content-Length at once; a compressed one would be
      // compressed whole by the emulator first, which can pass the 200 ms timeout on a loaded machine.
      compression: false,
    });
    const events: RetryEvent[] = [];
    client.on('retry', (e: RetryEvent) => events.push(e));
    const errors: DqsError[] = [];
    for (let i = 0; i < 5; i++) errors.push(await failure(client.listDatasets())); // 429, 503, reset, cut, timeout
    errors.push(await failure(client.listDatasets({ signal: AbortSignal.abort() })));
    const h = await client.createQuery('job_listings', {});
    errors.push(await failure(client.readPage('job_listings', h.id, { start: 1, limit: 500 }))); // too large
    errors.push(await failure(client.stream('no_such_dataset').toArray()));
    const wrong = new DatasetClient({ baseUrl: emu.url, apiKey: `${SECRET}-wrong` });
    errors.push(await failure(wrong.listDatasets()));
    expectNoSecret(errors.at(-1), `${SECRET}-wrong`);
    await wrong.close();
    expect(errors.map((e) => e.code)).toEqual([
      'DQS_RATE_LIMITED',
      'DQS_SERVER',
      'DQS_NETWORK',
      'DQS_NETWORK',
      'DQS_TIMEOUT',
      'DQS_ABORTED',
      'DQS_RESPONSE_TOO_LARGE',
      'DQS_NOT_FOUND',
      'DQS_AUTH',
    ]);
    for (const err of errors) expectNoSecret(err);

    // With retries on, the events are clean too.
    const again = faultPlan({ seed: 2, rate: 0.5, kinds: ['429', '500', 'reset', 'cut'], retryAfter: '0' });
    const { emu: emu2 } = await setup({ apiKey: SECRET, fault: again });
    const c2 = new DatasetClient({
      baseUrl: emu2.url,
      apiKey: SECRET,
      retry: { minDelayMs: 1, retries: 10 },
    });
    c2.on('retry', (e: RetryEvent) => events.push(e));
    for (let i = 0; i < 10; i++) await c2.listDatasets();
    expect(events.length).toBeGreaterThan(3);
    for (const e of events) expectNoSecret(e);
    await c2.close();

    for (const r of [...emu.requests, ...emu2.requests]) expect(JSON.stringify(r)).not.toContain(SECRET);
  });

  it('refuses keys that cannot travel in a header, without echoing them, before any request', () => {
    for (const apiKey of [`${SECRET}\r\nX-Evil: 1`, `ключ-${SECRET}`, `${SECRET}\u0000`, 42]) {
      const err = (() => {
        try {
          new DatasetClient({ baseUrl: 'http://127.0.0.1:1', apiKey: apiKey as string });
        } catch (e) {
          return e as InvalidArgumentError;
        }
        throw new Error('accepted');
      })();
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect(err.argument).toBe('apiKey');
      expectNoSecret(err);
    }
  });

  it('a token provider that fails or returns garbage is DQS_AUTH, not a retried network error', async () => {
    const { emu } = await setup();
    for (const token of [
      () => {
        throw new Error('vault unreachable');
      },
      () => 42 as unknown as string,
      () => `${SECRET}\n`,
    ]) {
      const client = new DatasetClient({ baseUrl: emu.url, token });
      const retries: RetryEvent[] = [];
      client.on('retry', (e: RetryEvent) => retries.push(e));
      const err = await failure(client.listDatasets());
      expect(err.code).toBe('DQS_AUTH');
      expect(retries).toHaveLength(0);
      expectNoSecret(err);
      await client.close();
    }
    expect(emu.requests).toHaveLength(0);
  });
});

describe('plain http:// to a remote host', () => {
  it('needs allowInsecureHttp when a key or token would be sent; loopback is fine', () => {
    const remote = [
      'http://example.com',
      'http://10.0.0.5:8080',
      'http://127.evil.example',
      'http://localhost.evil.example',
    ];
    for (const baseUrl of remote) {
      expect(() => new DatasetClient({ baseUrl, apiKey: 'k' })).toThrow(/plain http:\/\//);
      expect(() => new DatasetClient({ baseUrl, token: () => 'k' })).toThrow(/plain http:\/\//);
      expect(() => new DatasetClient({ baseUrl, apiKey: 'k', allowInsecureHttp: true })).not.toThrow();
      // Nothing secret to send: nothing to refuse.
      expect(() => new DatasetClient({ baseUrl })).not.toThrow();
    }
    for (const baseUrl of [
      'http://localhost:8080',
      'http://127.0.0.1:1',
      'http://127.1.2.3',
      'http://127.1',
      'http://[::1]:9',
      'https://example.com',
    ]) {
      expect(() => new DatasetClient({ baseUrl, apiKey: 'k' })).not.toThrow();
    }
  });
});

describe('redirects', () => {
  it('are not followed: a clear DQS_HTTP error, and no request (so no key) reaches the other host', async () => {
    const other = await startEmulator({ apiKey: SECRET });
    try {
      for (const [status, method] of [
        [301, 'GET'],
        [302, 'GET'],
        [307, 'POST'],
        [308, 'HEAD'],
      ] as const) {
        const location = `http://user:pw@127.0.0.1:${other.port}/steal?token=abc`;
        const { client } = await setup(
          { apiKey: SECRET, fault: () => ({ kind: 'status', status, headers: { Location: location } }) },
          { apiKey: SECRET },
        );
        const retries: RetryEvent[] = [];
        client.on('retry', (e: RetryEvent) => retries.push(e));
        const call =
          method === 'GET'
            ? client.listDatasets()
            : method === 'POST'
              ? client.createQuery('job_listings', {})
              : client.checkQuery('job_listings', 'a'.repeat(64), { mediaType: MediaType.table });
        const err = await expectRejects<HttpError>(call, (e) => expect(e).toBeInstanceOf(HttpError));
        expect(err).toMatchObject({ code: 'DQS_HTTP', status, method });
        expect(err.message).toContain(`redirect to http://127.0.0.1:${other.port}/steal not followed`);
        expect(err.message).not.toMatch(/pw|token=abc/);
        expect(retries).toHaveLength(0);
        expectNoSecret(err);
      }
      expect(other.requests).toHaveLength(0);
    } finally {
      await other.close();
    }
  });
});
