/**
 * `dqs doctor` finds each planted fault and says the fix: the proxy down, the CA missing, a wrong key, a
 * URL that is not the service; and passes every check when all is right, `--json` without the key.
 */
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createProxy } from 'proxy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../src/emulator/index.js';
import { ensureBuilt, finishCli, ROOT, type Run, startCli } from './cli-helpers.js';
import { makePki } from './tls-helpers.js';

const KEY = 'doctor-key-9f8e7d6c';
const pki = makePki();
let emu: Awaited<ReturnType<typeof startEmulator>>;
let site: Server;
let siteUrl: string;
/** A forward proxy that wants bob:right-pass. */
let proxyServer: ReturnType<typeof createProxy>;
let proxyHost: string;

beforeAll(async () => {
  ensureBuilt();
  emu = await startEmulator({ apiKey: KEY, tls: pki.server, acceptWidth: 1 });
  site = createServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'text/html' });
    res.end('<html><body>Not here</body></html>');
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  proxyServer = createProxy(createServer());
  proxyServer.authenticate = (req) =>
    req.headers['proxy-authorization'] === `Basic ${Buffer.from('bob:right-pass').toString('base64')}`;
  await new Promise<void>((r) => proxyServer.listen(0, '127.0.0.1', r));
  proxyHost = `127.0.0.1:${(proxyServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  rmSync(pki.dir, { recursive: true, force: true });
  await emu.close();
  site.closeAllConnections();
  await new Promise((r) => site.close(r));
  proxyServer.closeAllConnections();
  await new Promise((r) => proxyServer.close(r));
});

interface Checked {
  ok: boolean;
  checks: { name: string; status: string; detail: string; fix?: string }[];
}

async function doctor(args: string[], env: Record<string, string> = {}): Promise<{ run: Run; out: Checked }> {
  const run = await finishCli(
    startCli(['doctor', '--json', ...args], { cwd: ROOT, env: { DQS_API_KEY: KEY, ...env } }),
  );
  return { run, out: JSON.parse(run.stdout.toString()) as Checked };
}

function failed(out: Checked) {
  return out.checks.find((c) => c.status === 'fail');
}

describe.concurrent('dqs doctor', () => {
  it('all checks pass with the CA; --json names the key source, never the key', async () => {
    const { run, out } = await doctor(['--base-url', emu.url, '--ca-file', pki.caFile]);
    expect(run.code, run.stderr).toBe(0);
    expect(out.ok).toBe(true);
    expect(out.checks.map((c) => c.name)).toEqual([
      'config',
      'dns',
      'tcp',
      'tls',
      'request',
      'version',
      'clock',
    ]);
    expect(out.checks[0]!.detail).toContain('key from DQS_API_KEY');
    expect(out.checks.find((c) => c.name === 'tls')!.detail).toContain('issuer Acme Corp');
    expect(run.stdout.toString()).not.toContain(KEY);
  });

  it('CA missing: the tls check fails, naming the issuer as an inspecting proxy, fix --ca-file', async () => {
    const { run, out } = await doctor(['--base-url', emu.url]);
    expect(run.code).toBe(5);
    const tls = failed(out)!;
    expect(tls.name).toBe('tls');
    expect(tls.detail).toContain('looks like a TLS-inspecting proxy');
    expect(tls.fix).toContain('--ca-file PATH');
  });

  it('proxy down: the tcp check fails on the proxy, naming where it was set', async () => {
    const { run, out } = await doctor(['--base-url', emu.url, '--ca-file', pki.caFile], {
      HTTPS_PROXY: 'http://127.0.0.1:9',
    });
    expect(run.code).toBe(5);
    expect(failed(out)!.name).toBe('tcp');
    expect(failed(out)!.fix).toContain('the proxy http://127.0.0.1:9 (from HTTPS_PROXY) is not reachable');
  });

  it('wrong key: the request fails with 401, fix names the key settings', async () => {
    const { run, out } = await doctor(['--base-url', emu.url, '--ca-file', pki.caFile], {
      DQS_API_KEY: 'not-the-key-123',
    });
    expect(run.code).toBe(5);
    expect(failed(out)!.name).toBe('request');
    expect(failed(out)!.detail).toContain('401');
    expect(failed(out)!.fix).toContain('DQS_API_KEY');
    expect(run.stdout.toString()).not.toContain('not-the-key-123');
  });

  it('wrong URL (a web site): the request fails as not the service, fix names the base URL', async () => {
    const { run, out } = await doctor(['--base-url', siteUrl]);
    expect(run.code).toBe(5);
    expect(failed(out)!.name).toBe('request');
    expect(failed(out)!.detail).toContain('not the Dataset Query Service');
    expect(failed(out)!.fix).toContain('check --base-url or DQS_BASE_URL');
  });

  // Issue #47: with the credentials given (and wrong) the doctor asked for credentials, and it named
  // HTTPS_PROXY when HTTP_PROXY was the proxy at fault.
  it('proxy credentials given but wrong: says they are wrong, where they were set; missing: asks for them', async () => {
    const wrong = `http://bob:wrong-pass-66@${proxyHost}`;
    for (const [args, env, where] of [
      [['--proxy', wrong], {}, '--proxy'],
      [[], { HTTPS_PROXY: wrong }, 'HTTPS_PROXY'],
    ] as const) {
      const { run, out } = await doctor(['--base-url', emu.url, '--ca-file', pki.caFile, ...args], env);
      expect(run.code).toBe(5);
      expect(failed(out)!.name).toBe('proxy');
      expect(failed(out)!.fix).toBe(
        `the proxy refused the user and password in its URL (407, wrong credentials): check them in ${where}`,
      );
      expect(run.stdout.toString()).not.toContain('wrong-pass-66');
    }
    const { out } = await doctor([
      '--base-url',
      emu.url,
      '--ca-file',
      pki.caFile,
      '--proxy',
      `http://${proxyHost}`,
    ]);
    expect(failed(out)!.fix).toBe(
      'the proxy wants credentials (407): http://USER:PASSWORD@host:port in --proxy',
    );
  });

  it('an http:// service: the proxy at fault is named HTTP_PROXY, and the one to set too', async () => {
    const down = await doctor(['--base-url', siteUrl], { HTTP_PROXY: 'http://127.0.0.1:9' });
    expect(failed(down.out)!.fix).toContain(
      'the proxy http://127.0.0.1:9 (from HTTP_PROXY) is not reachable',
    );
    expect(JSON.stringify(down.out)).not.toContain('HTTPS_PROXY');
    const none = await doctor(['--base-url', 'http://127.0.0.1:9/']);
    expect(failed(none.out)!.fix).toContain('A firewall may require a proxy (HTTP_PROXY, or --proxy URL)');
  });
});
