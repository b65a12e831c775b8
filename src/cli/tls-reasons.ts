/**
 * One true line for the protocol mix-ups that OpenSSL and undici name in their own words
 * (`ssl3_get_record:wrong version number`, `UND_ERR_SOCKET: other side closed`): what happened, in terms
 * of the address the user gave. The code stays in the line, for a search. Certificates are not here: the
 * transport turns every certificate failure into a `ConnectionError` (transport/connect-errors.ts) that
 * names the issuer and how to pass a CA.
 */
import { NetworkError } from '../core/errors.js';

export interface ConnectionReason {
  /** What went wrong, e.g. "the address says https://, but the server did not answer in TLS". */
  readonly reason: string;
  /** What to do about it. */
  readonly hint: string;
}

/** The `code`s of an error and its causes, outermost first. */
function codesOf(err: unknown): string[] {
  const codes: string[] = [];
  for (
    let e = err as { code?: unknown; cause?: unknown } | undefined, i = 0;
    e && i < 8;
    e = e.cause as typeof e, i++
  ) {
    if (typeof e.code === 'string') codes.push(e.code);
  }
  return codes;
}

/** The true reason of a failed connection, when it is a TLS or protocol mix-up; undefined otherwise. */
export function connectionReason(err: unknown): ConnectionReason | undefined {
  if (!(err instanceof NetworkError)) return undefined;
  const codes = codesOf(err.cause);
  const text = err.message;
  const https = err.url.startsWith('https:');
  if (https && (codes.includes('ERR_SSL_WRONG_VERSION_NUMBER') || /wrong version number/.test(text))) {
    return {
      reason:
        'the address says https://, but the server did not answer in TLS (ERR_SSL_WRONG_VERSION_NUMBER)',
      hint: 'Is it a plain http:// address? Check --base-url or DQS_BASE_URL.',
    };
  }
  if (!https && (codes.includes('UND_ERR_SOCKET') || /other side closed/.test(text))) {
    return {
      reason: 'the server closed the connection without an answer (UND_ERR_SOCKET)',
      hint: 'If it speaks https, the address must start with https://. Check --base-url or DQS_BASE_URL.',
    };
  }
  return undefined;
}
