// The error contract of the public API: every error class the package exports is a DqsError, and each
// class (but the two bases, DqsError and HttpError) always carries the same `code`, so callers can match
// on `code` alone. A class added to the exports without a line below fails the first test.
import { describe, expect, it } from 'vitest';
import * as api from '../src/index.js';

const info = { method: 'GET', url: 'http://127.0.0.1:1/datasets' };
const details = { ...info, status: 400 };

/** One instance of each exported concrete error class, and the code that class always has. */
const samples: Record<string, [api.DqsError, api.DqsErrorCode]> = {
  AbortError: [new api.AbortError('the stream'), 'DQS_ABORTED'],
  AuthenticationError: [new api.AuthenticationError({ ...details, status: 401 }), 'DQS_AUTH'],
  BadRequestError: [new api.BadRequestError(details), 'DQS_BAD_REQUEST'],
  ContentEncodingError: [new api.ContentEncodingError('not gzip', 'gzip', info), 'DQS_PROTOCOL'],
  DecodeError: [new api.DecodeError('not a page'), 'DQS_DECODE'],
  ForbiddenError: [new api.ForbiddenError({ ...details, status: 403 }), 'DQS_FORBIDDEN'],
  FormatNotOfferedError: [new api.FormatNotOfferedError('csv', ['text/csv']), 'DQS_FORMAT_NOT_OFFERED'],
  InvalidArgumentError: [new api.InvalidArgumentError('pageSize', 'no'), 'DQS_INVALID_ARGUMENT'],
  InvalidValueError: [new api.InvalidValueError('a number', 'x'), 'DQS_INVALID_VALUE'],
  MissingPackageError: [
    new api.MissingPackageError('nodejs-polars', 'nodejs-polars', 'install nodejs-polars'),
    'DQS_MISSING_PACKAGE',
  ],
  NetworkError: [new api.NetworkError(info, 'reset'), 'DQS_NETWORK'],
  NotAcceptableError: [new api.NotAcceptableError({ ...details, status: 406 }), 'DQS_NOT_ACCEPTABLE'],
  NotFoundError: [new api.NotFoundError({ ...details, status: 404 }), 'DQS_NOT_FOUND'],
  NotServiceError: [new api.NotServiceError(info, 'with an HTML page'), 'DQS_NOT_SERVICE'],
  ProtocolError: [new api.ProtocolError('bad start', info), 'DQS_PROTOCOL'],
  QueryFailedError: [
    new api.QueryFailedError({ state: 'failed', datasetId: 'job_listings', queryId: 'a'.repeat(64) }),
    'DQS_QUERY_FAILED',
  ],
  RateLimitedError: [new api.RateLimitedError({ ...details, status: 429 }), 'DQS_RATE_LIMITED'],
  ResponseTooLargeError: [new api.ResponseTooLargeError(info, 10), 'DQS_RESPONSE_TOO_LARGE'],
  RowLimitError: [new api.RowLimitError(10 ** 12, 500_000), 'DQS_ROW_LIMIT'],
  ServerError: [new api.ServerError({ ...details, status: 503 }), 'DQS_SERVER'],
  TimeoutError: [new api.TimeoutError('GET', 5), 'DQS_TIMEOUT'],
  TruncatedError: [new api.TruncatedError(500_000), 'DQS_TRUNCATED'],
  SplitSchemaError: [
    new api.SplitSchemaError('job_listings', ['nasdaq:aapl'], 'has 3 columns'),
    'DQS_SPLIT_SCHEMA',
  ],
};
/**
 * Bases whose code is the subclass's (or, used directly, a generic one), and ConnectionError, whose code
 * names the fault (DQS_DNS, DQS_CONNECT, DQS_TLS_*, DQS_PROXY*: transport-connect-errors.test.ts).
 */
const bases = ['DqsError', 'HttpError', 'ConnectionError'];

const exportedErrorClasses = Object.entries(api).filter(
  ([, value]) => typeof value === 'function' && value.prototype instanceof Error,
) as [string, abstract new (...args: never[]) => Error][];

describe('exported error classes', () => {
  it('are all DqsErrors, and each concrete one is listed here with its code', () => {
    expect(exportedErrorClasses.length).toBeGreaterThan(10);
    for (const [name, Class] of exportedErrorClasses) {
      expect(Class === api.DqsError || Class.prototype instanceof api.DqsError, `${name} is a DqsError`).toBe(
        true,
      );
    }
    const concrete = exportedErrorClasses.map(([name]) => name).filter((name) => !bases.includes(name));
    expect(concrete.sort()).toEqual(Object.keys(samples).sort());
  });

  it.each(Object.entries(samples))(
    '%s has its fixed code, its own name and a message',
    (name, [error, code]) => {
      expect(error).toBeInstanceOf(new Map(exportedErrorClasses).get(name));
      expect(error).toBeInstanceOf(api.DqsError);
      expect(error.code).toBe(code);
      expect(error.name).toBe(name);
      expect(error.message.length).toBeGreaterThan(0);
    },
  );

  it('codes are one per class: two classes share a code only when one extends the other', () => {
    const entries = Object.values(samples);
    for (const [a, codeA] of entries) {
      for (const [b, codeB] of entries) {
        if (a === b || codeA !== codeB) continue;
        const [classA, classB] = [a.constructor as typeof Error, b.constructor as typeof Error];
        const related = a instanceof classB || b instanceof classA;
        expect(related, `${a.name} and ${b.name} share ${codeA}`).toBe(true);
      }
    }
  });
});
