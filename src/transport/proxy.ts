/**
 * Which proxy, if any, a request to the service goes through: the `proxy` option, else the environment
 * (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`, lower-case first, as undici's `EnvHttpProxyAgent` reads them).
 * The requests themselves go through undici's own agents (see dispatcher.ts); this module only says what
 * those agents will do, for error messages and `dqs doctor`, and never shows a proxy's credentials.
 */
import { InvalidArgumentError } from '../core/errors.js';
import { registerSecret } from '../core/redact.js';

/** The proxy a target is reached through, and where that setting came from. */
export interface ProxyChoice {
  /** With credentials, for the agent only. */
  readonly url: URL;
  /** `proxy` (the option or --proxy), or the name of the environment variable. */
  readonly source: string;
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'http:': 80, 'https:': 443 };

/** A proxy URL as given (`proxy` option, `--proxy`, an environment variable), checked. */
export function parseProxyUrl(value: string | URL, name: string): URL {
  let url: URL;
  // `proxy.corp:3128`, without a scheme, is how many set HTTPS_PROXY (curl takes it): an http proxy.
  const text = String(value);
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  try {
    url = new URL(withScheme);
  } catch {
    // The value may hold a password: it is not quoted back.
    throw new InvalidArgumentError(name, 'Expected a proxy URL such as http://proxy.example.com:3128');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InvalidArgumentError(name, `Expected an http: or https: proxy URL, got ${url.protocol}`);
  }
  // Credentials in a proxy URL are secrets like the key: masked wherever the library prints.
  if (url.password) {
    const password = decodeURIComponent(url.password);
    registerSecret(password);
    registerSecret(url.password);
    // As it travels: base64 of `user:password` in Proxy-Authorization.
    registerSecret(`${decodeURIComponent(url.username)}:${password}`);
  }
  return url;
}

/** A proxy URL for messages: scheme, host and port, never the credentials. */
export function displayProxy(url: URL): string {
  return `${url.protocol}//${url.host}`;
}

/** The environment variable that holds a proxy for `protocol`, lower-case first (undici's order). */
function envProxy(protocol: string, env: NodeJS.ProcessEnv): { name: string; value: string } | undefined {
  const names =
    protocol === 'https:'
      ? ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY']
      : ['http_proxy', 'HTTP_PROXY'];
  for (const name of names) {
    const value = env[name];
    if (value) return { name, value };
  }
  return undefined;
}

/** `NO_PROXY` (lower-case first): the raw value, `''` when unset. */
export function noProxyValue(env: NodeJS.ProcessEnv): string {
  return env.no_proxy ?? env.NO_PROXY ?? '';
}

/**
 * Whether `NO_PROXY` exempts the target, by undici's rules: `*` exempts all; an entry matches its host
 * and the host's subdomains (a leading `.` or `*.` is dropped), and only its port when it names one.
 */
export function bypassesProxy(target: URL, noProxy: string): boolean {
  const entries = noProxy.split(/[,\s]/).filter(Boolean);
  if (entries.length === 0) return false;
  if (noProxy.trim() === '*') return true;
  const hostname = target.host.replace(/:\d*$/, '').toLowerCase();
  const port = Number.parseInt(target.port, 10) || DEFAULT_PORTS[target.protocol] || 0;
  return entries.some((entry) => {
    const parsed = entry.match(/^(.+):(\d+)$/);
    const host = (parsed ? parsed[1]! : entry).replace(/^\*?\./, '').toLowerCase();
    const entryPort = parsed ? Number.parseInt(parsed[2]!, 10) : 0;
    if (entryPort && entryPort !== port) return false;
    return hostname === host || hostname.endsWith(`.${host}`);
  });
}

/** Whether any proxy variable is set: only then is undici's `EnvHttpProxyAgent` needed at all. */
export function hasProxyEnv(env: NodeJS.ProcessEnv): boolean {
  return envProxy('https:', env) !== undefined;
}

/**
 * The proxies of the environment, checked and with a scheme, for `EnvHttpProxyAgent`'s `httpProxy` and
 * `httpsProxy` (it would take a scheme-less `proxy.corp:3128` as a URL of scheme `proxy.corp:`). It
 * still reads `NO_PROXY` itself.
 */
export function envProxies(env: NodeJS.ProcessEnv): { httpProxy?: string; httpsProxy?: string } {
  const http = envProxy('http:', env);
  const https = envProxy('https:', env);
  return {
    ...(http ? { httpProxy: parseProxyUrl(http.value, http.name).href } : {}),
    ...(https ? { httpsProxy: parseProxyUrl(https.value, https.name).href } : {}),
  };
}

/**
 * The proxy for requests to `target`: `option` (a URL, or `false` for none) beats the environment; an
 * environment proxy is skipped when `NO_PROXY` exempts the target. Undefined: a direct connection.
 */
export function proxyFor(
  target: URL,
  option: URL | false | undefined,
  env: NodeJS.ProcessEnv,
): ProxyChoice | undefined {
  if (option === false) return undefined;
  if (option !== undefined) return { url: option, source: 'proxy' };
  const found = envProxy(target.protocol, env);
  if (found === undefined || bypassesProxy(target, noProxyValue(env))) return undefined;
  return { url: parseProxyUrl(found.value, found.name), source: found.name };
}
