/**
 * The `logger` option (pino / console shape): `info` names the proxy in use, `warn` each retry with its
 * reason, `debug` each request with status and time; the key and the proxy's password are never in a
 * line. Without a logger nothing is formatted.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createProxy } from 'proxy';
import { describe, expect, it } from 'vitest';
import { faultPlan } from '../src/emulator/index.js';
import { DatasetClient } from '../src/index.js';
import { FAST_RETRY, setup } from './helpers.js';

function collecting() {
  const lines: { level: string; line: string }[] = [];
  const logger = {
    debug: (line: string) => lines.push({ level: 'debug', line }),
    info: (line: string) => lines.push({ level: 'info', line }),
    warn: (line: string) => lines.push({ level: 'warn', line }),
  };
  return { lines, logger };
}

describe('logger', () => {
  it('warn per retry, debug per request, the key in none of them', async () => {
    const { lines, logger } = collecting();
    const { client } = await setup(
      {
        apiKey: 'logger-secret-key-42',
        fault: faultPlan({ seed: 1, rate: 0, at: { 1: { kind: 'status', status: 503 } } }),
      },
      { logger, retry: FAST_RETRY },
    );
    await client.listDatasets();
    const warns = lines.filter((l) => l.level === 'warn');
    expect(warns).toHaveLength(1);
    expect(warns[0]!.line).toMatch(
      /^dqs-client: GET http:\/\/127\.0\.0\.1:\d+\/datasets\/ failed \(DQS_SERVER\); retry 1 in \d+ ms: 503/,
    );
    const debugs = lines.filter((l) => l.level === 'debug');
    expect(debugs.map((l) => l.line.replace(/\d+ ms$/, 'N ms'))).toEqual([
      expect.stringMatching(/GET .*\/datasets\/ -> 503 in N ms$/),
      expect.stringMatching(/GET .*\/datasets\/ -> 200 in N ms$/),
    ]);
    for (const { line } of lines) expect(line).not.toContain('logger-secret-key-42');
  });

  it('info names the proxy (without its password); console-shaped loggers keep their `this`', async () => {
    const server = createProxy(createServer());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const lines: string[] = [];
    const logger = {
      prefix: '>',
      info(this: { prefix: string }, line: string) {
        lines.push(`${this.prefix} ${line}`);
      },
    };
    const { emu } = await setup();
    const client = new DatasetClient({
      baseUrl: emu.url,
      apiKey: emu.apiKey,
      proxy: `http://u:proxy-pass-77@127.0.0.1:${port}`,
      logger,
    });
    try {
      await client.listDatasets();
      expect(lines).toEqual([
        `> dqs-client: requests to ${new URL(emu.url).origin} go through the proxy http://127.0.0.1:${port} (from proxy)`,
      ]);
    } finally {
      await client.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('a logger without any of the four methods is refused', () => {
    expect(() => new DatasetClient({ baseUrl: 'http://127.0.0.1:1', logger: {} })).toThrow(
      /Invalid `logger`/,
    );
  });
});
