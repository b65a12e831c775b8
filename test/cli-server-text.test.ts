/**
 * The built `dqs` against a raw server whose text is hostile: escape sequences and bidi overrides in
 * names and error messages, a key echoed back, `null` where the spec says string, malformed tickers.
 * What reaches the terminal is escaped and masked; data (`--json`, files) stays byte-exact.
 */

import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MediaType } from '../src/index.js';
import { ensureBuilt, finishCli, startCli } from './cli-helpers.js';

/** A key with a backslash and a quote: masked however it is escaped. */
const KEY = 'sk-\\cli"key-9d2f';
const QID = 'b'.repeat(64);
const EVIL = '\u001b]0;owned\u0007\u001b[2J\u202eevil';
const FIELDS = [{ id: 'n', type: 'number', display_name: 'N', summary: EVIL, format: null }];

let server: Server;
let url: string;
let work: string;

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

beforeAll(async () => {
  ensureBuilt();
  work = await mkdtemp(join(tmpdir(), 'dqs-text-'));
  server = createServer((req, res) => {
    req.resume();
    const u = new URL(req.url ?? '/', 'http://x');
    const key = (req.headers.authorization ?? '').replace(/^token /, '');
    if (key !== KEY) {
      // Echoed as sent, JSON-escaped, after a colour code (a letter right before it), upper-cased and in base64.
      const echoes = `\u001b[31m${key}\u001b[0m ${key.toUpperCase()} b64:${Buffer.from(key).toString('base64')}`;
      return json(res, 403, { message: `forbidden for key ${key} ${JSON.stringify(key)} ${echoes}` });
    }
    const path = u.pathname;
    if (path === '/datasets/') {
      return json(res, 200, {
        datasets: [
          {
            id: 'evil',
            display_name: EVIL,
            summary: `sum ${EVIL}`,
            state: 'ready',
            blog_url: null,
            companies_count: 1,
          },
        ],
      });
    }
    if (path === '/datasets/evil') {
      return json(res, 200, {
        id: 'evil',
        display_name: EVIL,
        summary: EVIL,
        state: 'ready',
        blog_url: null,
        companies_count: null,
        truncate_limit: 500000,
        formats: null,
        fields: FIELDS,
      });
    }
    if (path === '/datasets/notjson') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(`<html>${EVIL}</html>`);
    }
    if (path.startsWith('/datasets/evil/tickers/')) {
      return json(res, 200, {
        queries: {
          [u.searchParams.get('query') ?? '']: [
            {
              id: 'nasdaq:aapl',
              display_name: 'Apple',
              sector: null,
              industry: null,
              country: 'US',
              url: '',
              entities: [],
            },
            {
              id: 'BAD TICKER',
              display_name: EVIL,
              sector: null,
              industry: null,
              country: null,
              url: null,
              entities: null,
            },
          ],
        },
      });
    }
    if (req.method === 'POST') return json(res, 200, { id: QID, state: 'complete', total: 2 });
    const headers = {
      'x-state': 'complete',
      'x-total': '2',
      'x-truncated': 'false',
      'x-formats': MediaType.table,
    };
    if (req.method === 'HEAD') return res.writeHead(200, headers).end();
    const start = Number(u.searchParams.get('start'));
    const limit = Number(u.searchParams.get('limit'));
    const rows = [[1], [2]].slice(start - 1, start - 1 + limit);
    res.writeHead(200, { ...headers, 'content-type': MediaType.table });
    res.end(
      JSON.stringify({
        id: QID,
        state: 'complete',
        total: 2,
        count: rows.length,
        start,
        limit,
        rows,
        fields: FIELDS,
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await rm(work, { recursive: true, force: true });
});

function dqs(args: string[], options: { key?: string | null; input?: string } = {}) {
  const key =
    options.key === undefined ? ['--api-key', KEY] : options.key === null ? [] : ['--api-key', options.key];
  return finishCli(startCli([...args, '--base-url', url, ...key], { cwd: work }), options.input);
}

/** No raw control or bidi character: nothing that could retitle, clear or turn the terminal. */
function expectSafe(text: string): void {
  expect(text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
}

function expectNoKey(text: string): void {
  expect(text).not.toContain(KEY);
  expect(text).not.toContain(JSON.stringify(KEY).slice(1, -1));
  expect(text).not.toContain('sk-\\\\cli');
}

describe.concurrent('dqs: text from the server is made safe for the terminal', () => {
  it('the datasets table escapes escape sequences and bidi overrides', async () => {
    const table = await dqs(['datasets']);
    expect(table.code, table.stderr).toBe(0);
    const out = table.stdout.toString();
    expectSafe(out);
    expect(out).toContain('\\x1b]0;owned\\x07\\x1b[2J\\u202eevil');
  });

  it('datasets --json is data: the text stays byte-exact (JSON-escaped as JSON does)', async () => {
    const raw = await dqs(['datasets', '--json']);
    expect(raw.code, raw.stderr).toBe(0);
    expect(JSON.parse(raw.stdout.toString())[0].display_name).toBe(EVIL);
  });

  it('the dataset view escapes every value and takes null where a list belongs', async () => {
    const run = await dqs(['dataset', 'evil']);
    expect(run.code, run.stderr).toBe(0);
    expectSafe(run.stdout.toString());
    expect(run.stdout.toString()).toContain('\\u202eevil');
  });

  it('dqs tickers with sector: null and entities: null prints the table, no crash', async () => {
    const run = await dqs(['tickers', 'evil', '']);
    expect(run.code, run.stderr).toBe(0);
    expectSafe(run.stdout.toString());
    expect(run.stdout.toString()).toMatch(/nasdaq:aapl\s+Apple\s+US/);
  });

  it('a "not JSON" excerpt in an error line is escaped, one line', async () => {
    const run = await dqs(['dataset', 'notjson']);
    expect(run.code).toBe(6);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expectSafe(run.stderr);
    expect(run.stderr).toContain('\\x1b');
  });
});

describe.concurrent('dqs: the key stays secret', () => {
  it('a 403 echoing a key with a backslash and a quote: masked in the error line and in --debug', async () => {
    const wrong = 'sk-\\wrong"key-1';
    const run = await dqs(['datasets', '--debug'], { key: wrong });
    expect(run.code).toBe(3);
    expect(run.stderr).not.toContain(wrong);
    expect(run.stderr).not.toContain(JSON.stringify(wrong).slice(1, -1));
    expect(run.stderr).not.toContain('sk-\\\\wrong');
    expect(run.stderr).toContain('forbidden for key ***');
    expectSafe(run.stderr);
  });

  it('a 403 echoing a hex key after a colour code, upper-cased and in base64: masked in every form', async () => {
    const wrong = '4d1c9e0b7a2f83d6c5e19b0a4f7d2c8e';
    const run = await dqs(['datasets', '--debug'], { key: wrong });
    expect(run.code).toBe(3);
    for (const form of [wrong, wrong.toUpperCase(), Buffer.from(wrong).toString('base64').slice(0, 40)]) {
      expect(run.stderr).not.toContain(form);
    }
    expect(run.stderr).toContain('\\x1b[31m***');
  });

  it('--api-key-file FILE reads the key from its first line', async () => {
    const file = join(work, 'key.txt');
    await writeFile(file, `${KEY}\nsecond line ignored\n`, { mode: 0o600 });
    const run = await dqs(['datasets', '--json', '--api-key-file', file], { key: null });
    expect(run.code, run.stderr).toBe(0);
    expectNoKey(run.stderr);
  });

  it('--api-key-file - reads the key from stdin', async () => {
    const run = await dqs(['datasets', '--json', '--api-key-file', '-'], { key: null, input: `${KEY}\n` });
    expect(run.code, run.stderr).toBe(0);
  });

  it('--api-key-file with a wrong key: exit 3, and the key is masked in the echo', async () => {
    const file = join(work, 'wrong.txt');
    await writeFile(file, 'sk-\\file"wrong\n');
    const run = await dqs(['datasets', '--api-key-file', file], { key: null });
    expect(run.code).toBe(3);
    expect(run.stderr).not.toContain('sk-\\file"wrong');
    expect(run.stderr).not.toContain('sk-\\\\file');
  });

  it('--api-key and --api-key-file together: a usage error; a missing file: exit 7', async () => {
    expect((await dqs(['datasets', '--api-key-file', join(work, 'key.txt')])).code).toBe(2);
    const missing = await dqs(['datasets', '--api-key-file', join(work, 'nope.txt')], { key: null });
    expect(missing.code).toBe(7);
    expect(missing.stderr).toMatch(/cannot read --api-key-file/);
  });
});

describe.concurrent('dqs export --all-tickers: a malformed ticker from the service', () => {
  it('is skipped with a warning and a count; the rest is exported, exit 0', async () => {
    const out = join(work, 'lake1');
    const run = await dqs(['export', 'evil', '--all-tickers', '--out-dir', out]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(
      /warning: skipped 1 malformed ticker the service listed \(first: "BAD TICKER"\)/,
    );
    expect(await readdir(join(out, 'dataset=evil'))).toEqual(['ticker=nasdaq%3Aaapl']);
  });

  it('with --strict: the same export, then exit 6', async () => {
    const out = join(work, 'lake2');
    const run = await dqs(['export', 'evil', '--all-tickers', '--strict', '--out-dir', out]);
    expect(run.code, run.stderr).toBe(6);
    expect(run.stderr).toMatch(/--strict: 1 malformed ticker was skipped/);
    expect(await readdir(join(out, 'dataset=evil'))).toEqual(['ticker=nasdaq%3Aaapl']);
  });
});
