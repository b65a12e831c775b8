/**
 * Connection failures in our words, not OpenSSL's or undici's: a self-signed certificate, https:// to a
 * plain http port, http:// to a TLS port. They printed `DEPTH_ZERO_SELF_SIGNED_CERT: self-signed
 * certificate`, a raw `ssl3_get_record:wrong version number` line, and `UND_ERR_SOCKET: other side
 * closed`. A throwaway certificate for 127.0.0.1 is made with `openssl` (skipped without it).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../src/cli/exit-codes.js';
import { ensureBuilt, finishCli, startCli } from './cli-helpers.js';

// Made while the file is collected, so that a machine without openssl skips the tests by name.
const work = mkdtempSync(join(tmpdir(), 'dqs-tls-'));
const made = makeCertificate();
let servers: Server[] = [];
let httpsUrl = '';
let httpUrl = '';

function makeCertificate(): boolean {
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1']
        .concat(['-addext', 'subjectAltName=IP:127.0.0.1'])
        .concat(['-keyout', join(work, 'key.pem'), '-out', join(work, 'cert.pem')]),
      { stdio: 'ignore' },
    );
    return true;
  } catch {
    return false;
  }
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `127.0.0.1:${(server.address() as { port: number }).port}`;
}

beforeAll(async () => {
  ensureBuilt();
  if (!made) return;
  const [key, cert] = await Promise.all([readFile(join(work, 'key.pem')), readFile(join(work, 'cert.pem'))]);
  httpsUrl = await listen(createHttpsServer({ key, cert }, (_q, r) => r.end('[]')));
  httpUrl = await listen(createHttpServer((_q, r) => r.end('[]')));
}, 60_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  servers = [];
  await rm(work, { recursive: true, force: true });
});

function datasets(url: string) {
  return finishCli(
    startCli(['datasets', '--base-url', url, '--api-key', 'k', '--timeout', '5'], { cwd: work }),
  );
}

describe.skipIf(!made)('TLS and protocol mix-ups: one true line, exit 5 (skipped without openssl)', () => {
  it.each([
    [
      'a self-signed certificate',
      () => `https://${httpsUrl}`,
      // The library's ConnectionError (DQS_TLS_UNTRUSTED) names the issuer and the ways to pass a CA.
      /failed: the certificate of 127\.0\.0\.1:\d+ \(issued by 127\.0\.0\.1\) is not trusted \(DEPTH_ZERO_SELF_SIGNED_CERT\).* --ca-file PATH, or NODE_EXTRA_CA_CERTS=PATH/,
    ],
    [
      'https:// to a plain http port',
      () => `https://${httpUrl}`,
      /failed: the address says https:\/\/, but the server did not answer in TLS \(ERR_SSL_WRONG_VERSION_NUMBER\)\. Is it a plain http:\/\/ address\?/,
    ],
    [
      'http:// to a TLS port',
      () => `http://${httpsUrl}`,
      /failed: the server closed the connection without an answer \(UND_ERR_SOCKET\)\. If it speaks https, the address must start with https:\/\//,
    ],
  ])('%s', async (_what, url, message) => {
    const r = await datasets(url());
    expect(r.code, r.stderr).toBe(ExitCode.service);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/ssl3_get_record|openssl|other side closed/);
  });
});
