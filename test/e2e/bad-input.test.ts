/**
 * The bad-input matrix (docs/errors.md, "Bad input and what you get"): every hostile or malformed input, at the client API, the
 * emulator's HTTP surface and the CLI, gets its clear error, and nothing crashes or hangs. Each row of a
 * table below is one line of the document.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/index.js';
import {
  AuthenticationError,
  BadRequestError,
  DatasetClient,
  DqsError,
  FormatNotOfferedError,
  InvalidArgumentError,
  MediaType,
  NotAcceptableError,
  NotFoundError,
} from '../../src/index.js';
import { authHeaders, rawRequest } from '../emulator-helpers.js';

const KEY = 'bad-input-key';
const HUGE = 'x'.repeat(100_000);
const HEX = 'a'.repeat(64);

let emu: Emulator;
let client: DatasetClient;
let queryId: string;

beforeAll(async () => {
  emu = await startEmulator({ apiKey: KEY, rowCap: 2000 });
  client = new DatasetClient({ baseUrl: emu.url, apiKey: KEY, retry: false });
  queryId = (await client.createQuery('store_locations', { tickers: ['nyse:wmt'] })).id;
});

afterAll(async () => {
  await client?.close();
  await emu?.close();
});

/** Fails instead of hanging: every case must settle well within this. */
function settle<T>(promise: Promise<T>, ms = 10_000): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) =>
      setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref(),
    ),
  ]);
}

type ErrorClass = abstract new (...args: never[]) => DqsError;

interface ClientCase {
  readonly input: string;
  readonly call: (c: DatasetClient) => Promise<unknown> | unknown;
  readonly error: ErrorClass;
  readonly code: string;
  /** `argument` of an InvalidArgumentError, or the HTTP status. */
  readonly detail: string | number;
  readonly message: RegExp;
}

