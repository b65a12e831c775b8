/**
 * One true line for the connection failures that OpenSSL and undici name in their own words
 * (`DEPTH_ZERO_SELF_SIGNED_CERT`, `ssl3_get_record:wrong version number`, `UND_ERR_SOCKET: other side
 * closed`): what happened, in terms of the address the user gave. The code stays in the line, for a
 * search.
 */
import { NetworkError } from '../core/errors.js';

export interface ConnectionReason {
  /** What went wrong, e.g. "the service's TLS certificate is self-signed ...". */
  readonly reason: string;
  /** What to do about it. */
  readonly hint: string;
}

const TRUST =
  'Node trusts the certificate authorities of the file in NODE_EXTRA_CA_CERTS as well as its own.';

const CERTIFICATE: Readonly<Record<string, string>> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: "the service's TLS certificate is self-signed, and not trusted here",
  SELF_SIGNED_CERT_IN_CHAIN:
    "the service's TLS certificate chain ends in a self-signed authority not trusted here (a company proxy's or a private one?)",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    "the service's TLS certificate is signed by an authority not trusted here (a company proxy's or a private one?)",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    "the service's TLS certificate is signed by an authority not trusted here (a company proxy's or a private one?)",
  CERT_HAS_EXPIRED: "the service's TLS certificate has expired",
  CERT_NOT_YET_VALID: "the service's TLS certificate is not valid yet (is this machine's clock right?)",
  ERR_TLS_CERT_ALTNAME_INVALID: "the service's TLS certificate is for another host name",
};

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
  for (const code of codes) {
    const reason = CERTIFICATE[code];
    if (reason) return { reason: `${reason} (${code})`, hint: TRUST };
  }
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
