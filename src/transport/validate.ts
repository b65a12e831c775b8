/**
 * Argument checks done before anything is sent, so a typo costs an exception with the argument's name
 * instead of a round trip and a vague 400. Messages follow "Expected …, got …".
 */
import { InvalidArgumentError, safeRepr } from '../core/errors.js';

const TICKER = /^[a-z0-9][a-z0-9_.&-]*:[a-z0-9][a-z0-9_.&-]*$/;
const DATASET_ID = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const QUERY_ID = /^[0-9a-f]{64}$/;

function describe(value: unknown): string {
  return `${safeRepr(value)} (${value === null ? 'null' : typeof value})`;
}

/** `<market>:<identifier>`, lower case; `private:` is a market like any other. */
export function checkTicker(value: unknown, argument = 'ticker'): string {
  if (typeof value !== 'string' || value.length > 128 || !TICKER.test(value)) {
    const hint =
      typeof value === 'string' && TICKER.test(value.toLowerCase()) ? ' (tickers are lower case)' : '';
    throw new InvalidArgumentError(
      argument,
      `Expected a ticker shaped \`<market>:<identifier>\` such as \`nasdaq:aapl\`, got ${describe(value)}${hint}`,
    );
  }
  return value;
}

export function checkTickers(value: unknown, argument = 'tickers'): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value))
    throw new InvalidArgumentError(argument, `Expected an array of tickers, got ${describe(value)}`);
  for (const [i, t] of value.entries()) checkTicker(t, `${argument}[${i}]`);
  return value as string[];
}

export function checkDatasetId(value: unknown, argument = 'datasetId'): string {
  if (typeof value !== 'string' || !DATASET_ID.test(value)) {
    throw new InvalidArgumentError(
      argument,
      `Expected a dataset id (letters, digits, '_', '.', '-'; up to 128) such as \`job_listings\`, got ${describe(value)}`,
    );
  }
  return value;
}

export function checkQueryId(value: unknown, argument = 'queryId'): string {
  if (typeof value !== 'string' || !QUERY_ID.test(value)) {
    throw new InvalidArgumentError(argument, `Expected 64 lower-case hex characters, got ${describe(value)}`);
  }
  return value;
}

export function isQueryId(value: unknown): value is string {
  return typeof value === 'string' && QUERY_ID.test(value);
}

/** An integer >= min (and <= max when given). */
export function checkInteger(
  value: unknown,
  argument: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    throw new InvalidArgumentError(argument, `Expected an integer ${range}, got ${describe(value)}`);
  }
  return value;
}

export function checkString(value: unknown, argument: string, maxLength = 1000): string {
  if (typeof value !== 'string' || value.length > maxLength) {
    throw new InvalidArgumentError(
      argument,
      `Expected a string of at most ${maxLength} characters, got ${describe(value)}`,
    );
  }
  return value;
}

/** A plain JSON object for the query body: members beyond `tickers` pass through untouched. */
export function checkQueryBody(value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidArgumentError(
      'body',
      `Expected a query body object such as { tickers: ['nasdaq:aapl'] }, got ${describe(value)}`,
    );
  }
  checkTickers((value as { tickers?: unknown }).tickers, 'body.tickers');
  return value as Record<string, unknown>;
}