const clientCases: ClientCase[] = [
  // dataset id
  {
    input: 'empty dataset id',
    call: (c) => c.getDataset(''),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'datasetId',
    message: /to be a dataset id .*got ""/,
  },
  {
    input: 'huge dataset id (100,000 chars)',
    call: (c) => c.getDataset(HUGE),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'datasetId',
    message: /got "xxx.*\.\.\. \(string\)$/,
  },
  {
    input: 'dataset id of the wrong type (42)',
    call: (c) => c.getDataset(42 as never),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'datasetId',
    message: /got 42 \(number\)/,
  },
  {
    input: 'path traversal as dataset id (`../../etc/passwd`)',
    call: (c) => c.getDataset('../../etc/passwd'),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'datasetId',
    message: /got "\.\.\/\.\.\/etc\/passwd"/,
  },
  {
    input: 'encoded traversal as dataset id (`%2e%2e%2f`)',
    call: (c) => c.getDataset('%2e%2e%2fx'),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'datasetId',
    message: /to be a dataset id/,
  },
  {
    input: 'unknown dataset',
    call: (c) => c.getDataset('no_such_dataset'),
    error: NotFoundError,
    code: 'DQS_NOT_FOUND',
    detail: 404,
    message: /404 .*unknown dataset "no_such_dataset"/,
  },
  {
    input: 'unknown dataset in a stream',
    call: (c) => c.stream('no_such_dataset').toArray(),
    error: NotFoundError,
    code: 'DQS_NOT_FOUND',
    detail: 404,
    message: /unknown dataset/,
  },
  // query id
  {
    input: 'non-hex query id',
    call: (c) => c.checkQuery('store_locations', 'not-hex'),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'queryId',
    message: /to be a query id \(64 lower-case hex characters\), got "not-hex"/,
  },
  {
    input: 'upper-case hex query id',
    call: (c) => c.checkQuery('store_locations', 'A'.repeat(64)),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'queryId',
    message: /lower-case hex/,
  },
  {
    input: 'path traversal as query id',
    call: (c) => c.readPage('store_locations', `../../${HEX}`, { start: 1, limit: 1 }),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'queryId',
    message: /lower-case hex/,
  },
  {
    input: 'unknown (well-formed) query id',
    call: (c) => c.checkQuery('store_locations', HEX),
    error: NotFoundError,
    code: 'DQS_NOT_FOUND',
    detail: 404,
    message: /404 from the service for HEAD/,
  },
  // paging
  {
    input: '`start=0`',
    call: (c) => c.readPage('store_locations', queryId, { start: 0, limit: 10 }),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'start',
    message: /to be an integer >= 1, got 0 \(number\)/,
  },
  {
    input: '`limit=-1`',
    call: (c) => c.readPage('store_locations', queryId, { start: 1, limit: -1 }),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'limit',
    message: /to be an integer >= 1, got -1/,
  },
  {
    input: '`start=1.5`, `start=NaN`',
    call: (c) => c.readPage('store_locations', queryId, { start: Number.NaN, limit: 1 }),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'start',
    message: /got null \(number\)|got NaN/,
  },
  {
    input: '`limit` as a string (`"10"`)',
    call: (c) => c.readPage('store_locations', queryId, { start: 1, limit: '10' as never }),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'limit',
    message: /got "10" \(string\)/,
  },
  {
    input: 'stream `startRow: 0`',
    call: (c) => c.stream('store_locations', {}, { startRow: 0 }),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'startRow',
    message: /to be an integer >= 1, got 0/,
  },
  {
    input: 'stream `pageSize: -1`',
    call: (c) => c.stream('store_locations', {}, { pageSize: -1 }),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'pageSize',
    message: /got -1/,
  },
  // tickers
  {
    input: 'upper-case ticker (`AAPL`)',
    call: (c) => c.createQuery('job_listings', { tickers: ['AAPL'] }),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'body.tickers[0]',
    message: /shaped `<market>:<identifier>`.*got "AAPL"/,
  },
  {
    input: 'empty ticker',
    call: (c) => c.createQuery('job_listings', { tickers: ['nasdaq:aapl', ''] }),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'body.tickers[1]',
    message: /got ""/,
  },
  {
    input: 'huge ticker',
    call: (c) => c.createQuery('job_listings', { tickers: [`nasdaq:${HUGE}`] }),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'body.tickers[0]',
    message: /\.\.\. \(string\)/,
  },
  {
    input: 'ticker of the wrong type (42)',
    call: (c) => c.createQuery('job_listings', { tickers: [42 as never] }),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'body.tickers[0]',
    message: /got 42 \(number\)/,
  },
  {
    input: '`tickers` not an array (a string)',
    call: (c) => c.createQuery('job_listings', { tickers: 'nasdaq:aapl' as never }),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'body.tickers',
    message: /to be an array of tickers/,
  },
  {
    input: 'body not an object (an array)',
    call: (c) => c.createQuery('job_listings', [] as never),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'body',
    message: /to be a query body object/,
  },
  {
    input: 'bad ticker filter on the dataset list',
    call: (c) => c.listDatasets({ ticker: 'NASDAQ:AAPL' }),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'ticker',
    message: /\(tickers are lower case\)/,
  },
  {
    input: 'huge ticker search text',
    call: (c) => c.searchTickers('job_listings', HUGE),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'text',
    message: /at most 1000 characters/,
  },
  {
    input: 'ticker search text of the wrong type',
    call: (c) => c.searchTickers('job_listings', null as never),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'text',
    message: /got null/,
  },
  // formats
  {
    input: 'wrong `Accept` (a type the query does not offer)',
    call: (c) => c.openPage('store_locations', queryId, { start: 1, limit: 1, mediaType: MediaType.xlsx }),
    error: NotAcceptableError,
    code: 'DQS_NOT_ACCEPTABLE',
    detail: 406,
    message: /406 .*names no format this query offers/,
  },
  {
    input: 'wrong `Accept` (`text/html`)',
    call: (c) => c.openPage('store_locations', queryId, { start: 1, limit: 1, mediaType: 'text/html' }),
    error: NotAcceptableError,
    code: 'DQS_NOT_ACCEPTABLE',
    detail: 406,
    message: /offered: application\/vnd\.service\.table\+json/,
  },
  {
    input: 'stream format the query lacks (`xlsx`)',
    call: (c) => c.stream('store_locations', { tickers: ['nyse:wmt'] }, { format: 'xlsx' }).toArray(),
    error: FormatNotOfferedError,
    code: 'DQS_FORMAT_NOT_OFFERED',
    detail: 'xlsx',
    message: /Format "xlsx" is not offered/,
  },
  {
    input: 'unknown stream format (`parquet`)',
    call: (c) => c.stream('store_locations', {}, { format: 'parquet' as never }),
    error: InvalidArgumentError,
    code: 'DQS_INVALID_ARGUMENT',
    detail: 'format',
    message: /to be one of 'auto', 'json', 'csv', 'xlsx', got "parquet" \(string\)/,
  },
];

