/**
 * The CLI where companies work: `--ca-file`, NODE_EXTRA_CA_CERTS (read by Node itself in the child
 * process), `--proxy` and HTTPS_PROXY with a real forward proxy, and one line with its exit code for a
 * certificate not trusted or a proxy that refuses credentials (never printed).
 */
import { rmSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createProxy } from 'proxy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../src/emulator/index.js';
import { ensureBuilt, finishCli, ROOT, type Run, startCli, startServe } from './cli-helpers.js';
import { blackHole } from './net-helpers.js';
import { makePki } from './tls-helpers.js';

const pki = makePki();
let emu: Awaited<ReturnType<typeof startEmulator>>;
let proxyServer: ReturnType<typeof createProxy>;
let proxyUrl: string;
const connects: string[] = [];

beforeAll(async () => {
  ensureBuilt();
  emu = await startEmulator({ apiKey: 'cli-corp-key-1', tls: pki.server, acceptWidth: 1 });
  proxyServer = createProxy(createServer());
  proxyServer.on('connect', (req: IncomingMessage) => connects.push(req.url ?? ''));
  proxyServer.authenticate = (req) =>
    req.headers['proxy-authorization'] === undefined ||
    req.headers['proxy-authorization'] === `Basic ${Buffer.from('bob:right-pass').toString('base64')}`;
  await new Promise<void>((r) => proxyServer.listen(0, '127.0.0.1', r));
  proxyUrl = `http://127.0.0.1:${(proxyServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  rmSync(pki.dir, { recursive: true, force: true });
  await emu.close();
  proxyServer.closeAllConnections();
  await new Promise((r) => proxyServer.close(r));
});

function dqs(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return finishCli(
    startCli(['datasets', '--json', '--base-url', emu.url, ...args], {
      cwd: ROOT,
      env: { DQS_API_KEY: emu.apiKey, ...env },
    }),
  );
}

describe.concurrent('dqs behind a company network', () => {
  it('a certificate not trusted: one line, exit 5, naming the issuer and --ca-file', async () => {
    const run = await dqs([]);
    expect(run.code).toBe(5);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('is not trusted');
    expect(lines[0]).toContain('Acme Corp TLS Inspection Root CA');
    expect(lines[0]).toContain('--ca-file PATH');
  });

  it('--ca-file makes it trusted', async () => {
    const run = await dqs(['--ca-file', pki.caFile]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout.toString()).length).toBeGreaterThan(0);
  });

  it('NODE_EXTRA_CA_CERTS makes it trusted (Node reads it; nothing else to pass)', async () => {
    const run = await dqs([], { NODE_EXTRA_CA_CERTS: pki.caFile });
    expect(run.code, run.stderr).toBe(0);
  });

  it('--ca-file with a file that holds no certificate is a usage error', async () => {
    const run = await dqs(['--ca-file', `${pki.dir}/localhost.key`]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('holds no PEM certificate');
  });

  it('HTTPS_PROXY alone routes `dqs datasets` through the proxy (TLS inside the CONNECT tunnel)', async () => {
    const before = connects.length;
    const run = await dqs(['--ca-file', pki.caFile], { HTTPS_PROXY: proxyUrl });
    expect(run.code, run.stderr).toBe(0);
    expect(connects.length).toBeGreaterThan(before);
    expect(connects.at(-1)).toBe(new URL(emu.url).host);
  });

  it('--proxy with wrong credentials: one line naming the 407, the password never printed', async () => {
    const url = new URL(proxyUrl);
    const run = await dqs(['--ca-file', pki.caFile, '--proxy', `http://bob:Wr0ng-Secret-77@${url.host}`]);
    expect(run.code).toBe(5);
    expect(run.stderr).toContain('wants credentials (407)');
    expect(run.stderr).not.toContain('Wr0ng-Secret-77');
  });

  it('dqs serve --tls-cert --tls-key serves HTTPS', async () => {
    const served = await startServe([
      '--tls-cert',
      `${pki.dir}/localhost.pem`,
      '--tls-key',
      `${pki.dir}/localhost.key`,
    ]);
    try {
      expect(served.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const run = await finishCli(
        startCli(['datasets', '--base-url', served.url, '--ca-file', pki.caFile], {
          cwd: ROOT,
          env: { DQS_API_KEY: 'demo' },
        }),
      );
      expect(run.code, run.stderr).toBe(0);
    } finally {
      await served.stop();
    }
  });
});

describe('dqs and a host that drops connections', () => {
  // Not concurrent: the black hole is closed after each test. Slow by nature (the CLI tries 5 times, each
  // waiting --timeout 1 for the connect, with backoff between): ~11 s alone.
  it('a host that takes no connection: one line, exit 5, DQS_CONNECT naming host, port and no proxy', {
    timeout: 90_000,
  }, async () => {
    const port = await blackHole();
    const run = await finishCli(
      startCli(['datasets', '--base-url', `http://127.0.0.1:${port}`, '--timeout', '1'], {
        cwd: ROOT,
        env: { DQS_API_KEY: 'cli-corp-key-1' },
      }),
    );
    expect(run.code).toBe(5);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(
      `127.0.0.1:${port} did not answer within 1000 ms (UND_ERR_CONNECT_TIMEOUT), connecting directly, no proxy`,
    );
    expect(lines[0]).toContain('dqs doctor');
  });
});
