/**
 * A throwaway PKI for TLS tests, made with `openssl` in a temp dir: a root CA named like a TLS-inspecting
 * proxy's, a server certificate it signed for localhost / 127.0.0.1, and one for another name.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestPki {
  readonly dir: string;
  /** The root CA's certificate (PEM) and its path. */
  readonly ca: string;
  readonly caFile: string;
  /** Certificate and key for localhost and 127.0.0.1. */
  readonly server: { readonly cert: string; readonly key: string };
  /** Certificate and key for other.example only (a name mismatch on 127.0.0.1). */
  readonly otherName: { readonly cert: string; readonly key: string };
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

function serverCert(dir: string, name: string, altNames: string): { cert: string; key: string } {
  openssl(dir, [
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    `/CN=${name}`,
  ]);
  writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${altNames}\n`);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
  ]);
  return {
    cert: readFileSync(join(dir, `${name}.pem`), 'utf8'),
    key: readFileSync(join(dir, `${name}.key`), 'utf8'),
  };
}

export function makePki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'dqs-pki-'));
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/O=Acme Corp/CN=Acme Corp TLS Inspection Root CA',
  ]);
  const caFile = join(dir, 'ca.pem');
  return {
    dir,
    ca: readFileSync(caFile, 'utf8'),
    caFile,
    server: serverCert(dir, 'localhost', 'DNS:localhost,IP:127.0.0.1'),
    otherName: serverCert(dir, 'other.example', 'DNS:other.example'),
  };
}