interface OptionsCase {
  readonly input: string;
  readonly options: Record<string, unknown>;
  readonly argument: string;
  readonly message: RegExp;
}

const optionCases: OptionsCase[] = [
  { input: 'no base URL at all', options: { baseUrl: '' }, argument: 'baseUrl', message: /got nothing/ },
  {
    input: 'base URL not a URL',
    options: { baseUrl: 'not a url' },
    argument: 'baseUrl',
    message: /absolute http\(s\) URL/,
  },
  {
    input: 'base URL of another scheme (`ftp:`, `file:`)',
    options: { baseUrl: 'file:///etc/passwd' },
    argument: 'baseUrl',
    message: /http: or https:/,
  },
  {
    input: 'credentials in the base URL',
    options: { baseUrl: 'https://user:pw@host/' },
    argument: 'baseUrl',
    message: /no credentials in the URL/,
  },
  {
    input: 'key over plain http:// to a remote host',
    options: { baseUrl: 'http://example.com', apiKey: 'k' },
    argument: 'baseUrl',
    message: /Refusing to send the API key over plain http/,
  },
  {
    input: 'key with a line break (header injection)',
    options: { apiKey: 'k\r\nX-Evil: 1' },
    argument: 'apiKey',
    message: /printable ASCII.*not shown/,
  },
  {
    input: 'API version not a date (`v2`)',
    options: { apiVersion: 'v2' },
    argument: 'apiVersion',
    message: /YYYYMMDD/,
  },
  {
    input: '`timeoutMs: 0`',
    options: { timeoutMs: 0 },
    argument: 'timeoutMs',
    message: /integer >= 1, got 0/,
  },
  {
    input: '`maxResponseBytes: -1`',
    options: { maxResponseBytes: -1 },
    argument: 'maxResponseBytes',
    message: /got -1/,
  },
  {
    input: '`retry: { retries: -1 }`',
    options: { retry: { retries: -1 } },
    argument: 'retry.retries',
    message: /integer >= 0, got -1/,
  },
  {
    input: '`rateLimit: { requests: 0 }`',
    options: { rateLimit: { requests: 0 } },
    argument: 'rateLimit.requests',
    message: /got 0/,
  },
  {
    input: 'an `Authorization` among extra headers',
    options: { headers: { Authorization: 'x' } },
    argument: 'headers',
    message: /no Authorization header/,
  },
];

