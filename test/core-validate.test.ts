// The checking kit (core/validate.ts) and the option checks routed through it: every message has the one
// shape ``Invalid `name`: Expected `name` to be …, got … (type)``, secrets are never shown, and each check
// throws an InvalidArgumentError naming its argument before anything is sent (the clients below point at
// a port nothing listens on: reaching the network would fail differently).
import { describe, expect, it } from 'vitest';
import { toDuckDB } from '../src/analytics/dataframes.js';
import { queryEach } from '../src/analytics/fan-out.js';
import {
  checkInteger,
  checkNonEmptyArray,
  checkNumber,
  checkObject,
  invalidSecret,
  optionalBoolean,
  optionalInteger,
} from '../src/core/validate.js';
import { DatasetClient } from '../src/index.js';
import { invalidArgumentOf as thrown } from './helpers.js';

const NOWHERE = 'http://127.0.0.1:1';

/** Checks the argument and the whole message: ``Invalid `name`: Expected `name` to be <what>, got <got>``. */
async function expectMessage(run: () => unknown, argument: string, what: string, got: string) {
  const error = await thrown(run);
  expect(error.argument).toBe(argument);
  expect(error.code).toBe('DQS_INVALID_ARGUMENT');
  expect(error.message).toBe(`Invalid \`${argument}\`: Expected \`${argument}\` to be ${what}, got ${got}`);
}

describe('the kit', () => {
  it('checkNumber: finite numbers in range; the range in the message', async () => {
    expect(checkNumber(0, 'n', 0)).toBe(0);
    expect(checkNumber(0.5, 'n', 0, 1)).toBe(0.5);
    await expectMessage(() => checkNumber(-1, 'n', 0), 'n', 'a finite number >= 0', '-1 (number)');
    await expectMessage(() => checkNumber(2, 'n', 0, 1), 'n', 'a finite number from 0 to 1', '2 (number)');
    await expectMessage(() => checkNumber(Number.NaN, 'n', 0), 'n', 'a finite number >= 0', 'null (number)');
    await expectMessage(
      () => checkNumber(Number.POSITIVE_INFINITY, 'n', 0),
      'n',
      'a finite number >= 0',
      'null (number)',
    );
    await expectMessage(() => checkNumber('5', 'n', 0), 'n', 'a finite number >= 0', '"5" (string)');
  });

  it('checkInteger / optionalInteger: integers only, the fallback only for a missing option', async () => {
    expect(optionalInteger(undefined, 'k', 1, 7)).toBe(7);
    expect(checkInteger(3, 'k', 1, 3)).toBe(3);
    await expectMessage(() => optionalInteger(null, 'k', 1, 7), 'k', 'an integer >= 1', 'null (null)');
    await expectMessage(() => checkInteger(1.5, 'k', 1), 'k', 'an integer >= 1', '1.5 (number)');
    await expectMessage(() => checkInteger(4, 'k', 1, 3), 'k', 'an integer from 1 to 3', '4 (number)');
  });

  it('optionalBoolean, checkObject, checkNonEmptyArray', async () => {
    expect(optionalBoolean(undefined, 'b', true)).toBe(true);
    expect(optionalBoolean(false, 'b', true)).toBe(false);
    await expectMessage(() => optionalBoolean('yes', 'b', false), 'b', 'a boolean', '"yes" (string)');
    const o = { a: 1 };
    expect(checkObject(o, 'o')).toBe(o);
    await expectMessage(() => checkObject([], 'o'), 'o', 'an object', '[] (object)');
    await expectMessage(() => checkObject(null, 'o', 'an options bag'), 'o', 'an options bag', 'null (null)');
    expect(checkNonEmptyArray([1], 'a')).toEqual([1]);
    await expectMessage(() => checkNonEmptyArray([], 'a'), 'a', 'a non-empty array', '[] (object)');
    await expectMessage(() => checkNonEmptyArray('x', 'a'), 'a', 'a non-empty array', '"x" (string)');
  });

  it('invalidSecret names the type and never the value', () => {
    const error = invalidSecret('apiKey', 'a key', 'hunter2-secret');
    expect(error.message).toBe(
      'Invalid `apiKey`: Expected `apiKey` to be a key, got a value not shown (string)',
    );
    expect(error.message).not.toContain('hunter2');
  });
});

