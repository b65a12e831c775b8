/**
 * Checks of the service's own identifiers (tickers, dataset and query ids, query bodies), done before
 * anything is sent, so a typo costs an exception with the argument's name instead of a round trip and a
 * vague 400. Built on the checking kit (core/validate.ts), whose integer and string checks they re-export.
 */
import { RawQueryBody } from '../core/raw-body.js';
import { checkKeys, invalid, optionKeys } from '../core/validate.js';
import type { QueryBody, WireBody } from '../core/wire.js';

export { checkInteger, checkString } from '../core/validate.js';

const TICKER = /^[a-z0-9][a-z0-9_.&-]*:[a-z0-9][a-z0-9_.&-]*$/;
const DATASET_ID = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const QUERY_ID = /^[0-9a-f]{64}$/;

/** `<market>:<identifier>`, lower case; `private:` is a market like any other. */
export function checkTicker(value: unknown, argument = 'ticker'): string {
  if (typeof value !== 'string' || value.length > 128 || !TICKER.test(value)) {
    const hint =
      typeof value === 'string' && TICKER.test(value.toLowerCase()) ? ' (tickers are lower case)' : '';
    throw invalid(argument, 'a ticker shaped `<market>:<identifier>` such as `nasdaq:aapl`', value, hint);
  }
  return value;
}

export function checkTickers(value: unknown, argument = 'tickers'): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw invalid(argument, 'an array of tickers', value);
  for (const [i, t] of value.entries()) checkTicker(t, `${argument}[${i}]`);
  return value as string[];
}

export function checkDatasetId(value: unknown, argument = 'datasetId'): string {
  if (typeof value !== 'string' || !DATASET_ID.test(value)) {
    throw invalid(
      argument,
      "a dataset id (letters, digits, '_', '.', '-'; up to 128) such as `job_listings`",
      value,
    );
  }
  return value;
}

export function checkQueryId(value: unknown, argument = 'queryId'): string {
  if (typeof value !== 'string' || !QUERY_ID.test(value)) {
    throw invalid(argument, 'a query id (64 lower-case hex characters)', value);
  }
  return value;
}

export function isQueryId(value: unknown): value is string {
  return typeof value === 'string' && QUERY_ID.test(value);
}

const BODY_KEYS = optionKeys<QueryBody>({ tickers: true });

/**
 * The query body as it is sent: a `QueryBody` holds the spec's members alone (anything else is refused,
 * naming the member meant: `ticker` would query the whole dataset), a `RawQueryBody` whatever it carries.
 * Tickers are checked either way.
 */
export function checkQueryBody(value: unknown, argument = 'body'): WireBody {
  if (value === undefined) return {};
  if (value instanceof RawQueryBody) {
    checkTickers(value.members.tickers, `${argument}.tickers`);
    return value.members;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalid(argument, "a query body object such as { tickers: ['nasdaq:aapl'] }", value);
  }
  checkKeys(
    value,
    BODY_KEYS,
    'members of the query body the spec shows; send others on purpose with rawBody({ … })',
    `${argument}.`,
  );
  checkTickers((value as { tickers?: unknown }).tickers, `${argument}.tickers`);
  return value as WireBody;
}
