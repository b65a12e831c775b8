/**
 * A failure with no status to go by (undici refused, a timeout, a socket that broke, an abort) as one of
 * our typed errors. Connection faults a person can act on get their own words in connect-errors.ts.
 */
import {
  DqsError,
  InvalidArgumentError,
  NetworkError,
  type RequestInfo,
  TimeoutError,
} from '../core/errors.js';

/** Maps undici/socket/abort failures onto our error classes. */
export function translateError(err: unknown, info: RequestInfo, signal: AbortSignal): DqsError {
  if (err instanceof DqsError) return err;
  if (signal.aborted && signal.reason instanceof DqsError) return signal.reason;
  const code = (err as { code?: string } | null)?.code;
  const message = (err as Error | null)?.message ?? String(err);
  // undici refused to send (e.g. a header value it cannot encode): no retry can change that.
  if (code === 'UND_ERR_INVALID_ARG') {
    return new InvalidArgumentError('request', `undici refused ${info.method} ${info.url}: ${message}`);
  }
  if (
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT'
  ) {
    return new TimeoutError(`${info.method} ${info.url}`, 0, { cause: err });
  }
  return new NetworkError(info, code ? `${code}: ${message}` : message, { cause: err });
}
