/**
 * Bun (issue #47). Bun's `undici` is its own, built on its fetch: bodies arrive already inflated with
 * their `Content-Encoding` kept, and its agents have no `close()`. The client's first request failed
 * (`Content-Encoding says gzip but the body is not gzip data`) and `close()` threw. The transport now
 * tells by the body's bytes whether such an `undici` left anything to inflate, and closes only what can be
 * closed. Here: the decision on bodies made by hand (under Node), and the real thing, Bun (a
 * devDependency) reading from this process's emulator over HTTP with compression on.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { toArrowIpc, toParquet } from '../src/index.js';
import { inflateFetchedResponse, startsAsCoded } from '../src/transport/content-encoding.js';
import { ensureBuilt, finishCli, ROOT } from './cli-helpers.js';
import { setup } from './helpers.js';

const INFO = { method: 'GET', url: 'http://127.0.0.1:1/x' };
const TEXT = Buffer.from(JSON.stringify({ rows: Array.from({ length: 50 }, (_, i) => `row ${i}`) }));

async function bodyOf(coding: string, bytes: Buffer): Promise<{ text: string; codings: string[] }> {
  const res = {
    statusCode: 200,
    headers: { 'content-encoding': coding, 'content-length': String(bytes.length) },
    // In chunks, as a socket gives them: the decision is made on the first.
    body: Readable.from([bytes.subarray(0, 7), bytes.subarray(7)]),
  };
  const inflated = await inflateFetchedResponse(res, 'GET', INFO, coding, (e) => e as Error);
  const chunks: Buffer[] = [];
  for await (const c of inflated.body) chunks.push(c as Buffer);
  return { text: Buffer.concat(chunks).toString(), codings: inflated.codings };
}

describe('an undici that inflates bodies itself', () => {
  it('a body still in its coding is inflated; one already inflated (or brotli) is read as it is', async () => {
    const plain = TEXT.toString();
    for (const [coding, encoded] of [
      ['gzip', gzipSync(TEXT)],
      ['deflate', deflateSync(TEXT)],
    ] as const) {
      expect(startsAsCoded(coding, encoded)).toBe(true);
      expect(startsAsCoded(coding, TEXT)).toBe(false);
      expect(await bodyOf(coding, encoded)).toEqual({ text: plain, codings: [coding] });
      expect(await bodyOf(coding, TEXT)).toEqual({ text: plain, codings: [coding] });
    }
    // Brotli has no signature: such a runtime inflated it (Bun does).
    expect(startsAsCoded('br', brotliCompressSync(TEXT))).toBeUndefined();
    expect(await bodyOf('br', TEXT)).toEqual({ text: plain, codings: ['br'] });
  });
});

const BUN = join(ROOT, 'node_modules/.bin/bun');

/** What Bun runs: the built client against the emulator at the last two arguments (URL, key), the sha256 of two writers' bytes. */
const SCRIPT = `
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DatasetClient, toArrowIpc, toParquet } from ${JSON.stringify(join(ROOT, 'dist/index.js'))};
const [url, apiKey] = process.argv.slice(-2);
const client = new DatasetClient({ baseUrl: url, apiKey, compression: true });
const out = {};
for (const [name, writer] of [['arrow', () => toArrowIpc()], ['parquet', () => toParquet()]]) {
  const hash = createHash('sha256');
  const sink = new Writable({ write(c, _e, cb) { hash.update(c); cb(); } });
  await pipeline(client.stream('job_listings', { tickers: ['nasdaq:aapl'] }, { pageSize: 2500 }), writer(), sink);
  out[name] = hash.digest('hex');
}
await client.close();
console.log(JSON.stringify(out));
`;

describe('Bun', () => {
  it('reads gzip pages over HTTP, writes the bytes Node writes, and closes', async () => {
    expect(existsSync(BUN), 'node_modules/.bin/bun: npm ci (bun is a devDependency)').toBe(true);
    ensureBuilt();
    const { emu, client } = await setup({}, { compression: true });
    // Not spawnSync: the emulator answering it runs in this process.
    const bun = await finishCli(spawn(BUN, ['-e', SCRIPT, emu.url, emu.apiKey], { stdio: 'pipe' }));
    expect(bun.code, bun.stderr).toBe(0);
    // The pages went compressed: what Bun's fetch inflated before the client saw them.
    const pages = emu.requests.filter((r) => r.method === 'GET' && r.query.limit === '2500');
    expect(pages.length).toBeGreaterThan(3);
    expect(pages.every((r) => r.encoding === 'gzip')).toBe(true);

    const node: Record<string, string> = {};
    for (const [name, writer] of [
      ['arrow', () => toArrowIpc()],
      ['parquet', () => toParquet()],
    ] as const) {
      const hash = createHash('sha256');
      const sink = new Writable({
        write(c, _e, cb) {
          hash.update(c);
          cb();
        },
      });
      await pipeline(
        client.stream('job_listings', { tickers: ['nasdaq:aapl'] }, { pageSize: 2500 }),
        writer(),
        sink,
      );
      node[name] = hash.digest('hex');
    }
    expect(JSON.parse(bun.stdout.toString())).toEqual(node);
  });
});