describe('bad input: client API', () => {
  for (const c of clientCases) {
    it(`${c.input} → ${c.error.name} (${c.code})`, async () => {
      const before = emu.requests.length;
      let thrown: unknown;
      try {
        await settle(Promise.resolve().then(() => c.call(client)));
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(c.error);
      const err = thrown as DqsError & { argument?: string; status?: number; offered?: unknown };
      expect(err.code).toBe(c.code);
      expect(err.message).toMatch(c.message);
      expect(err.message.length).toBeLessThan(400); // a huge input is never echoed whole
      if (typeof c.detail === 'number') expect(err.status).toBe(c.detail);
      else if (c.error === InvalidArgumentError) {
        expect(err.argument).toBe(c.detail);
        // Validation happens before anything is sent.
        expect(emu.requests.length).toBe(before);
      }
    });
  }

  it('the key: missing → 401, wrong → 401, unsupported API version → 400, each typed', async () => {
    const none = new DatasetClient({ baseUrl: emu.url, retry: false });
    const wrong = new DatasetClient({ baseUrl: emu.url, apiKey: 'wrong', retry: false });
    const version = new DatasetClient({
      baseUrl: emu.url,
      apiKey: KEY,
      apiVersion: '20990101',
      retry: false,
    });
    try {
      await expect(settle(none.listDatasets())).rejects.toThrow(AuthenticationError);
      await expect(settle(none.listDatasets())).rejects.toThrow(/401 .*missing Authorization header/);
      await expect(settle(wrong.listDatasets())).rejects.toThrow(/401 .*invalid API key/);
      await expect(settle(version.listDatasets())).rejects.toThrow(BadRequestError);
      await expect(settle(version.listDatasets())).rejects.toThrow(
        /400 .*unsupported X-API-Version "20990101"/,
      );
    } finally {
      await Promise.all([none.close(), wrong.close(), version.close()]);
    }
  });

  it('start past the end is not an error: an empty page', async () => {
    const page = await settle(
      client.readPage('store_locations', queryId, { start: 1_000_000_000, limit: 10 }),
    );
    expect(page).toMatchObject({ count: 0, rows: [], start: 1_000_000_000 });
  });

  for (const c of optionCases) {
    it(`option: ${c.input} → InvalidArgumentError (${c.argument})`, () => {
      const options = { baseUrl: 'http://127.0.0.1:1', ...c.options };
      let thrown: unknown;
      try {
        new DatasetClient(options as never);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(InvalidArgumentError);
      expect((thrown as InvalidArgumentError).argument).toBe(c.argument);
      expect((thrown as Error).message).toMatch(c.message);
    });
  }

  it('property: arbitrary junk in every argument is an InvalidArgumentError or a typed error, never a crash', async () => {
    const junk = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.constantFrom(
        '',
        '..',
        '../..',
        '%2e%2e',
        HEX,
        'nasdaq:aapl',
        'job_listings',
        '\u0000',
        '/',
        '?x=1#y',
      ),
      fc.integer(),
      fc.double(),
      fc.constant(null),
      fc.constant(undefined),
      fc.array(fc.string({ maxLength: 20 }), { maxLength: 3 }),
      fc.object({ maxDepth: 2 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 6 }), junk, junk, async (which, a, b) => {
        const calls: (() => Promise<unknown>)[] = [
          () => client.getDataset(a as never),
          () => client.searchTickers(a as never, b as never),
          () => client.createQuery('job_listings', a as never),
          () => client.createQuery(a as never, { tickers: b as never }),
          () => client.checkQuery(a as never, b as never),
          () => client.readPage('store_locations', queryId, { start: a as never, limit: b as never }),
          () => client.listDatasets({ ticker: a as never }),
        ];
        try {
          await settle(Promise.resolve().then(calls[which]!), 5000);
        } catch (err) {
          expect(err).toBeInstanceOf(DqsError);
          expect(['DQS_INVALID_ARGUMENT', 'DQS_NOT_FOUND', 'DQS_BAD_REQUEST']).toContain(
            (err as DqsError).code,
          );
        }
      }),
      { numRuns: 300 },
    );
    expect((await client.listDatasets()).length).toBe(4);
  });
});

interface EmulatorCase {
  readonly input: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly message: RegExp;
  readonly headers?: Record<string, string>;
  readonly body?: string | Buffer;
}

