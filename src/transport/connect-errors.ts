/**
 * Connection faults in words a person can act on: which host did not resolve, who refused or did not
 * answer (the service or the proxy), why a certificate is not trusted and how to trust it, what a proxy
 * wants. Each is a `ConnectionError` with its own code (docs/reliability.md has the table).
 */
import { ConnectionError, type ConnectionErrorCode, type RequestInfo } from '../core/errors.js';
import { looksLikeInspection, type PeerCertificateInfo } from './peer-certificate.js';
import { displayProxy, type ProxyChoice } from './proxy.js';

type Failure = NodeJS.ErrnoException & {
  hostname?: string;
  address?: string;
  port?: number;
  host?: string;
  cert?: { subjectaltname?: string };
};

/** Node's codes of a certificate chain that does not lead to a trusted root (or is out of date). */
const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
]);

const DNS = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL', 'EAI_NODATA']);
const NO_ANSWER = new Set(['ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ENETUNREACH', 'EHOSTUNREACH']);

/** `Connect Timeout Error (attempted address: 127.0.0.1:8443, timeout: 500ms)`: the port and the time. */
const CONNECT_TIMEOUT = /attempted address(?:es)?: .*?:(\d+)\b.*timeout: (\d+)ms/;

/**
 * Settings are named as the library's options (`ca`) and the environment's variables: a front end with
 * other names for them (the CLI's `--ca-file PATH`) renames the options in the messages it shows.
 */
const CA_HOW = 'pass the CA that issued it: `ca`, or NODE_EXTRA_CA_CERTS=PATH';

/** Where the proxy in use was set: the `proxy` option, or the variable it came from (`HTTP_PROXY`…). */
export function proxySetting(proxy: ProxyChoice): string {
  return proxy.source === 'proxy' ? '`proxy`' : proxy.source;
}

/** The variable a proxy for `target` is set in: `HTTPS_PROXY` for https, `HTTP_PROXY` for http. */
export function proxyVariable(target: URL): string {
  return target.protocol === 'https:' ? 'HTTPS_PROXY' : 'HTTP_PROXY';
}

/** The failure and its causes, outermost first (undici wraps a tunnel's TLS failure in its own error). */
function chain(err: unknown): Failure[] {
  const out: Failure[] = [];
  for (let e = err as Failure | undefined, i = 0; e && i < 5; e = e.cause as Failure | undefined, i++) {
    out.push(e);
  }
  return out;
}

/** Whether a failure is a certificate not trusted, the case that gets its issuer looked up. */
export function isUntrustedCertificate(err: unknown): boolean {
  return chain(err).some((e) => e.code !== undefined && UNTRUSTED.has(e.code));
}

/**
 * The `ConnectionError` for a failure to connect to `info.url` (through `proxy` when one is used), or
 * undefined for a failure that is not one of these (it stays a plain `NetworkError`). `peer` is the
 * certificate the server presented, when it could be read, for an untrusted one.
 */
