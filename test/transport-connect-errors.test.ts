/**
 * Connection faults a person can act on (docs/reliability.md's table, one test per row): each is a typed
 * error with its own code and a message that names the host, the port, whether a proxy was used, and
 * what to do. Real sockets on 127.0.0.1; the DNS row uses the reserved `.invalid` domain (RFC 2606).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  ConnectionError,
  DatasetClient,
  type DqsError,
  type ForbiddenError,
  NotServiceError,
} from '../src/index.js';
import { expectRejects, setup } from './helpers.js';
import { blackHole } from './net-helpers.js';

const servers: Server[] = [];
const clients: DatasetClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

function client(baseUrl: string): DatasetClient {
  const c = new DatasetClient({ baseUrl, apiKey: 'k-test-1234', retry: false, proxy: false });
  clients.push(c);
  return c;
}

/** A web server that is not the service: `status` and an HTML page for every request. */
async function website(status: number): Promise<string> {
  const server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!DOCTYPE html><html><head><title>Intranet</title></head><body>Welcome</body></html>');
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

/** A port nothing listens on (a server bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

describe('connection faults', () => {
  it('DNS failure: DQS_DNS naming the host, not retried', async () => {
    const err = await expectRejects<ConnectionError>(
      client('https://dqs.no-such-host.invalid:8443/').listDatasets(),
      () => {},
    );
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err.code).toBe('DQS_DNS');
    expect(err.message).toContain('the host name dqs.no-such-host.invalid does not resolve');
    expect(err.message).toContain('DQS_BASE_URL');
  });

  it('connection refused: DQS_CONNECT naming host, port and "directly, no proxy"', async () => {
    const port = await closedPort();
    const err = await expectRejects<ConnectionError>(
      client(`http://127.0.0.1:${port}/`).listDatasets(),
      () => {},
    );
    expect(err.code).toBe('DQS_CONNECT');
    expect(err.message).toContain(`127.0.0.1:${port} refused the connection, connecting directly, no proxy`);
    expect(err.transient).toBe(true);
  });

  it('a refused connection is still retried (a service restarting)', async () => {
    const port = await closedPort();
    const c = new DatasetClient({
      baseUrl: `http://127.0.0.1:${port}/`,
      retry: { retries: 2, minDelayMs: 1, maxDelayMs: 2 },
      proxy: false,
    });
    clients.push(c);
    let retries = 0;
    c.on('retry', () => retries++);
    await expectRejects<DqsError>(c.listDatasets(), (e) => expect(e.code).toBe('DQS_CONNECT'));
    expect(retries).toBe(2);
  });

  it('connection timed out: DQS_CONNECT naming host, port, "directly, no proxy" and the time it waited', async () => {
    // Before: undici's own 10 s connect timeout, and a request timeout shorter than that was reported,
    // 10 s late, as a DQS_TIMEOUT ("timed out after 500 ms") that did not say connecting was the trouble.
    const port = await blackHole();
    const c = new DatasetClient({
      baseUrl: `http://127.0.0.1:${port}/`,
      apiKey: 'k-test-1234',
      retry: false,
      proxy: false,
      timeoutMs: 500,
    });
    clients.push(c);
    const err = await expectRejects<ConnectionError>(c.listDatasets(), () => {});
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err.code).toBe('DQS_CONNECT');
    expect(err.message).toContain(
      `127.0.0.1:${port} did not answer within 500 ms (UND_ERR_CONNECT_TIMEOUT), connecting directly, no proxy`,
    );
    // An http:// service: a proxy for it is set in HTTP_PROXY (HTTPS_PROXY is for https:// ones).
    expect(err.message).toContain('does a firewall need a proxy (HTTP_PROXY)');
    expect(err.transient).toBe(true);
  });

  it('a proxy that does not answer: DQS_PROXY naming the proxy, not the service', async () => {
    const proxyPort = await blackHole();
    const servicePort = await closedPort();
    const c = new DatasetClient({
      baseUrl: `http://127.0.0.1:${servicePort}/`,
      apiKey: 'k-test-1234',
      retry: false,
      proxy: `http://127.0.0.1:${proxyPort}`,
      timeoutMs: 500,
    });
    clients.push(c);
    const err = await expectRejects<ConnectionError>(c.listDatasets(), () => {});
    expect(err.code).toBe('DQS_PROXY');
    expect(err.message).toContain(
      `the proxy http://127.0.0.1:${proxyPort} (from \`proxy\`) did not answer within 500 ms (UND_ERR_CONNECT_TIMEOUT)`,
    );
  });

  it('a base URL that answers with a web page (404): DQS_NOT_SERVICE, saying to check the base URL', async () => {
    const err = await expectRejects<NotServiceError>(client(await website(404)).listDatasets(), () => {});
    expect(err).toBeInstanceOf(NotServiceError);
    expect(err.code).toBe('DQS_NOT_SERVICE');
    expect(err.message).toContain('404 with an HTML page, not the Dataset Query Service: check baseUrl');
  });

  it('a base URL that answers 200 with a web page (a portal): DQS_NOT_SERVICE too', async () => {
    const err = await expectRejects<NotServiceError>(client(await website(200)).listDatasets(), () => {});
    expect(err.code).toBe('DQS_NOT_SERVICE');
    expect(err.message).toContain('with an HTML page: <!DOCTYPE html>');
  });

  it('a wrong key (401) is DQS_AUTH; a key not allowed (403) is DQS_FORBIDDEN, still an AuthenticationError', async () => {
    const { emu } = await setup();
    const wrong = client(emu.url);
    const err401 = await expectRejects<AuthenticationError>(wrong.listDatasets(), () => {});
    expect(err401.code).toBe('DQS_AUTH');
    expect(err401.message).toContain('the key was refused');

    const server = createServer((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: 'this key may not read job_listings' }));
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const forbidden = client(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    const err403 = await expectRejects<ForbiddenError>(forbidden.listDatasets(), () => {});
    expect(err403).toBeInstanceOf(AuthenticationError);
    expect(err403.code).toBe('DQS_FORBIDDEN');
    expect(err403.message).toContain('the key is valid but not allowed this resource');
  });
});
