/**
 * The undici dispatcher the client sends through. Proxies the Node way, with undici's own agents: the
 * `proxy` option through a `ProxyAgent`, else `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` through an
 * `EnvHttpProxyAgent`; with no proxy anywhere, a plain `Agent` (nothing to decide per request).
 */
import { Agent, type Dispatcher, EnvHttpProxyAgent, ProxyAgent } from 'undici';
import { envProxies, hasProxyEnv } from './proxy.js';
import { trustedCas } from './trust.js';

export interface DispatcherSettings {
  readonly connections: number | undefined;
  readonly timeoutMs: number;
  /** A URL: always this proxy; `false`: never a proxy; undefined: the environment decides. */
  readonly proxy: URL | false | undefined;
  /** Certificates to trust besides Node's (the `ca` option). */
  readonly ca: readonly string[] | undefined;
}

/**
 * How long an idle connection is kept for the next request: a page request within it reuses one (no
 * handshake), and the link model tells the waits of the two apart by it.
 */
export const KEEP_ALIVE_MS = 10_000;

/** undici's own connect timeout, kept as the longest: a host silent for 10 s is not coming. */
const MAX_CONNECT_MS = 10_000;

export function createDispatcher(settings: DispatcherSettings, env = process.env): Dispatcher {
  // A request timeout shorter than 10 s bounds connecting too: the connect then fails in time as what it
  // is (a host that does not answer, DQS_CONNECT), not as a DQS_TIMEOUT 10 s late (undici holds off an
  // abort until a connect attempt ends).
  const connect = {
    ...(settings.ca ? { ca: trustedCas(settings.ca, env) } : {}),
    timeout: Math.min(MAX_CONNECT_MS, settings.timeoutMs),
  };
  const agent = {
    // Unset: undici opens a connection per request in flight, and the streams' concurrency bounds those.
    connections: settings.connections ?? null,
    keepAliveTimeout: KEEP_ALIVE_MS,
    headersTimeout: settings.timeoutMs,
    bodyTimeout: settings.timeoutMs,
    connect,
  };
  // Through a proxy: `requestTls` is the service's TLS inside the tunnel, `proxyTls` an https proxy's
  // (and the connection to the proxy: its timeout is there).
  const proxied = { ...agent, requestTls: connect, proxyTls: connect };
  if (settings.proxy instanceof URL) return new ProxyAgent({ ...proxied, uri: settings.proxy.href });
  if (settings.proxy === undefined && hasProxyEnv(env)) {
    return new EnvHttpProxyAgent({ ...proxied, ...envProxies(env) });
  }
  return new Agent(agent);
}