const Q = () => `/datasets/store_locations/query/${queryId}`;
const POST = '/datasets/job_listings/query/';
const emulatorCases: (() => EmulatorCase)[] = [
  () => ({
    input: 'empty body',
    method: 'POST',
    path: POST,
    body: '',
    status: 400,
    message: /body is not valid JSON/,
  }),
  () => ({
    input: 'malformed JSON',
    method: 'POST',
    path: POST,
    body: '{"tickers":',
    status: 400,
    message: /body is not valid JSON/,
  }),
  () => ({
    input: 'body not an object (`[]`, `"x"`, `null`)',
    method: 'POST',
    path: POST,
    body: 'null',
    status: 400,
    message: /body must be a JSON object, got null/,
  }),
  () => ({
    input: '`tickers` of the wrong type',
    method: 'POST',
    path: POST,
    body: '{"tickers":"nasdaq:aapl"}',
    status: 400,
    message: /tickers must be an array of strings, got "nasdaq:aapl"/,
  }),
  () => ({
    input: 'bad ticker in the body',
    method: 'POST',
    path: POST,
    body: '{"tickers":["nasdaq:aapl",42]}',
    status: 400,
    message: /tickers\[1\] must be a ticker .*got 42 \(number\)/,
  }),
  () => ({
    input: 'body nested 1,000 deep',
    method: 'POST',
    path: POST,
    body: `${'['.repeat(1000)}${']'.repeat(1000)}`,
    status: 400,
    message: /body must be a JSON object/,
  }),
  () => ({
    input: 'object nested 100 deep',
    method: 'POST',
    path: POST,
    body: `${'{"a":'.repeat(100)}1${'}'.repeat(100)}`,
    status: 400,
    message: /deeper than 64 levels/,
  }),
  () => ({
    input: 'body over 1 MiB',
    method: 'POST',
    path: POST,
    body: `{"x":"${'y'.repeat(1_100_000)}"}`,
    status: 413,
    message: /exceeds 1048576 bytes/,
  }),
  () => ({
    input: 'not UTF-8 / binary body',
    method: 'POST',
    path: POST,
    body: Buffer.from([0xff, 0xfe, 0, 1]),
    status: 400,
    message: /not valid JSON/,
  }),
  () => ({
    input: '`start=0`',
    method: 'GET',
    path: `${Q()}?start=0`,
    status: 400,
    message: /start must be an integer between 1 and/,
  }),
  () => ({
    input: '`limit=-1`',
    method: 'GET',
    path: `${Q()}?limit=-1`,
    status: 400,
    message: /limit must be an integer .*got "-1"/,
  }),
  () => ({
    input: '`start=abc`, `limit=1e3`, huge `start`',
    method: 'GET',
    path: `${Q()}?start=99999999999999999999`,
    status: 400,
    message: /start must be/,
  }),
  () => ({
    input: 'bad `ticker` filter on the dataset list',
    method: 'GET',
    path: '/datasets/?ticker=NASDAQ%3AAAPL',
    status: 400,
    message: /ticker must be shaped <market>:<identifier>/,
  }),
  () => ({
    input: 'unknown dataset',
    method: 'GET',
    path: '/datasets/no_such_dataset',
    status: 404,
    message: /unknown dataset "no_such_dataset"/,
  }),
  () => ({
    input: 'huge dataset id (10,000 chars)',
    method: 'GET',
    path: `/datasets/${'x'.repeat(10_000)}`,
    status: 404,
    message: /^unknown dataset "x{99}…"$/,
  }),
  () => ({
    input: 'non-hex query id',
    method: 'GET',
    path: '/datasets/store_locations/query/xyz',
    status: 400,
    message: /query id must be 64 lower-case hex characters/,
  }),
  () => ({
    input: 'unknown query id',
    method: 'GET',
    path: `/datasets/store_locations/query/${HEX}`,
    status: 404,
    message: /unknown query/,
  }),
  () => ({
    input: 'path traversal (`/datasets/../../etc/passwd`)',
    method: 'GET',
    path: '/datasets/../../etc/passwd',
    status: 404,
    message: /no endpoint at|unknown dataset/,
  }),
  () => ({
    input: 'encoded traversal (`..%2F..%2Fetc%2Fpasswd`)',
    method: 'GET',
    path: '/datasets/..%2F..%2Fetc%2Fpasswd',
    status: 404,
    message: /unknown dataset "\.\.\/\.\.\/etc\/passwd"/,
  }),
  () => ({
    input: 'malformed percent-encoding',
    method: 'GET',
    path: '/datasets/%zz',
    status: 400,
    message: /malformed request target/,
  }),
  () => ({
    input: 'NUL bytes in the path',
    method: 'GET',
    path: `/datasets/${'%00'.repeat(20)}`,
    status: 404,
    message: /unknown dataset/,
  }),
  () => ({
    input: 'wrong `Accept` on a result',
    method: 'GET',
    path: `${Q()}?limit=1`,
    headers: { Accept: 'text/html' },
    status: 406,
    message: /Accept "text\/html" names no format this query offers/,
  }),
  () => ({
    input: 'missing key',
    method: 'GET',
    path: '/datasets/',
    headers: { Authorization: '' },
    status: 401,
    message: /missing Authorization header|token scheme/,
  }),
  () => ({
    input: 'wrong key',
    method: 'GET',
    path: '/datasets/',
    headers: { Authorization: 'token nope' },
    status: 401,
    message: /^invalid API key$/,
  }),
  () => ({
    input: 'wrong scheme (`Bearer`)',
    method: 'GET',
    path: '/datasets/',
    headers: { Authorization: `Bearer ${KEY}` },
    status: 401,
    message: /token scheme/,
  }),
  () => ({
    input: 'bad API version',
    method: 'GET',
    path: '/datasets/',
    headers: { 'X-API-Version': '2015-11-30' },
    status: 400,
    message: /unsupported X-API-Version "2015-11-30"; supported: 20151130/,
  }),
  () => ({
    input: 'wrong method (`DELETE`)',
    method: 'DELETE',
    path: '/datasets/',
    status: 405,
    message: /method "DELETE" not allowed here; allowed: GET, HEAD/,
  }),
  () => ({
    input: 'headers over 16 KiB',
    method: 'GET',
    path: '/datasets/',
    headers: { 'X-Junk': 'j'.repeat(20_000) },
    status: 431,
    message: /request headers too large/,
  }),
];

