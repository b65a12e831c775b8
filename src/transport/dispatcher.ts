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

export function createDispatcher(settings: DispatcherSettings, env = process.env): Dispatcher {
  const tls = settings.ca ? { ca: trustedCas(settings.ca, env) } : undefined;
  const agent = {
    // Unset: undici opens a connection per request in flight, and the streams' concurrency bounds those.
    connections: settings.connections ?? null,
    keepAliveTimeout: 10_000,
    headersTimeout: settings.timeoutMs,
    bodyTimeout: settings.timeoutMs,
    ...(tls ? { connect: tls } : {}),
  };
  // Through a proxy: `requestTls` is the service's TLS inside the tunnel, `proxyTls` an https proxy's.
  const proxied = { ...agent, ...(tls ? { requestTls: tls, proxyTls: tls } : {}) };
  if (settings.proxy instanceof URL) return new ProxyAgent({ ...proxied, uri: settings.proxy.href });
  if (settings.proxy === undefined && hasProxyEnv(env)) {
    return new EnvHttpProxyAgent({ ...proxied, ...envProxies(env) });
  }
  return new Agent(agent);
}
