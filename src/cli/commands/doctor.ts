/**
 * `dqs doctor`: checks the way to the service one step at a time (configuration, DNS, TCP, the proxy,
 * TLS, an authenticated request, the clock) and prints one line per check, with a fix for each failure.
 * What support needs from a user behind a company network, in one command; `--json` for a ticket. The key
 * is never part of the output: only where it came from.
 */
import { lookup } from 'node:dns/promises';
import { connect as tcpConnect } from 'node:net';
import { defaultCacheDir } from '../../cache/options.js';
import { DqsError } from '../../core/errors.js';
import { proxyVariable } from '../../transport/connect-errors.js';
import { firstHeader } from '../../transport/headers.js';
import { displayProxy, noProxyValue, parseProxyUrl, proxyFor } from '../../transport/proxy.js';
import { flag, JSON_OPTION, positionals, str } from '../args.js';
import type { Command, CommandContext } from '../command.js';
import { readCaFile } from '../connection.js';
import { ExitCode } from '../exit-codes.js';
import { printJson } from '../print.js';
import { hintFor, inCliTerms, proxyFlagOrVariable } from '../report.js';

type Status = 'ok' | 'fail' | 'skip' | 'info';

interface Check {
  readonly name: string;
  readonly status: Status;
  readonly ms: number;
  readonly detail: string;
  readonly fix?: string | undefined;
}

const TIMEOUT_MS = 10_000;

/** Runs one check, timing it; a thrown error is its failure, `fix` turns it into advice. */
async function timed(
  name: string,
  run: () => Promise<string>,
  fix: (err: unknown) => string,
): Promise<Check> {
  const start = performance.now();
  try {
    const detail = await run();
    return { name, status: 'ok', ms: Math.round(performance.now() - start), detail };
  } catch (err) {
    const message = inCliTerms(err instanceof Error ? err.message : String(err));
    return {
      name,
      status: 'fail',
      ms: Math.round(performance.now() - start),
      detail: message,
      fix: fix(err),
    };
  }
}

function tcp(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host, port, timeout: TIMEOUT_MS });
    socket.once('connect', () => {
      socket.destroy();
      resolve(`connected to ${host}:${port}`);
    });
    socket.once('timeout', () =>
      socket.destroy(new Error(`no answer from ${host}:${port} in ${TIMEOUT_MS} ms`)),
    );
    socket.once('error', reject);
  });
}

function keySource(ctx: CommandContext, values: Parameters<typeof str>[0]): string {
  if (str(values, 'api-key') !== undefined) return '--api-key';
  if (str(values, 'api-key-file') !== undefined) return `--api-key-file ${str(values, 'api-key-file')}`;
  if (ctx.io.env.DQS_API_KEY) return 'DQS_API_KEY';
  return 'none';
}