describe('the option checks routed through it', () => {
  it('cache options', async () => {
    const client = (cache: unknown) => new DatasetClient({ baseUrl: NOWHERE, cache: cache as never });
    await expectMessage(
      () => client('yes'),
      'cache',
      'a boolean or { dir, maxAge, maxBytes, refresh }',
      '"yes" (string)',
    );
    await expectMessage(
      () => client({ dir: 'rel/dir' }),
      'cache.dir',
      'an absolute path',
      '"rel/dir" (string)',
    );
    await expectMessage(
      () => client({ dir: '/tmp', maxAge: -5 }),
      'cache.maxAge',
      'a finite number >= 0',
      '-5 (number)',
    );
    await expectMessage(
      () => client({ dir: '/tmp', maxBytes: 0 }),
      'cache.maxBytes',
      'an integer >= 1',
      '0 (number)',
    );
    await expectMessage(
      () => client({ dir: '/tmp', refresh: 'no' }),
      'cache.refresh',
      'a boolean',
      '"no" (string)',
    );
  });

  it('compression', async () => {
    const error = await thrown(() => new DatasetClient({ baseUrl: NOWHERE, compression: ['lz4'] as never }));
    expect(error.argument).toBe('compression');
    // The codings listed depend on Node's zlib (zstd from 22.15).
    expect(error.message).toMatch(
      /^Invalid `compression`: Expected `compression` to be true, false, 'auto' or a non-empty list of 'gzip', 'deflate', 'br'(, 'zstd')?, got \["lz4"\] \(object\)$/,
    );
  });

  it('apiKey and token: the type, never the value', async () => {
    const key = await thrown(() => new DatasetClient({ baseUrl: NOWHERE, apiKey: 'sec\nret' }));
    expect(key.message).toBe(
      'Invalid `apiKey`: Expected `apiKey` to be a string of printable ASCII characters, got a value not shown (string)',
    );
    const token = await thrown(() => new DatasetClient({ baseUrl: NOWHERE, token: 'tok-secret' as never }));
    expect(token.message).toBe(
      'Invalid `token`: Expected `token` to be a function returning the token, got a value not shown (string)',
    );
    expect(token.message).not.toContain('tok-secret');
  });

  it('maxRows and firstPageRows of a query', async () => {
    const client = new DatasetClient({ baseUrl: NOWHERE });
    await expectMessage(
      () => client.query('job_listings', {}, { maxRows: -1 }),
      'maxRows',
      'an integer >= 0',
      '-1 (number)',
    );
    await expectMessage(
      () => client.query('job_listings', {}, { firstPageRows: '10' as never }),
      'firstPageRows',
      'an integer >= 1',
      '"10" (string)',
    );
  });

  it('checkTickers', async () => {
    const client = new DatasetClient({ baseUrl: NOWHERE });
    await expectMessage(
      () => client.query('job_listings', {}, { checkTickers: 'maybe' as never }),
      'checkTickers',
      "true, false, 'warn' or 'error'",
      '"maybe" (string)',
    );
  });

  it('queryEach', async () => {
    const first = (options: unknown) => queryEach({} as never, options as never).next();
    await expectMessage(() => first(null), 'options', 'an object', 'null (null)');
    await expectMessage(
      () => first({ datasets: [], tickers: ['nasdaq:aapl'] }),
      'datasets',
      'a non-empty array',
      '[] (object)',
    );
    await expectMessage(
      () => first({ datasets: ['job_listings'], tickers: ['nasdaq:aapl'], concurrency: 0 }),
      'concurrency',
      'an integer >= 1',
      '0 (number)',
    );
    await expectMessage(
      () => first({ datasets: ['job_listings'], tickers: ['nasdaq:aapl'], body: { tickers: [] } as never }),
      'body',
      'a rawBody({ … }) of the members to send besides `tickers`',
      '{"tickers":[]} (object)',
    );
  });

  it('toDuckDB connection', async () => {
    await expectMessage(
      () => toDuckDB({} as never, [], 't'),
      'connection',
      'a DuckDB connection (with a run(sql) method)',
      '{} (object)',
    );
  });
});
