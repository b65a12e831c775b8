/**
 * Turning any failure into one line on stderr (what failed, why, what to do) and an exit code. The full
 * error, with its `cause` chain and stack, is printed only with `--debug`; the API key is masked in both.
 */
import { inspect } from 'node:util';
import { escapeControls } from '../core/control-chars.js';
import {
  ConnectionError,
  DqsError,
  HttpError,
  InvalidArgumentError,
  NetworkError,
  TimeoutError,
} from '../core/errors.js';
import { redactSecrets } from '../core/redact.js';
import type { ProxyChoice } from '../transport/proxy.js';
import { Interrupted, isSystemError, LocalError, systemReason, UsageError } from './errors.js';
import { ExitCode, type ExitCodeValue, exitCodeOf } from './exit-codes.js';
import { connectionReason } from './tls-reasons.js';

export interface ReportContext {
  readonly command: string | undefined;
  /** The service address, for hints about connecting. */
  readonly baseUrl?: string | undefined;
  /** Strings to mask wherever they appear (the API key). */
  readonly secrets: readonly string[];
  /** The options the command takes: advice names only those (no `--page-size` for `dqs datasets`). */
  readonly options?: readonly string[] | undefined;
  /** Since the command started, and the retries the client made: for a timeout, the whole wait. */
  readonly elapsedMs?: number | undefined;
  readonly retries?: ReadonlyMap<string, number> | undefined;
}

export interface Report {
  readonly exitCode: ExitCodeValue;
  /** One line, no trailing newline. */
  readonly line: string;
}

/**
 * `text` with every secret masked as `***`, in every spelling it may take after escaping (see
 * core/redact), plus any key the library has registered.
 */
export function redact(text: string, secrets: readonly string[]): string {
  return redactSecrets(text, secrets);
}

/**
 * The library names settings as its options (`` `baseUrl` ``, `` `ca` ``); the CLI's lines name its flags
 * instead, so that the advice is something a `dqs` user can type. The environment's variables are the
 * same for both and stay.
 */
const CLI_TERMS: readonly (readonly [option: string, flag: string])[] = [
  ['`baseUrl`', '--base-url'],
  ['`apiKey`', '--api-key'],
  ['`ca`', '--ca-file PATH'],
  ['`proxy`', '--proxy'],
  ['`allowInsecureHttp: true`', '--allow-insecure-http'],
  ['`timeoutMs`', '--timeout SECONDS'],
];

/** A message of the library (not the service's words) with its option names as the CLI's flags. */
export function inCliTerms(text: string): string {
  return CLI_TERMS.reduce((out, [option, flag]) => out.replaceAll(option, flag), text);
}

/** Where the proxy in use was set, as a `dqs` user set it: `--proxy`, or the variable (`HTTP_PROXY`…). */
export function proxyFlagOrVariable(proxy: ProxyChoice): string {
  return proxy.source === 'proxy' ? '--proxy' : proxy.source;
}

/** `--name`, when the failed command takes it. */
function option(ctx: ReportContext, name: string): string | undefined {
  return ctx.options?.includes(name) ? `--${name}` : undefined;
}

/** A 404 for the dataset list itself: the address is not the service's root (a wrong path in it). */
function isListing(err: DqsError): boolean {
  if (!(err instanceof HttpError)) return false;
  try {
    return /\/datasets\/?$/.test(new URL(err.url).pathname);
  } catch {
    return false;
  }
}

/** What to do about a library error, as its CLI line ends (`dqs doctor` reuses it). */
export function hintFor(err: DqsError, ctx: ReportContext): string {
  const help = ctx.command ? `dqs ${ctx.command} --help` : 'dqs --help';
  switch (err.code) {
    case 'DQS_AUTH':
      return 'Check --api-key or DQS_API_KEY.';
    case 'DQS_FORBIDDEN':
      return 'The key is valid but not allowed this; ask for access. `dqs doctor` checks the setup.';
    case 'DQS_DNS':
    case 'DQS_CONNECT':
      return 'Check --base-url or DQS_BASE_URL; `dqs doctor` checks the connection step by step.';
    case 'DQS_TLS_UNTRUSTED':
    case 'DQS_TLS_HOSTNAME':
    case 'DQS_PROXY':
    case 'DQS_PROXY_AUTH':
    case 'DQS_NOT_SERVICE':
      // The message names the fault and its fix; the doctor checks the rest of the way.
      return '`dqs doctor` checks the connection step by step.';
    case 'DQS_NOT_FOUND':
      if (isListing(err)) {
        return 'The address answers, but has no dataset list: check the path in --base-url or DQS_BASE_URL.';
      }
      return ctx.command === 'status'
        ? 'Check the dataset and query ids (queries of the embedded emulator live only as long as it runs).'
        : 'Check the dataset id: `dqs datasets` lists them.';
    case 'DQS_NETWORK':
      return `Is the service reachable${ctx.baseUrl ? ` at ${ctx.baseUrl}` : ''}? Check --base-url or DQS_BASE_URL.`;
    case 'DQS_TIMEOUT': {
      const smaller = option(ctx, 'page-size');
      return (
        'The service did not answer in time; try again later' +
        (option(ctx, 'timeout') ? ', or a longer --timeout SECONDS' : '') +
        (smaller ? `, or a smaller ${smaller}` : '') +
        '.'
      );
    }
    case 'DQS_SERVER':
      return 'The service failed; try again later.';
    case 'DQS_QUERY_FAILED':
      return 'The service could not run the query; try again, or narrow it.';
    case 'DQS_RATE_LIMITED':
      return `Too many requests; try again later${option(ctx, 'concurrency') ? ', or a lower --concurrency' : ''}.`;
    case 'DQS_FORMAT_NOT_OFFERED':
    case 'DQS_NOT_ACCEPTABLE':
      return option(ctx, 'format') ? 'Try --format auto.' : 'The service refused the format asked for.';
    case 'DQS_INVALID_ARGUMENT':
      return `See \`${help}\`.`;
    case 'DQS_BAD_REQUEST':
    case 'DQS_HTTP':
      return 'The service refused the request; rerun with --debug for details.';
    case 'DQS_PROTOCOL':
    case 'DQS_DECODE':
    case 'DQS_INVALID_VALUE':
    case 'DQS_RESPONSE_TOO_LARGE':
      return "The service's answer could not be read; rerun with --debug and report it.";
    default:
      return '';
  }
}

