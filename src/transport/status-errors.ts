/**
 * A response with a status other than 2xx as a typed error: its status says which (401 an
 * AuthenticationError, 429 a RateLimitedError with the wait asked...), its small body the server's
 * `message`, and an HTML page where the service answers JSON says the base URL is not the service.
 */
import {
  AuthenticationError,
  BadRequestError,
  ForbiddenError,
  HttpError,
  type HttpErrorDetails,
  NotAcceptableError,
  NotFoundError,
  NotServiceError,
  RateLimitedError,
  ServerError,
} from '../core/errors.js';
import { readBounded } from './body.js';
import type { HttpResponse } from './exchange.js';
import { firstHeader } from './headers.js';
import { parseRetryAfter } from './retry-after.js';

/** Reads (at most 64 KiB of) an error body for its `message`, then builds the typed error. */
export async function errorFromResponse(res: HttpResponse): Promise<HttpError | NotServiceError> {
  let serverMessage: string | undefined;
  let bodyText = '';
  try {
    const buf = await readBounded(res, 64 * 1024);
    const text = buf.toString('utf8');
    bodyText = text;
    try {
      const parsed = JSON.parse(text) as { message?: unknown };
      if (typeof parsed?.message === 'string') serverMessage = parsed.message;
    } catch {
      if (text.trim()) serverMessage = text.trim().slice(0, 200);
    }
  } catch {
    // the status alone still says what happened
  } finally {
    res.done();
  }
  const details: HttpErrorDetails = {
    status: res.status,
    method: res.info.method,
    url: res.info.url,
    serverMessage,
  };
  const retryAfterMs = parseRetryAfter(firstHeader(res.headers, 'retry-after'));
  // The service answers errors in JSON; an HTML 404 (or 200, 400...) is a web site or a portal at the
  // base URL. A gateway's HTML 5xx or 429 page and a 401/403 are still what their status says.
  const statusSaysIt = res.status >= 500 || res.status === 429 || res.status === 401 || res.status === 403;
  if (!statusSaysIt && isHtml(firstHeader(res.headers, 'content-type'), bodyText)) {
    return new NotServiceError(res.info, `${res.status} with an HTML page`, res.status);
  }
  switch (true) {
    case res.status === 401:
      return new AuthenticationError(details);
    case res.status === 403:
      return new ForbiddenError(details);
    case res.status === 404:
      return new NotFoundError(details);
    case res.status === 406:
      return new NotAcceptableError(details);
    case res.status === 429:
      return new RateLimitedError({ ...details, retryAfterMs });
    case res.status >= 500:
      return new ServerError({ ...details, retryAfterMs });
    case res.status === 400 || res.status === 413 || res.status === 422:
      return new BadRequestError(details);
    case res.status >= 300 && res.status < 400: {
      // undici's request() follows no redirect, so the key never reaches the Location's host.
      const location = firstHeader(res.headers, 'location');
      return new HttpError(
        'DQS_HTTP',
        details,
        `redirect${location ? ` to ${redactUrl(location, res.info.url)}` : ''} not followed: the API key is only sent to baseUrl; point baseUrl at the final address`,
      );
    }
    default:
      return new HttpError('DQS_HTTP', details);
  }
}

/** Whether a body is an HTML page (by its type, or by how it starts when the type is missing or wrong). */
export function isHtml(contentType: string | undefined, text: string): boolean {
  if (contentType !== undefined && /^\s*text\/html\b/i.test(contentType)) return true;
  return /^\s*<(!doctype html|html|head|body)\b/i.test(text.slice(0, 200));
}

/** A Location for a message: resolved, credentials and query dropped, capped; never echoed raw. */
function redactUrl(location: string, base: string): string {
  try {
    const url = new URL(location, base);
    return `${url.protocol}//${url.host}${url.pathname}`.slice(0, 200);
  } catch {
    return '(an invalid URL)';
  }
}
