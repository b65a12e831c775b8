/**
 * Exit codes of `dqs`: part of its contract (docs/cli.md has the table), so scripts can tell a wrong key
 * from a missing dataset from a flaky network without parsing messages.
 */
import type { DqsErrorCode } from '../core/errors.js';

export const ExitCode = {
  /** Done. */
  ok: 0,
  /** An unexpected failure: a bug. `--debug` shows the stack. */
  unexpected: 1,
  /** Wrong command line: unknown command or option, missing argument, invalid value. */
  usage: 2,
  /** The service refused the API key (401/403). */
  auth: 3,
  /** Unknown dataset or query (404). */
  notFound: 4,
  /** The service failed or could not be reached: 5xx, 429, timeouts, connection errors, other refusals. */
  service: 5,
  /** The service's answer could not be read: malformed page, undecodable body, a value of the wrong type. */
  protocol: 6,
  /** A local resource failed: the output or tickers file, the port for `dqs serve`. */
  local: 7,
  /** Stopped by Ctrl-C (SIGINT): 128 + 2, as shells report it. */
  interrupted: 130,
  /** Stopped by SIGTERM: 128 + 15. */
  terminated: 143,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

const BY_CODE: Readonly<Record<DqsErrorCode, ExitCodeValue>> = {
  DQS_INVALID_ARGUMENT: ExitCode.usage,
  DQS_AUTH: ExitCode.auth,
  DQS_FORBIDDEN: ExitCode.auth,
  DQS_NOT_FOUND: ExitCode.notFound,
  DQS_NOT_ACCEPTABLE: ExitCode.service,
  DQS_BAD_REQUEST: ExitCode.service,
  DQS_RATE_LIMITED: ExitCode.service,
  DQS_SERVER: ExitCode.service,
  DQS_HTTP: ExitCode.service,
  DQS_TIMEOUT: ExitCode.service,
  DQS_NETWORK: ExitCode.service,
  // Connection faults (docs/reliability.md): the service could not be reached, as DQS_NETWORK.
  DQS_DNS: ExitCode.service,
  DQS_CONNECT: ExitCode.service,
  DQS_TLS_UNTRUSTED: ExitCode.service,
  DQS_TLS_HOSTNAME: ExitCode.service,
  DQS_PROXY: ExitCode.service,
  DQS_PROXY_AUTH: ExitCode.service,
  DQS_FORMAT_NOT_OFFERED: ExitCode.service,
  DQS_ABORTED: ExitCode.interrupted,
  DQS_PROTOCOL: ExitCode.protocol,
  // An HTML page where the service sends JSON: an answer that cannot be read, at a wrong base URL.
  DQS_NOT_SERVICE: ExitCode.protocol,
  DQS_RESPONSE_TOO_LARGE: ExitCode.protocol,
  DQS_DECODE: ExitCode.protocol,
  DQS_INVALID_VALUE: ExitCode.protocol,
  DQS_TRUNCATED: ExitCode.protocol,
  DQS_SPLIT_SCHEMA: ExitCode.protocol,
  DQS_ROW_LIMIT: ExitCode.protocol,
  // No command loads an optional peer today; if one does, a missing piece is a local problem.
  DQS_MISSING_PACKAGE: ExitCode.local,
  DQS_QUERY_FAILED: ExitCode.service,
};

/** The exit code of a library error code; unknown codes are unexpected. */
export function exitCodeOf(code: string): ExitCodeValue {
  return Object.hasOwn(BY_CODE, code) ? BY_CODE[code as DqsErrorCode] : ExitCode.unexpected;
}