function whatFailed(err: DqsError, ctx: ReportContext): string {
  if (err instanceof TimeoutError && !err.overall && err.timeoutMs > 0) {
    // The error is the last try's; the user waited for all of them.
    const what = err.message.replace(/ timed out after \d+ ms$/, '');
    const tries = (ctx.retries?.get(what) ?? 0) + 1;
    const each =
      tries === 1
        ? `one try of ${seconds(err.timeoutMs)}`
        : `${tries} tries of ${seconds(err.timeoutMs)} each`;
    const all = ctx.elapsedMs !== undefined ? `waited ${seconds(ctx.elapsedMs)} in all, ` : '';
    return `no answer from the service (${what}): ${all}${each}`;
  }
  if (err instanceof HttpError) {
    // Our own wording instead of `err.message`, whose hint speaks of library options (`apiKey`).
    const server = err.serverMessage ? `: ${err.serverMessage}` : '';
    return `${err.status} from the service (${err.method} ${err.url})${server}`;
  }
  // Composed by the library alone (no words of the service in them): its option names become flags.
  if (err instanceof ConnectionError || err instanceof InvalidArgumentError) return inCliTerms(err.message);
  return err.message;
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

function sentence(text: string): string {
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

export function report(err: unknown, ctx: ReportContext): Report {
  const prefix = ctx.command ? `dqs ${ctx.command}: ` : 'dqs: ';
  let exitCode: ExitCodeValue;
  let line: string;
  if (err instanceof Interrupted) {
    exitCode = err.exitCode;
    line = `${prefix}${err.message}`;
  } else if (err instanceof UsageError) {
    exitCode = err.exitCode;
    line =
      `${prefix}${sentence(err.message)} See \`dqs ${err.command ?? ctx.command ?? ''} --help\`.`.replace(
        'dqs  --help',
        'dqs --help',
      );
  } else if (err instanceof LocalError) {
    exitCode = err.exitCode;
    line = `${prefix}${sentence(err.message)}`;
  } else if (err instanceof DqsError) {
    exitCode = exitCodeOf(err.code);
    // The library's ConnectionError already names the fault and its fix (the issuer, --ca-file, the
    // proxy): the CLI's own words are for the TLS and protocol mix-ups it leaves as plain NetworkErrors.
    const tls = err instanceof ConnectionError ? undefined : connectionReason(err);
    if (tls && err instanceof NetworkError) {
      line = `${prefix}${err.method} ${err.url} failed: ${sentence(tls.reason)} ${tls.hint}`;
    } else {
      const hint = hintFor(err, ctx);
      line = `${prefix}${sentence(whatFailed(err, ctx))}${hint ? ` ${hint}` : ''}`;
    }
  } else if (isSystemError(err)) {
    // A local fault that no command wrapped (e.g. while reading a file): exit 7 all the same.
    exitCode = ExitCode.local;
    // ENOENT's reason names the path already.
    const where = err.path && err.code !== 'ENOENT' ? `${err.path}: ` : '';
    line = `${prefix}${sentence(`${where}${systemReason(err)}`)}`;
  } else {
    exitCode = ExitCode.unexpected;
    const message = err instanceof Error ? err.message : String(err);
    line = `${prefix}unexpected error: ${sentence(message)} Rerun with --debug for details, and please report it.`;
  }
  // Masked first, then escaped: the server's text must not retitle the terminal or turn the line around.
  return { exitCode, line: escapeControls(redact(line.replace(/\s*\n\s*/g, ' '), ctx.secrets)) };
}

/** The whole error for `--debug`: stack, properties and causes, masked. */
export function debugText(err: unknown, secrets: readonly string[]): string {
  return redact(inspect(err, { depth: 6, breakLength: 110 }), secrets);
}
