/**
 * Reads the certificate a server presents, even one this process does not trust, without turning
 * verification off: Node verifies the chain only after the handshake, and a socket that asked for an OCSP
 * response gets its `OCSPResponse` event before that, with the peer certificate readable. Used to say who
 * issued an untrusted certificate (a TLS-inspecting proxy names itself there) and by `dqs doctor`.
 */
import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { type ConnectionOptions, connect, type PeerCertificate } from 'node:tls';

export interface PeerCertificateInfo {
  /** Issuer as `O / CN`, e.g. `Zscaler Inc. / Zscaler Intermediate Root CA`. */
  readonly issuer: string;
  readonly subject: string;
  readonly validTo: string;
  /** The names the certificate is for (`DNS:…, IP Address:…`). */
  readonly altNames: string;
  /** Why the chain was not trusted (Node's code), or undefined when it was. */
  readonly untrusted: string | undefined;
}

/** Words that issuers of TLS-inspecting proxies and gateways put in their CA's name. */
const INSPECTORS =
  /zscaler|netskope|palo ?alto|fortinet|fortigate|blue ?coat|symantec web|forcepoint|websense|sophos|mcafee web|skyhigh|check ?point|cisco umbrella|ironport|barracuda|squid|mitmproxy|charles proxy|fiddler|\bproxy\b|inspection|\bssl ?decrypt/i;

/** Whether a certificate's issuer looks like a TLS-inspecting proxy rather than a public CA. */
export function looksLikeInspection(issuer: string): boolean {
  return INSPECTORS.test(issuer);
}

function name(part: PeerCertificate['issuer'] | undefined): string {
  if (!part) return '(unknown)';
  const o = part.O;
  const cn = part.CN;
  return [o, cn].filter((x) => typeof x === 'string' && x !== '').join(' / ') || '(unnamed)';
}

/** Opens a tunnel through an http proxy with CONNECT; resolves with the raw socket (rejects with `status` on a refusal). */
export function tunnel(proxy: URL, host: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: `${host}:${port}` };
    if (proxy.username) {
      const user = decodeURIComponent(proxy.username);
      const pass = decodeURIComponent(proxy.password);
      headers['proxy-authorization'] = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
    }
    const req = httpRequest({
      host: proxy.hostname,
      port: Number(proxy.port) || 80,
      method: 'CONNECT',
      path: `${host}:${port}`,
      headers,
      timeout: timeoutMs,
    });
    req.on('connect', (res, socket) => {
      if (res.statusCode === 200) resolve(socket);
      else {
        socket.destroy();
        reject(Object.assign(new Error(`Proxy response (${res.statusCode})`), { status: res.statusCode }));
      }
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

/**
 * The certificate `target` presents (through `proxy` when given), verified against `ca` (Node's store
 * when undefined). Rejects only when no handshake could be made at all.
 */
export async function peerCertificate(
  target: URL,
  options: { proxy?: URL | undefined; ca?: readonly string[] | undefined; timeoutMs?: number } = {},
): Promise<PeerCertificateInfo> {
  const host = target.hostname.replace(/^\[|\]$/g, '');
  const port = Number(target.port) || 443;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const socket = options.proxy ? await tunnel(options.proxy, host, port, timeoutMs) : undefined;
  return new Promise((resolve, reject) => {
    let seen: PeerCertificate | undefined;
    const tls = connect({
      host,
      port,
      ...(socket ? { socket } : {}),
      // An IP address is not a valid SNI name; Node warns about one.
      ...(/^[\d.]+$|:/.test(host) ? {} : { servername: host }),
      ...(options.ca ? { ca: [...options.ca] } : {}),
      // Typed in @types/node for tls.createSecureContext only, but tls.connect takes it too.
      requestOCSP: true,
    } as ConnectionOptions);
    const timer = setTimeout(
      () => tls.destroy(new Error(`no TLS handshake within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const info = (cert: PeerCertificate, untrusted: string | undefined): PeerCertificateInfo => ({
      issuer: name(cert.issuer),
      subject: name(cert.subject),
      validTo: cert.valid_to,
      altNames: cert.subjectaltname ?? '',
      untrusted,
    });
    tls.on('OCSPResponse', () => {
      seen = tls.getPeerCertificate();
    });
    tls.on('secureConnect', () => {
      clearTimeout(timer);
      const cert = tls.getPeerCertificate();
      tls.end();
      resolve(info(cert, tls.authorized ? undefined : String(tls.authorizationError)));
    });
    tls.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      tls.destroy();
      if (seen && Object.keys(seen).length > 0) resolve(info(seen, err.code ?? err.message));
      else reject(err);
    });
  });
}