describe('bad input: emulator', () => {
  for (const make of emulatorCases) {
    it(`${make().input}`, async () => {
      const c = make();
      const headers: Record<string, string> = { ...authHeaders(emu), ...c.headers };
      if (headers.Authorization === '') delete headers.Authorization;
      if (c.body !== undefined) headers['Content-Type'] = 'application/json';
      const res = await settle(rawRequest(emu, c.method, c.path, headers, c.body));
      expect(res.status).toBe(c.status);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const body = JSON.parse(res.body) as { message: string };
      expect(body.message).toMatch(c.message);
      expect(body.message.length).toBeLessThanOrEqual(300);
      expect(body.message).not.toContain(KEY);
    });
  }

  it('malformed HTTP on the socket gets 400 {message}', async () => {
    const text = await settle(
      new Promise<string>((resolve, reject) => {
        const socket = connect(emu.port, '127.0.0.1', () => socket.write('GARBAGE\r\n\r\n'));
        let out = '';
        socket.on('data', (c: Buffer) => {
          out += c;
        });
        socket.on('close', () => resolve(out));
        socket.on('error', reject);
      }),
    );
    expect(text).toMatch(/^HTTP\/1\.1 400 [\s\S]*\{"message":"malformed HTTP request"\}$/);
  });

  it('property: any method, path, query, Accept, key and body gets a status and, when >= 400, a JSON {message}', async () => {
    const segment = fc.oneof(
      fc.constantFrom(
        'datasets',
        'job_listings',
        'query',
        'tickers',
        '',
        '..',
        '.',
        '%2F',
        '%00',
        '%zz',
        HEX,
        queryId,
      ),
      fc.string({ maxLength: 30 }).map(encodeURIComponent),
    );
    const request = fc.record({
      method: fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH'),
      segments: fc.array(segment, { maxLength: 5 }),
      query: fc.dictionary(
        fc.constantFrom('start', 'limit', 'ticker', 'query', '__proto__', 'x'),
        fc.oneof(fc.string({ maxLength: 20 }), fc.integer().map(String)),
      ),
      accept: fc.option(
        fc.constantFrom('*/*', 'text/csv', 'text/html', 'application/*;q=0', MediaType.xlsx, ',,;;'),
      ),
      auth: fc.constantFrom(`token ${KEY}`, 'token wrong', '', 'Basic x'),
      version: fc.option(fc.constantFrom('20151130', '1', '')),
      body: fc.option(fc.oneof(fc.json(), fc.string({ maxLength: 200 }))),
    });
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const params = new URLSearchParams(r.query).toString();
        const path = `/${r.segments.join('/')}${params ? `?${params}` : ''}`;
        const headers: Record<string, string> = {};
        if (r.auth) headers.Authorization = r.auth;
        if (r.accept !== null) headers.Accept = r.accept;
        if (r.version !== null) headers['X-API-Version'] = r.version;
        const body = r.body === null || r.method === 'GET' || r.method === 'HEAD' ? undefined : r.body;
        const res = await settle(rawRequest(emu, r.method, path, headers, body), 5000);
        expect(res.status).toBeGreaterThanOrEqual(200);
        expect(res.status).toBeLessThan(500);
        if (res.status >= 400 && r.method !== 'HEAD') {
          expect(typeof (JSON.parse(res.body) as { message: unknown }).message).toBe('string');
        }
      }),
      { numRuns: 400 },
    );
    const alive = await rawRequest(emu, 'GET', '/datasets/', authHeaders(emu));
    expect(alive.status).toBe(200);
  });
});

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