export function connectionError(
  err: unknown,
  info: RequestInfo,
  proxy: ProxyChoice | undefined,
  peer?: PeerCertificateInfo,
): ConnectionError | undefined {
  const target = new URL(info.url);
  const targetPort = Number(target.port) || (target.protocol === 'https:' ? 443 : 80);
  const service = `${target.hostname}:${targetPort}`;
  const via = proxy
    ? `through the proxy ${displayProxy(proxy.url)} (from ${proxySetting(proxy)})`
    : 'directly, no proxy';
  const proxyHost = proxy?.url.hostname.replace(/^\[|\]$/g, '');
  const proxyPort = proxy ? Number(proxy.url.port) || (proxy.url.protocol === 'https:' ? 443 : 80) : 0;
  const make = (
    code: ConnectionErrorCode,
    reason: string,
    host: string,
    transient: boolean,
    cause: unknown,
  ) =>
    new ConnectionError(code, info, reason, {
      host,
      proxy: proxy ? displayProxy(proxy.url) : undefined,
      transient,
      cause,
    });

  for (const e of chain(err)) {
    const code = e.code ?? '';
    const status = /Proxy response \((\d{3})\)/.exec(String(e.message))?.[1];
    if (proxy && status !== undefined) {
      const where = displayProxy(proxy.url);
      if (status === '407') {
        const fix = proxy.url.username
          ? `it refused the user and password of the proxy URL (${proxySetting(proxy)}): check them`
          : `put them in the proxy URL, http://USER:PASSWORD@host:port (${proxySetting(proxy)})`;
        return make(
          'DQS_PROXY_AUTH',
          `the proxy ${where} wants credentials (407): ${fix}`,
          where,
          false,
          err,
        );
      }
      const transient = ['502', '503', '504'].includes(status);
      return make(
        'DQS_PROXY',
        `the proxy ${where} would not connect to ${service} (${status}): it may not reach the service, or not allow it; check the address, or ask whoever runs the proxy`,
        where,
        transient,
        err,
      );
    }
    if (DNS.has(code)) {
      const host = e.hostname ?? target.hostname;
      const isProxy = proxy !== undefined && host === proxyHost;
      const what = isProxy ? `the proxy's host name ${host}` : `the host name ${host}`;
      const fix = isProxy
        ? `check the proxy URL (${proxySetting(proxy)})`
        : 'check the address (`baseUrl` or DQS_BASE_URL) and your DNS or VPN';
      return make('DQS_DNS', `${what} does not resolve (${code}): ${fix}`, host, code === 'EAI_AGAIN', err);
    }
    if (code === 'ECONNREFUSED' || NO_ANSWER.has(code)) {
      const refused = code === 'ECONNREFUSED';
      // undici's connect timeout names the address and the time only in its message.
      const timedOut = CONNECT_TIMEOUT.exec(String(e.message));
      const port = e.port ?? (timedOut ? Number(timedOut[1]) : undefined);
      const toProxy =
        proxy !== undefined && (port === undefined ? refused : port === proxyPort && port !== targetPort);
      const what = refused
        ? 'refused the connection'
        : `did not answer${timedOut ? ` within ${timedOut[2]} ms` : ''} (${code})`;
      if (toProxy) {
        const where = displayProxy(proxy.url);
        return make(
          'DQS_PROXY',
          `the proxy ${where} (from ${proxySetting(proxy)}) ${what}: is it running and is the address right? (NO_PROXY bypasses it)`,
          where,
          true,
          err,
        );
      }
      return make(
        'DQS_CONNECT',
        `${service} ${what}, connecting ${via}: is the service running at this address and port${refused || proxy ? '' : `, and does a firewall need a proxy (${proxyVariable(target)})`}?`,
        service,
        true,
        err,
      );
    }
    if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
      const names = e.cert?.subjectaltname ?? peer?.altNames;
      return make(
        'DQS_TLS_HOSTNAME',
        `the certificate of ${service} is not for ${target.hostname}${names ? ` but for ${names}` : ''}: use an address the certificate names in the base URL`,
        service,
        false,
        err,
      );
    }
    if (UNTRUSTED.has(code)) {
      const issuer = peer ? ` (issued by ${peer.issuer})` : '';
      const inspected =
        peer && looksLikeInspection(peer.issuer)
          ? '; the issuer looks like a TLS-inspecting proxy: get its root CA from your IT department and '
          : proxy
            ? `; connecting ${via}, which may be inspecting TLS: `
            : ': if a proxy or gateway inspects TLS on your network, ';
      const reason =
        code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID'
          ? `the certificate of ${service}${issuer} is out of date (${code})`
          : `the certificate of ${service}${issuer} is not trusted (${code})`;
      return make('DQS_TLS_UNTRUSTED', `${reason}${inspected}${CA_HOW}`, service, false, err);
    }
  }
  return undefined;
}
