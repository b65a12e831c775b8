/**
 * Retries for idempotent requests (GET, HEAD, and the POST that creates a query: its id derives from the
 * body, so repeating it cannot create a second query). Exponential backoff with full jitter, `Retry-After`
 * honoured, bounded attempts and an overall deadline. Each retry is reported before its pause.
 *
 * A request the service *shed* (429, or 503 with `Retry-After`: it declined the work and said when to
 * come back) is not a failed attempt: it is bounded by the deadline, not by `retries`. A loaded service
 * sheds the same page many times in a row while its queue drains (the emulator under a 65 s load shed one
 * page of a 500k-row read five times, and the read failed with four retries); counting those as failures
 * gives up on a service that is working as designed.
 */

import { sleep } from '../core/abortable.js';
import { ConnectionError, DqsError, RateLimitedError, ServerError, TimeoutError } from '../core/errors.js';
import { checkKeys, checkObject, optionalInteger, optionKeys } from '../core/validate.js';

export interface RetryOptions {
  /**
   * Further attempts after a failure; 0 disables retries. Answers that shed the request (429, or 503 with
   * `Retry-After`) are retried within `deadlineMs` without counting here. @default 4
   */
  readonly retries?: number;
  /** Base of the exponential backoff, in ms. @default 250 */
  readonly minDelayMs?: number;
  /** Longest pause between attempts, in ms (a longer `Retry-After` is still honoured, up to the deadline). @default 15_000 */
  readonly maxDelayMs?: number;
  /** Give up when the next attempt would start later than this many ms after the first. @default 120_000 */
  readonly deadlineMs?: number;
}

export interface NormalizedRetryOptions {
  readonly retries: number;
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
  readonly deadlineMs: number;
}

/** What a `'retry'` event carries. */
export interface RetryEvent {
  /** The attempt that failed, 1-based. */
  readonly attempt: number;
  /** The pause before the next attempt, in ms. */
  readonly delayMs: number;
  readonly error: DqsError;
  /** What was being done, e.g. `GET https://…/query/<id>?start=1&limit=10000`. */
  readonly what: string;
}

function nonNegativeInt(value: unknown, name: string, fallback: number): number {
  return optionalInteger(value, `retry.${name}`, 0, fallback);
}

const RETRY_KEYS = optionKeys<RetryOptions>({
  retries: true,
  minDelayMs: true,
  maxDelayMs: true,
  deadlineMs: true,
});

export function normalizeRetryOptions(options: RetryOptions | false | undefined): NormalizedRetryOptions {
  if (options === false) return { retries: 0, minDelayMs: 0, maxDelayMs: 0, deadlineMs: 0 };
  const o = options ?? {};
  checkKeys(
    checkObject(o, 'retry', 'false or { retries, minDelayMs, maxDelayMs, deadlineMs }'),
    RETRY_KEYS,
    '`retry` options',
    'retry.',
  );
  return {
    retries: nonNegativeInt(o.retries, 'retries', 4),
    minDelayMs: nonNegativeInt(o.minDelayMs, 'minDelayMs', 250),
    maxDelayMs: nonNegativeInt(o.maxDelayMs, 'maxDelayMs', 15_000),
    deadlineMs: nonNegativeInt(o.deadlineMs, 'deadlineMs', 120_000),
  };
}

/** Transient failures: worth another attempt. Auth, 4xx, decode and protocol errors are not. */
export function isRetryable(err: unknown): err is DqsError {
  if (!(err instanceof DqsError)) return false;
  if (err instanceof RateLimitedError) return true;
  if (err instanceof ServerError) return [500, 502, 503, 504].includes(err.status);
  // A per-request timeout is transient; an overall deadline the caller set is not ours to extend.
  if (err instanceof TimeoutError) return err.timeoutMs >= 0 && !err.overall;
  // A refused connection, a proxy's 502, a DNS server that timed out; never a certificate or a 407.
  if (err instanceof ConnectionError) return err.transient;
  return err.code === 'DQS_NETWORK';
}

/**
 * The service declined the request for now and said when to ask again: a 429, or a 503 with
 * `Retry-After` (load shedding). A 503 without it is an outage of unknown length, retried as a failure.
 */
export function isShed(err: DqsError): boolean {
  if (err instanceof RateLimitedError) return true;
  return (
    err instanceof ServerError &&
    err.status === 503 &&
    (err as { retryAfterMs?: number }).retryAfterMs !== undefined
  );
}

/**
 * Refusals answered while the client keeps to a rate limit (set, or learned from this very 429): every
 * retry then waits its turn at the client's limiter, which spaces them within the service's window, so a
 * retry is not also spread over a quarter of the `Retry-After` (15 s under 20 requests a minute, after a
 * 58 s wait: the refused pages of one overshoot came back over 12 s, one by one).
 */
export const pacedRefusals = new WeakSet<DqsError>();

/**
 * Without `Retry-After`: full jitter, uniform in [0, min(max, base * 2^(attempt-1))].
 *
 * With it, the server said when to come back, and that is the wait: the backoff does not compound on top
 * of it (it did: after a few refusals of one page a `Retry-After: 1` became waits of 4, 8 and 14 s, long
 * after the service had recovered). Each wait is spread by up to a quarter of the `Retry-After` (at least
 * `minDelayMs`), so refused requests do not all come back in one burst; a request refused again and
 * again spreads wider, up to twice the `Retry-After` from its fourth attempt. Not under a client-side rate
 * limit (`pacedRefusals`): there the limiter spaces the retries.
 */
export function backoffDelay(
  policy: NormalizedRetryOptions,
  attempt: number,
  err: DqsError,
  random = Math.random,
): number {
  const retryAfter = (err as { retryAfterMs?: number }).retryAfterMs;
  if (retryAfter !== undefined) {
    const spread = pacedRefusals.has(err)
      ? policy.minDelayMs
      : Math.max(policy.minDelayMs, retryAfter * Math.min(1, attempt / 4));
    return Math.round(retryAfter + random() * spread);
  }
  const cap = Math.min(policy.maxDelayMs, policy.minDelayMs * 2 ** (attempt - 1));
  return Math.round(random() * cap);
}

export async function withRetry<T>(
  run: (attempt: number) => Promise<T>,
  policy: NormalizedRetryOptions,
  what: string,
  signal: AbortSignal | undefined,
  onRetry: ((event: RetryEvent) => void) | undefined,
): Promise<T> {
  const startedAt = Date.now();
  // Attempts that failed (shed ones excepted: see the header). `attempt` still counts every one, so the
  // backoff keeps growing however the service answers.
  let failures = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      return await run(attempt);
    } catch (err) {
      if (policy.retries === 0 || !isRetryable(err) || signal?.aborted) throw err;
      if (!isShed(err) && ++failures > policy.retries) throw err;
      const delayMs = backoffDelay(policy, attempt, err);
      if (Date.now() - startedAt + delayMs > policy.deadlineMs) throw err;
      onRetry?.({ attempt, delayMs, error: err, what });
      await sleep(delayMs, signal);
    }
  }
}