interface CliCase {
  readonly input: string;
  readonly args: (connection: string[]) => string[];
  readonly exit: number;
  readonly stderr: RegExp;
}

const cliCases: CliCase[] = [
  { input: 'no command', args: () => [], exit: 2, stderr: /Usage: dqs <command>/ },
  { input: 'unknown command', args: () => ['frobnicate'], exit: 2, stderr: /unknown command "frobnicate"/ },
  {
    input: 'unknown option',
    args: (c) => ['datasets', '--bogus', ...c],
    exit: 2,
    stderr: /Unknown option '--bogus'/,
  },
  { input: 'missing dataset', args: () => ['query'], exit: 2, stderr: /missing <dataset>/ },
  {
    input: 'missing --out',
    args: (c) => ['query', 'job_listings', ...c],
    exit: 2,
    stderr: /missing --out FILE/,
  },
  {
    input: 'empty dataset id',
    args: (c) => ['query', '', '--out', 'x.csv', ...c],
    exit: 2,
    stderr: /Invalid `datasetId`/,
  },
  {
    input: 'path traversal as dataset id',
    args: (c) => ['dataset', '../../etc/passwd', ...c],
    exit: 2,
    stderr: /Invalid `datasetId`.*"\.\.\/\.\.\/etc\/passwd"/,
  },
  {
    input: 'huge dataset id',
    args: (c) => ['dataset', 'x'.repeat(50_000), ...c],
    exit: 2,
    stderr: /Invalid `datasetId`/,
  },
  {
    input: 'unknown dataset',
    args: (c) => ['query', 'no_such_dataset', '--out', 'x.csv', ...c],
    exit: 4,
    stderr: /404 .*unknown dataset "no_such_dataset"/,
  },
  {
    input: 'bad ticker (`AAPL`)',
    args: (c) => ['query', 'job_listings', '--ticker', 'AAPL', '--out', 'x.csv', ...c],
    exit: 2,
    stderr: /"AAPL" is not a ticker: expected `<market>:<identifier>`/,
  },
  {
    input: 'empty ticker',
    args: (c) => ['query', 'job_listings', '--ticker', '', '--out', 'x.csv', ...c],
    exit: 2,
    stderr: /"" is not a ticker/,
  },
  {
    input: 'huge ticker',
    args: (c) => [
      'query',
      'job_listings',
      '--ticker',
      `nasdaq:${'x'.repeat(50_000)}`,
      '--out',
      'x.csv',
      ...c,
    ],
    exit: 2,
    stderr: /"nasdaq:x+"… \(50007 characters\) is not a ticker/,
  },
  {
    input: 'upper-case ticker filter',
    args: (c) => ['datasets', '--ticker', 'NASDAQ:AAPL', ...c],
    exit: 2,
    stderr: /tickers are lower case/,
  },
  {
    input: '`--page-size 0`',
    args: (c) => ['query', 'job_listings', '--page-size', '0', '--out', 'x.csv', ...c],
    exit: 2,
    stderr: /--page-size to be an integer >= 1, got "0"/,
  },
  {
    input: '`--page-size=-1`',
    args: (c) => ['query', 'job_listings', '--page-size=-1', '--out', 'x.csv', ...c],
    exit: 2,
    stderr: /--page-size/,
  },
  {
    input: '`--concurrency abc`',
    args: (c) => ['query', 'job_listings', '--concurrency', 'abc', '--out', 'x.csv', ...c],
    exit: 2,
    stderr: /--concurrency to be an integer from 1 to 64, got "abc"/,
  },
  {
    input: 'unknown output extension',
    args: (c) => ['query', 'job_listings', '--out', 'x.txt', ...c],
    exit: 2,
    stderr: /cannot tell the output format of "x\.txt"/,
  },
  {
    input: 'unknown wire format',
    args: (c) => ['query', 'job_listings', '--format', 'parquet', '--out', 'x.csv', ...c],
    exit: 2,
    stderr: /--format to be one of auto, json, csv, xlsx/,
  },
  {
    input: 'wire format the query lacks (wrong Accept)',
    args: (c) => [
      'query',
      'store_locations',
      '--ticker',
      'nyse:wmt',
      '--format',
      'xlsx',
      '--out',
      'x.csv',
      ...c,
    ],
    exit: 5,
    stderr: /Format "xlsx" is not offered/,
  },
  {
    input: 'non-hex query id',
    args: (c) => ['status', 'job_listings', 'not-hex', ...c],
    exit: 2,
    stderr: /Invalid `queryId`/,
  },
  {
    input: 'path traversal as query id',
    args: (c) => ['status', 'job_listings', '../../x', ...c],
    exit: 2,
    stderr: /Invalid `queryId`/,
  },
  {
    input: 'unknown query id',
    args: (c) => ['status', 'job_listings', HEX, ...c],
    exit: 4,
    stderr: /404 from the service \(HEAD/,
  },
  {
    input: 'huge ticker search text',
    args: (c) => ['tickers', 'job_listings', 'x'.repeat(5000), ...c],
    exit: 2,
    stderr: /Invalid `text`/,
  },
  {
    input: 'missing key',
    args: (c) => ['datasets', '--base-url', c[1]!],
    exit: 3,
    stderr: /401 .*missing Authorization header/,
  },
  {
    input: 'wrong key',
    args: (c) => ['datasets', '--base-url', c[1]!, '--api-key', 'wrong'],
    exit: 3,
    stderr: /401 .*invalid API key/,
  },
  {
    input: 'key with a line break',
    args: (c) => ['datasets', '--base-url', c[1]!, '--api-key', 'a\nb'],
    exit: 2,
    stderr: /Invalid --api-key: .*not shown/,
  },
  {
    input: 'base URL not a URL',
    args: () => ['datasets', '--base-url', 'not a url', '--api-key', 'k'],
    exit: 2,
    stderr: /Invalid --base-url: /,
  },
  {
    input: 'key over plain http:// to a remote host',
    args: () => ['datasets', '--base-url', 'http://example.com', '--api-key', 'k'],
    exit: 2,
    stderr: /Refusing to send the API key over plain http/,
  },
  {
    input: 'output directory missing',
    args: (c) => [
      'query',
      'job_listings',
      '--ticker',
      'nasdaq:aapl',
      '--out',
      '/nonexistent-dir/x.csv',
      ...c,
    ],
    exit: 7,
    stderr: /cannot create .*ENOENT/,
  },
];

describe.skipIf(!existsSync(CLI))('bad input: CLI (dist/cli/main.js)', () => {
  // The commands' working directory (relative --out names land there) and their result cache: one
  // directory of the suite's own, not the shared temp dir itself.
  const work = mkdtempSync(join(tmpdir(), 'dqs-bad-input-'));
  const cacheHome = join(work, 'cache');
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  function run(args: string[]): Promise<{ code: number | null; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [CLI, ...args], {
        // XDG_CACHE_HOME: the CLI's result cache must not touch the cache of the user running the tests.
        env: { ...process.env, DQS_BASE_URL: '', DQS_API_KEY: '', XDG_CACHE_HOME: cacheHome },
        cwd: work,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => {
        stderr += c;
      });
      const timer = setTimeout(() => {
        child.kill();
        reject(new Error(`dqs ${args.join(' ').slice(0, 80)} did not finish in 15 s`));
      }, 15_000);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stderr });
      });
    });
  }

  // One test for all, the processes run 4 at a time: ~30 Node start-ups are the cost here.
  it('each hostile input gets its exit code and a one-line reason on stderr; none is "unexpected" (1)', async () => {
    const connection = ['--base-url', emu.url, '--api-key', KEY, '--quiet'];
    const results: { c: CliCase; code: number | null; stderr: string }[] = [];
    const queue = [...cliCases];
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let c = queue.shift(); c; c = queue.shift())
          results.push({ c, ...(await run(c.args(connection))) });
      }),
    );
    for (const { c, code, stderr } of results) {
      expect({ input: c.input, code }).toEqual({ input: c.input, code: c.exit });
      expect(stderr, c.input).toMatch(c.stderr);
      expect(stderr, c.input).not.toContain(KEY);
      expect(stderr.length, c.input).toBeLessThan(2000);
    }
  }, 60_000);
});