export const doctorCommand: Command = {
  name: 'doctor',
  summary: 'Check the way to the service step by step, with a fix for each failure.',
  usage: 'dqs doctor [options]',
  description:
    'Checks, in order and timed: the configuration found (base URL, key source, proxy variables, CA files,\n' +
    'cache directory), DNS, TCP, the proxy, TLS (issuer, expiry), an authenticated GET /datasets/ and the\n' +
    "clock skew from the service's Date header. One line per check; a failed one says how to fix it.\n" +
    'Exit code 0 when all pass, 5 otherwise. --json prints the same for a support ticket (no key in it).',
  options: { ...JSON_OPTION },
  connects: true,
  examples: ['dqs doctor', 'HTTPS_PROXY=http://proxy.corp:3128 dqs doctor --ca-file corp-root.pem --json'],
  async run(args, ctx) {
    positionals('doctor', args, []);
    const v = args.values;
    const env = ctx.io.env;
    const checks: Check[] = [];
    const baseFlag = str(v, 'base-url');
    const caFile = str(v, 'ca-file');
    const proxyFlag = str(v, 'proxy');
    const { client, baseUrl: base, embedded } = await ctx.connect();
    const target = new URL(base);
    const proxy = embedded
      ? undefined
      : proxyFor(target, proxyFlag ? parseProxyUrl(proxyFlag, 'proxy') : undefined, env);
    const ca = caFile ? await readCaFile(caFile) : undefined;
    const port = Number(target.port) || (target.protocol === 'https:' ? 443 : 80);
    const host = target.hostname.replace(/^\[|\]$/g, '');

    const proxyVars = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy']
      .filter((n) => env[n])
      .map((n) => `${n}=${displayProxy(parseProxyUrl(env[n]!, n))}`);
    const config = [
      `base URL ${base} (${embedded ? 'embedded emulator: no --base-url or DQS_BASE_URL' : baseFlag ? '--base-url' : 'DQS_BASE_URL'})`,
      `key from ${embedded ? 'the embedded emulator' : keySource(ctx, v)}`,
      `proxy ${proxy ? `${displayProxy(proxy.url)} (from ${proxyFlagOrVariable(proxy)})` : 'none'}`,
      ...(proxyVars.length ? [proxyVars.join(' ')] : []),
      ...(noProxyValue(env) ? [`NO_PROXY=${noProxyValue(env)}`] : []),
      `CA ${[caFile && `--ca-file ${caFile}`, env.NODE_EXTRA_CA_CERTS && `NODE_EXTRA_CA_CERTS=${env.NODE_EXTRA_CA_CERTS}`].filter(Boolean).join(', ') || "Node's roots only"}`,
      `cache ${defaultCacheDir(env) ?? 'none (no HOME)'}`,
    ];
    const noKey = !embedded && keySource(ctx, v) === 'none';
    checks.push({
      name: 'config',
      status: noKey ? 'fail' : 'info',
      ms: 0,
      detail: config.join('; '),
      ...(noKey ? { fix: 'set DQS_API_KEY, or pass --api-key-file FILE' } : {}),
    });

    // Through a proxy the service's name is resolved and connected to by the proxy: check the proxy's.
    const hop = proxy ? { host: proxy.url.hostname, port: Number(proxy.url.port) || 80 } : { host, port };
    const dns = await timed(
      'dns',
      async () => {
        const found = await lookup(hop.host, { all: true });
        return `${hop.host} → ${found.map((a) => a.address).join(', ')}`;
      },
      () => `${hop.host} does not resolve: check the ${proxy ? 'proxy URL' : 'base URL'}, your DNS or VPN`,
    );
    checks.push(dns);
    const tcpCheck =
      dns.status === 'ok'
        ? await timed(
            'tcp',
            () => tcp(hop.host, hop.port),
            () =>
              proxy
                ? `the proxy ${displayProxy(proxy.url)} (from ${proxyFlagOrVariable(proxy)}) is not reachable: is it running, is the URL right? (NO_PROXY bypasses it)`
                : `nothing answers at ${hop.host}:${hop.port}: is the service running there? A firewall may require a proxy (${proxyVariable(target)}, or --proxy URL)`,
          )
        : skipped('tcp');
    checks.push(tcpCheck);

    if (proxy) {
      const { tunnel } = await import('../../transport/peer-certificate.js');
      checks.push(
        tcpCheck.status === 'ok'
          ? await timed(
              'proxy',
              async () => {
                const socket = await tunnel(proxy.url, host, port, TIMEOUT_MS);
                socket.destroy();
                return `${displayProxy(proxy.url)} opened a tunnel to ${host}:${port}`;
              },
              (err) =>
                (err as { status?: number }).status !== 407
                  ? `the proxy would not connect to ${host}:${port}: ask whoever runs it, or check NO_PROXY`
                  : proxy.url.username
                    ? `the proxy refused the user and password in its URL (407, wrong credentials): check them in ${proxyFlagOrVariable(proxy)}`
                    : `the proxy wants credentials (407): http://USER:PASSWORD@host:port in ${proxyFlagOrVariable(proxy)}`,
            )
          : skipped('proxy'),
      );
    }

    const reachable = checks.every((c) => c.status !== 'fail' || c.name === 'config');
    if (target.protocol === 'https:') {
      const { looksLikeInspection, peerCertificate } = await import('../../transport/peer-certificate.js');
      const { pemCertificates, trustedCas } = await import('../../transport/trust.js');
      const cas = ca ? trustedCas(pemCertificates(ca), env) : undefined;
      checks.push(
        reachable
          ? await timed(
              'tls',
              async () => {
                const cert = await peerCertificate(target, {
                  proxy: proxy?.url,
                  ca: cas,
                  timeoutMs: TIMEOUT_MS,
                });
                const about = `issuer ${cert.issuer}, expires ${cert.validTo}`;
                if (cert.untrusted === undefined) return about;
                const inspecting = looksLikeInspection(cert.issuer)
                  ? ' (the issuer looks like a TLS-inspecting proxy)'
                  : '';
                throw Object.assign(new Error(`${about}: ${cert.untrusted}${inspecting}`), {
                  code: cert.untrusted,
                });
              },
              (err) =>
                (err as { code?: string }).code === 'ERR_TLS_CERT_ALTNAME_INVALID'
                  ? 'the certificate is for another name: use an address it names in the base URL'
                  : 'trust the CA that issued it: --ca-file PATH or NODE_EXTRA_CA_CERTS=PATH (ask IT for the company root CA)',
            )
          : skipped('tls'),
      );
    }

    const ready = checks.every((c) => c.status !== 'fail' || c.name === 'config');
    let serverDate: string | undefined;
    let apiVersion: string | undefined;
    checks.push(
      ready
        ? await timed(
            'request',
            async () => {
              const datasets = await client.listDatasets({ signal: ctx.signal });
              // The version and the clock: the headers of one more HEAD, the same way (no key needed).
              const { request } = await import('undici');
              const { createDispatcher } = await import('../../transport/dispatcher.js');
              const { pemCertificates } = await import('../../transport/trust.js');
              const dispatcher = createDispatcher({
                connections: 1,
                timeoutMs: TIMEOUT_MS,
                proxy: proxy?.url ?? false,
                ca: ca ? pemCertificates(ca) : undefined,
              });
              try {
                const res = await request(new URL('datasets/', base), {
                  method: 'HEAD',
                  headers: { 'x-api-version': '20151130' },
                  dispatcher,
                });
                await res.body.dump();
                serverDate = firstHeader(res.headers, 'date');
                apiVersion = firstHeader(res.headers, 'x-api-version');
              } catch {
                // the request above answered: version and clock are extras
              } finally {
                await dispatcher.close();
              }
              return `GET /datasets/ answered ${datasets.length} datasets`;
            },
            (err) => (err instanceof DqsError ? fixOf(err, base) : 'rerun with --debug'),
          )
        : skipped('request'),
    );
    if (ready && checks.at(-1)?.status === 'ok') {
      checks.push({
        name: 'version',
        status: 'info',
        ms: 0,
        detail: apiVersion
          ? `X-API-Version ${apiVersion} (sent 20151130)`
          : 'sent X-API-Version 20151130, accepted (the service echoes none)',
      });
      const skew = serverDate ? Date.parse(serverDate) - Date.now() : Number.NaN;
      const large = Math.abs(skew) > 60_000;
      checks.push({
        name: 'clock',
        status: Number.isNaN(skew) ? 'skip' : large ? 'fail' : 'ok',
        ms: 0,
        detail: Number.isNaN(skew)
          ? 'no Date header'
          : `skew ${Math.round(skew / 1000)} s from the service's Date`,
        ...(large ? { fix: 'set the clock (NTP): tokens and certificates are checked against it' } : {}),
      });
    }

    const ok = checks.every((c) => c.status !== 'fail');
    if (flag(v, 'json')) printJson(ctx.io.stdout, { ok, checks });
    else {
      for (const c of checks) {
        const mark = { ok: 'ok  ', fail: 'FAIL', skip: 'skip', info: 'info' }[c.status];
        const time = c.status === 'ok' || c.status === 'fail' ? ` (${c.ms} ms)` : '';
        ctx.io.stdout.write(
          `${mark} ${c.name.padEnd(8)} ${c.detail}${time}${c.fix ? `\n     fix: ${c.fix}` : ''}\n`,
        );
      }
    }
    return ok ? ExitCode.ok : ExitCode.service;
  },
};

function skipped(name: string): Check {
  return { name, status: 'skip', ms: 0, detail: 'skipped: an earlier check failed' };
}

/** The CLI's own hint for a library error (the one its error line ends with). */
function fixOf(err: DqsError, baseUrl: string): string {
  if (err.code === 'DQS_NOT_SERVICE') {
    return `${baseUrl} answers, but not as the service: check --base-url or DQS_BASE_URL (a path prefix such as /api?)`;
  }
  const hint = hintFor(err, { command: 'doctor', baseUrl, secrets: [] });
  // Connection faults say their fix in the message; their hint only points here.
  return hint && !hint.includes('dqs doctor') ? hint : 'see the message';
}
