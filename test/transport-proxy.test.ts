/**
 * Proxies the Node way: a real forward proxy (the `proxy` package, by the proxy-agent authors) on
 * 127.0.0.1:0 in front of the emulator. The `proxy` option and HTTPS_PROXY / HTTP_PROXY route through it
 * (it sees the CONNECTs), NO_PROXY bypasses it, credentials in its URL answer its 407 and are never
 * printed, and a proxy that is down or wants credentials is a typed error saying so.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createProxy } from 'proxy';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionError, DatasetClient } from '../src/index.js';
import { expectRejects, setup } from './helpers.js';

interface TestProxy {
  readonly url: string;
  readonly port: number;
  /** `CONNECT host:port` lines the proxy was asked for, in order. */
  readonly connects: string[];
  close(): Promise<void>;
}

const proxies: TestProxy[] = [];
const savedEnv = { ...process.env };
const PROXY_VARS = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy'];

afterEach(async () => {
  for (const name of PROXY_VARS) {
    if (savedEnv[name] === undefined) delete process.env[name];
    else process.env[name] = savedEnv[name];
  }
  while (proxies.length) await proxies.pop()!.close();
});

/** A forward proxy on 127.0.0.1:0; with `credentials`, it answers 407 to any other Proxy-Authorization. */
async function startProxy(credentials?: string): Promise<TestProxy> {
  const server = createProxy(createServer());
  const connects: string[] = [];
  server.on('connect', (req: IncomingMessage) => connects.push(req.url ?? ''));
  if (credentials) {
    server.authenticate = (req) =>
      req.headers['proxy-authorization'] === `Basic ${Buffer.from(credentials).toString('base64')}`;
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const proxy = {
    url: `http://127.0.0.1:${port}`,
    port,
    connects,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  proxies.push(proxy);
  return proxy;
}

function clearProxyEnv(): void {
  for (const name of PROXY_VARS) delete process.env[name];
}

describe('proxies', () => {
  it('the `proxy` option: every request goes through the proxy, and a result reads as it does directly', async () => {
    clearProxyEnv();
    const proxy = await startProxy();
    const { emu, client } = await setup({}, { proxy: proxy.url });
    const direct = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey, proxy: false });
    try {
      const viaProxy = await (await client.query('store_locations', { tickers: ['nyse:wmt'] })).toTable();
      const host = new URL(emu.url).host;
      expect(proxy.connects.length).toBeGreaterThan(0);
      expect(new Set(proxy.connects)).toEqual(new Set([host]));
      const seen = proxy.connects.length;
      const plain = await (await direct.query('store_locations', { tickers: ['nyse:wmt'] })).toTable();
      expect(proxy.connects.length).toBe(seen);
      expect(viaProxy.numRows).toBe(plain.numRows);
      expect(viaProxy.numRows).toBeGreaterThan(0);
    } finally {
      await direct.close();
    }
  });

  it('HTTP_PROXY from the environment is used with no option; NO_PROXY bypasses it', async () => {
    clearProxyEnv();
    const proxy = await startProxy();
    process.env.HTTP_PROXY = proxy.url;
    const { client } = await setup();
    await client.listDatasets();
    expect(proxy.connects.length).toBe(1);

    process.env.NO_PROXY = 'localhost,127.0.0.1';
    const { client: bypassing } = await setup();
    await bypassing.listDatasets();
    expect(proxy.connects.length).toBe(1);
  });

  it('lower-case http_proxy is read too, and `proxy: false` ignores the environment', async () => {
    clearProxyEnv();
    const proxy = await startProxy();
    process.env.http_proxy = proxy.url;
    const { client } = await setup();
    await client.listDatasets();
    expect(proxy.connects.length).toBe(1);
    const { client: direct } = await setup({}, { proxy: false });
    await direct.listDatasets();
    expect(proxy.connects.length).toBe(1);
  });

  it('a proxy that wants credentials: 407 is DQS_PROXY_AUTH saying so; with them in the URL it works, never printed', async () => {
    clearProxyEnv();
    const proxy = await startProxy('alice:s3cret-proxy-pass');
    const { emu, client } = await setup({}, { proxy: proxy.url, retry: false });
    const err = await expectRejects<ConnectionError>(client.listDatasets(), () => {});
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err.code).toBe('DQS_PROXY_AUTH');
    expect(err.message).toContain('wants credentials (407)');
    expect(err.message).toContain('http://USER:PASSWORD@host:port');

    const withCreds = `http://alice:s3cret-proxy-pass@127.0.0.1:${proxy.port}`;
    const { client: authed } = await setup({}, { proxy: withCreds });
    expect((await authed.listDatasets()).length).toBeGreaterThan(0);

    const wrong = `http://alice:wrong-pass-123@127.0.0.1:${proxy.port}`;
    const bad = new DatasetClient({ baseUrl: emu.url, apiKey: emu.apiKey, proxy: wrong, retry: false });
    try {
      const refused = await expectRejects<ConnectionError>(bad.listDatasets(), () => {});
      expect(refused.code).toBe('DQS_PROXY_AUTH');
      expect(refused.message).toContain('refused the user and password');
      expect(refused.message).not.toContain('wrong-pass-123');
      expect(refused.proxy).toBe(`http://127.0.0.1:${proxy.port}`);
    } finally {
      await bad.close();
    }
  });

  it('HTTPS_PROXY without a scheme (`127.0.0.1:PORT`, as curl takes it) is an http proxy', async () => {
    clearProxyEnv();
    const proxy = await startProxy();
    process.env.HTTPS_PROXY = `127.0.0.1:${proxy.port}`;
    process.env.HTTP_PROXY = `127.0.0.1:${proxy.port}`;
    const { client } = await setup();
    await client.listDatasets();
    expect(proxy.connects.length).toBe(1);
  });

  it('a proxy that is down: DQS_PROXY naming the proxy and where the setting came from', async () => {
    clearProxyEnv();
    const proxy = await startProxy();
    await proxy.close();
    process.env.HTTPS_PROXY = proxy.url;
    process.env.HTTP_PROXY = proxy.url;
    const { client } = await setup({}, { retry: false });
    const err = await expectRejects<ConnectionError>(client.listDatasets(), () => {});
    expect(err.code).toBe('DQS_PROXY');
    expect(err.message).toContain(
      `the proxy http://127.0.0.1:${proxy.port} (from HTTP_PROXY) refused the connection`,
    );
    expect(err.transient).toBe(true);
  });

  it('an invalid proxy URL is refused at construction, its text not echoed', () => {
    expect(
      () => new DatasetClient({ baseUrl: 'http://127.0.0.1:1', proxy: 'http://pw-secret@[bad' }),
    ).toThrow(/Invalid `proxy`: Expected a proxy URL/);
    expect(() => new DatasetClient({ baseUrl: 'http://127.0.0.1:1', proxy: 'socks4://h:1' })).toThrow(
      /http: or https: proxy URL/,
    );
  });
});
